// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/matmul_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cuda {

/// Multiply-adds of one panel by default for f64 and strict f32 (about 10 ms on an H100); eight
/// times as many for the tensor-core precisions (TF32, BF16, F16 and the 16-bit dtypes).
inline constexpr double kMatmulPanelMultiplyAdds = 2.5e11;

/// C = alpha * op(A) * op(B) + beta * C through cuBLAS on ctx.stream (ctx.cublas required).
/// Row-major operands are handled by computing C^T = op(B)^T * op(A)^T in cuBLAS's
/// column-major view: no transposes are materialised. Asynchronous, except that a product of
/// more than two panels runs as panels (groups of the batch, or bands of C's rows) and polls
/// `stop` between them, with at most two panels queued: a cancel returns CANCELLED within
/// about two panels of work, after the stream has drained. `panel_multiply_adds` = 0 takes the
/// default above; tests set small panels to exercise them.
absl::Status matmul(const Context& ctx, const void* a, const void* b, void* c,
                    const MatmulShape& shape, StopToken stop = {}, double panel_multiply_adds = 0);

}  // namespace gcompute::kernels::cuda
