// SPDX-License-Identifier: Apache-2.0
#include "gcompute/client/host_matrix.hpp"

#include "gcompute/kernels/enum_table.hpp"

namespace gcompute::client {
namespace {

// Indexed by DType's value (gcompute.v1.DType's), kUnspecified first.
constexpr std::size_t kSizes[] = {0, 4, 8, 2, 2, 4};
constexpr const char* kNames[] = {"unspecified", "f32", "f64", "f16", "bf16", "i32"};

}  // namespace

std::size_t dtype_size(DType dtype) {
  return kernels::enum_lookup<DType::kI32>(dtype, kSizes, std::size_t{0});
}

const char* dtype_name(DType dtype) {
  return kernels::enum_lookup<DType::kI32>(dtype, kNames, kNames[0]);
}

}  // namespace gcompute::client
