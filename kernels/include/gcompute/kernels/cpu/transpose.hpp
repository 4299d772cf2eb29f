// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "gcompute/kernels/stop_token.hpp"
#include "gcompute/kernels/transpose_types.hpp"

namespace gcompute::kernels::cpu {

/// Cache-blocked transpose of host memory. `in` and `out` must not overlap. `stop` is polled
/// between batch entries and between bands of tiles; CANCELLED when it fired.
absl::Status transpose(const void* in, void* out, const TransposeShape& shape, StopToken stop = {});

}  // namespace gcompute::kernels::cpu
