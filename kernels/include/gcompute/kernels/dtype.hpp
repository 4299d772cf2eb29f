// SPDX-License-Identifier: Apache-2.0
// Element types shared by every operation, on every backend.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gcompute::kernels {

/// Element type of a matrix. Data is always little-endian, row-major, unpadded.
enum class DType : std::uint8_t { kF32, kF64, kF16, kBF16, kI32 };

/// Bytes per element.
constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF64:
      return 8;
    case DType::kF16:
      return 2;
    case DType::kBF16:
      return 2;
    case DType::kI32:
      return 4;
  }
  return 0;
}

/// Lower-case name as used in messages and on the command line ("f32", "bf16", ...).
constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
  }
  return "?";
}

}  // namespace gcompute::kernels
