// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/eigh_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cuda {

/// Largest n that eigh solves with its own batched Jacobi kernel; larger matrices go through
/// cuSOLVER's syevd one matrix at a time.
inline constexpr std::int64_t kEighJacobiMaxN = 32;

/// Device scratch memory eigh needs for this shape (0 for an empty batch or n = 0).
/// INVALID_ARGUMENT for an invalid shape; for n > kEighJacobiMaxN the size comes from cuSOLVER,
/// so ctx.cusolver must be set (FAILED_PRECONDITION otherwise).
absl::StatusOr<std::size_t> eigh_workspace_bytes(const Context& ctx, const EighShape& shape);

/// Symmetric eigendecomposition on the GPU, with the outputs of cpu::eigh (eigh_types.hpp):
/// w ascending, V row-major with the eigenvectors as columns; only the lower triangle of each
/// matrix is read. a, w, v and workspace are device pointers; `a` is not modified; nothing on
/// the device is allocated. The input is not checked for symmetry or finiteness (callers run
/// check_symmetric and the finiteness scan first). n <= kEighJacobiMaxN: a parallel Jacobi kernel,
/// one group of lanes per matrix in registers; larger n: cusolverDnXsyevd per matrix
/// (needs ctx.cusolver). `stop` is polled between launches and matrices. Has finished when it
/// returns. INVALID_ARGUMENT for an invalid shape, a null pointer, or a workspace smaller than
/// eigh_workspace_bytes(ctx, shape). converged is false when a Jacobi matrix was still rotating
/// after its sweep limit or syevd reported info > 0; the outputs are written all the same.
absl::StatusOr<EighInfo> eigh(const Context& ctx, const void* a, void* w, void* v,
                              const EighShape& shape, void* workspace, std::size_t workspace_bytes,
                              StopToken stop = {});

}  // namespace gcompute::kernels::cuda
