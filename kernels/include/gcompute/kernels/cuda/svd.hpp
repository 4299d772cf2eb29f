// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::kernels::cuda {

/// Device scratch memory svd_jacobi needs for this shape.
std::size_t svd_workspace_bytes(const SvdShape& shape);

/// One-sided Jacobi SVD on the GPU; same contract as cpu::svd_jacobi. a, s, u, vt and
/// workspace are device pointers; `a` is not modified. Synchronises ctx.stream between
/// sweeps (to test convergence and `stop`), and has finished when it returns.
absl::StatusOr<SvdInfo> svd_jacobi(const Context& ctx, const void* a, void* s, void* u, void* vt,
                                   const SvdShape& shape, void* workspace,
                                   std::size_t workspace_bytes, StopToken stop = {});

}  // namespace gcompute::kernels::cuda
