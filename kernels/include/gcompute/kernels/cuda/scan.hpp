// SPDX-License-Identifier: Apache-2.0
// Value checks (scan_types.hpp) over device memory, so that a matrix already on the GPU is
// checked where it lives instead of being copied back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/dtype.hpp"
#include "gcompute/kernels/scan_types.hpp"

namespace gcompute::kernels::cuda {

/// Device scratch first_violation needs.
constexpr std::size_t kScanWorkspaceBytes = 16;

/// cpu::first_violation over `count` elements of `dtype` in device memory `data`: the lowest
/// failing index and its value. `workspace` is device memory of kScanWorkspaceBytes. Runs on
/// ctx.stream and has finished when it returns.
absl::StatusOr<ScanResult> first_violation(const Context& ctx, const void* data,
                                           std::uint64_t count, DType dtype, ValueCheck check,
                                           void* workspace);

}  // namespace gcompute::kernels::cuda
