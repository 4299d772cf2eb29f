// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/matmul_types.hpp"

namespace gcompute::kernels::cuda {

/// C = alpha * op(A) * op(B) + beta * C through cuBLAS on ctx.stream (ctx.cublas required).
/// Row-major operands are handled by computing C^T = op(B)^T * op(A)^T in cuBLAS's
/// column-major view: no transposes are materialised. Asynchronous.
absl::Status matmul(const Context& ctx, const void* a, const void* b, void* c,
                    const MatmulShape& shape);

}  // namespace gcompute::kernels::cuda
