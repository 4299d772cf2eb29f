// SPDX-License-Identifier: Apache-2.0
#include "gcompute/client/host_matrix.hpp"

namespace gcompute::client {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
      return 8;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kUnspecified:
      break;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
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
    case DType::kUnspecified:
      break;
  }
  return "unspecified";
}

}  // namespace gcompute::client
