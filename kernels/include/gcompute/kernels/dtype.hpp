// SPDX-License-Identifier: Apache-2.0
// Element types shared by every operation, on every backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gcompute/kernels/enum_table.hpp"

namespace gcompute::kernels {

/// Element type of a matrix. Data is always little-endian, row-major, unpadded.
enum class DType : std::uint8_t { kF32, kF64, kF16, kBF16, kI32 };

/// Bytes per element.
constexpr std::size_t dtype_size(DType t) {
  return enum_lookup<DType::kI32, std::size_t>(t, {4, 8, 2, 2, 4}, 0);
}

/// Lower-case name as used in messages and on the command line ("f32", "bf16", ...).
constexpr const char* dtype_name(DType t) {
  return enum_name<DType::kI32>(t, {"f32", "f64", "f16", "bf16", "i32"});
}

}  // namespace gcompute::kernels
