// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/transpose_types.hpp"

namespace gcompute::kernels::cuda {

/// Tiled, coalesced transpose of device memory on ctx.stream (asynchronous; the status covers
/// validation and the launch). `in` and `out` are device pointers and must not overlap.
absl::Status transpose(const Context& ctx, const void* in, void* out, const TransposeShape& shape);

}  // namespace gcompute::kernels::cuda
