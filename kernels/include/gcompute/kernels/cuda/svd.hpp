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

/// Device scratch memory svd_polar needs for this shape (0 for an empty one); asks cuSOLVER,
/// so it needs ctx.cusolver (FAILED_PRECONDITION without) and returns its errors.
absl::StatusOr<std::size_t> svd_polar_workspace_bytes(const Context& ctx, const SvdShape& shape);

/// SVD through the polar decomposition on the GPU (SvdMethod::kPolar): QDWH from cuSOLVER and
/// cuBLAS calls, then cuSOLVER's syevd on H; same outputs and contract as cpu::svd's kPolar.
/// Device pointers as svd_jacobi; `a` is not modified; nothing is allocated on the device.
/// Needs ctx.cublas and ctx.cusolver (bound to ctx.stream; left in host pointer mode and the
/// default math mode). Synchronises ctx.stream once per QDWH iteration, where it polls `stop`
/// (CANCELLED), and has finished when it returns. info.sweeps counts QDWH iterations. Of
/// `tuning` only profile applies.
/// INVALID_ARGUMENT for an invalid shape, m or n above 2^30, or a workspace smaller than
/// svd_polar_workspace_bytes(ctx, shape).
absl::StatusOr<SvdInfo> svd_polar(const Context& ctx, const void* a, void* s, void* u, void* vt,
                                  const SvdShape& shape, void* workspace,
                                  std::size_t workspace_bytes, StopToken stop = {},
                                  const SvdTuning& tuning = {});

}  // namespace gcompute::kernels::cuda
