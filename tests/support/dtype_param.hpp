// SPDX-License-Identifier: Apache-2.0
// Tests parameterised over element types are named after the type ("f32", "f64").
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gcompute/kernels/dtype.hpp"

namespace gcompute::testing {

inline std::string dtype_param_name(const ::testing::TestParamInfo<kernels::DType>& info) {
  return kernels::dtype_name(info.param);
}

}  // namespace gcompute::testing
