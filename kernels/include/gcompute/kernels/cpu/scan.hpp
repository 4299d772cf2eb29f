// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "gcompute/kernels/dtype.hpp"
#include "gcompute/kernels/scan_types.hpp"

namespace gcompute::kernels::cpu {

/// The first of `count` elements of `dtype` at `data` that fails `check`, if any.
ScanResult first_violation(const void* data, std::uint64_t count, DType dtype, ValueCheck check);

}  // namespace gcompute::kernels::cpu
