// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/svd_types.hpp"

namespace gcompute::kernels::cuda {

/// Device scratch memory svd_jacobi needs for this shape and tuning (0 for an invalid one).
/// Pass svd_jacobi the same tuning.
std::size_t svd_workspace_bytes(const SvdShape& shape, const SvdTuning& tuning = {});

/// One-sided Jacobi SVD on the GPU; same outputs as cpu::svd. a, s, u, vt and
/// workspace are device pointers; `a` is not modified; nothing is allocated. Synchronises
/// ctx.stream between sweeps (to test convergence and `stop`), and has finished when it
/// returns. The blocked driver (min(m, n) > 64, or too large for shared memory) needs
/// ctx.cublas. INVALID_ARGUMENT for an invalid shape or tuning, or a workspace smaller than
/// svd_workspace_bytes(shape, tuning).
absl::StatusOr<SvdInfo> svd_jacobi(const Context& ctx, const void* a, void* s, void* u, void* vt,
                                   const SvdShape& shape, void* workspace,
                                   std::size_t workspace_bytes, StopToken stop = {},
                                   const SvdTuning& tuning = {});

}  // namespace gcompute::kernels::cuda
