// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "gcompute/kernels/matmul_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cpu {

/// C = alpha * op(A) * op(B) + beta * C on the host through OpenBLAS. Reduced precisions
/// (tf32, bf16, f16) are emulated by rounding the inputs, so results match what a GPU's
/// matrix units compute up to accumulation order. Large products run in panels of rows of C;
/// `stop` is polled between panels (about 50 ms of one core apart), CANCELLED when it fired.
absl::Status matmul(const void* a, const void* b, void* c, const MatmulShape& shape,
                    StopToken stop = {});

}  // namespace gcompute::kernels::cpu
