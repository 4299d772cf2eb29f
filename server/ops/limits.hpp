// SPDX-License-Identifier: Apache-2.0
// Limits every request is validated against before anything is allocated.
#pragma once

#include <cstdint>

namespace gcompute::server {

struct Limits {
  std::uint64_t max_message_bytes = 256ull << 20;
  std::uint64_t max_matrix_elements = 1ull << 31;
  /// Room kept in a response for everything but result data when placing results inline.
  std::uint64_t response_overhead_bytes = 64ull << 10;
};

}  // namespace gcompute::server
