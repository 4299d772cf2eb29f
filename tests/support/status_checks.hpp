// SPDX-License-Identifier: Apache-2.0
// Checks of a kernel's refusals: the status code with a part of the message, and argument
// checks one mistake at a time (each change of a valid shape must be refused).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gcompute::testing {

/// `status` has `code` and its message contains `part`.
inline void expect_status(const absl::Status& status, absl::StatusCode code,
                          absl::string_view part) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_NE(status.message().find(part), absl::string_view::npos) << status;
}

/// For each of `changes`, `call` on a copy of the valid `shape` so changed must return
/// INVALID_ARGUMENT.
template <typename Shape, typename Call>
void expect_each_change_invalid(
    const Shape& shape,
    std::initializer_list<std::function<void(std::type_identity_t<Shape>&)>> changes, Call call) {
  int index = 0;
  for (const auto& change : changes) {
    Shape bad = shape;
    change(bad);
    const absl::Status status = call(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << "change " << index << ": " << status;
    ++index;
  }
}

}  // namespace gcompute::testing
