// SPDX-License-Identifier: Apache-2.0
// The seed of a run's random inputs, for the tests (tests/support/random.hpp) and the GPU
// benchmarks: GCOMPUTE_TEST_SEED when set (to replay a run), otherwise a fresh random one.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>

namespace gcompute::testing {

/// GCOMPUTE_TEST_SEED from the environment if set, otherwise a fresh random seed.
inline std::uint64_t test_seed() {
  if (const char* env = std::getenv("GCOMPUTE_TEST_SEED"); env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 0);
  }
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace gcompute::testing
