// SPDX-License-Identifier: Apache-2.0
// Tests parameterised over element types are named after the type ("f32", "f64").
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gcompute/kernels/dtype.hpp"
#include "support/random.hpp"

namespace gcompute::testing {

inline std::string dtype_param_name(const ::testing::TestParamInfo<kernels::DType>& info) {
  return kernels::dtype_name(info.param);
}

/// A test run once per floating-point element type (instantiate it with the types and
/// dtype_param_name): dtype_ is the type, rng_ a generator seeded by test_seed() whose seed
/// every failure message names.
class FloatTypeTest : public ::testing::TestWithParam<kernels::DType> {
 protected:
  const kernels::DType dtype_ = GetParam();
  Rng rng_{test_seed()};

 private:
  ::testing::ScopedTrace seed_trace_{__FILE__, __LINE__, seed_trace(rng_.seed())};
};

}  // namespace gcompute::testing
