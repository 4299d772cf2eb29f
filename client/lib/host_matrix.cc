// SPDX-License-Identifier: Apache-2.0
#include "gcompute/client/host_matrix.hpp"

#include <array>

namespace gcompute::client {
namespace {

// Indexed by DType's value (gcompute.v1.DType's).
constexpr std::array<std::size_t, 6> kSizes{0, 4, 8, 2, 2, 4};
constexpr std::array<const char*, 6> kNames{"unspecified", "f32", "f64", "f16", "bf16", "i32"};
constexpr std::size_t kDTypes = static_cast<std::size_t>(DType::kI32) + 1;
static_assert(kSizes.size() == kDTypes && kNames.size() == kDTypes);

std::size_t index_of(DType dtype) {
  return static_cast<std::size_t>(dtype);
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  return index_of(dtype) < kDTypes ? kSizes[index_of(dtype)] : 0;
}

const char* dtype_name(DType dtype) {
  return index_of(dtype) < kDTypes ? kNames[index_of(dtype)] : "unspecified";
}

}  // namespace gcompute::client
