// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "gcompute/kernels/transpose_types.hpp"

namespace gcompute::kernels::cpu {

/// Cache-blocked transpose of host memory. `in` and `out` must not overlap.
absl::Status transpose(const void* in, void* out, const TransposeShape& shape);

}  // namespace gcompute::kernels::cpu
