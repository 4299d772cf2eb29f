// SPDX-License-Identifier: Apache-2.0
// GPU tests skip (GTEST_SKIP, reported by ctest as "Skipped") where no usable GPU exists.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace gcompute::testing {

/// Empty when a CUDA device is usable; otherwise the reason it is not.
std::string gpu_unavailable_reason();

}  // namespace gcompute::testing

#define GC_REQUIRE_GPU()                                                          \
  do {                                                                            \
    const std::string gc_reason_ = ::gcompute::testing::gpu_unavailable_reason(); \
    if (!gc_reason_.empty()) GTEST_SKIP() << "no usable GPU: " << gc_reason_;     \
  } while (0)
