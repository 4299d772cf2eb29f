// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "gcompute/kernels/matmul_types.hpp"

namespace gcompute::kernels::cpu {

/// C = alpha * op(A) * op(B) + beta * C on the host through OpenBLAS. Reduced precisions
/// (tf32, bf16, f16) are emulated by rounding the inputs, so results match what a GPU's
/// matrix units compute up to accumulation order.
absl::Status matmul(const void* a, const void* b, void* c, const MatmulShape& shape);

}  // namespace gcompute::kernels::cpu
