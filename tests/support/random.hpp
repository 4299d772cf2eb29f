// SPDX-License-Identifier: Apache-2.0
// Seeded random inputs and output poisoning for tests. Every test draws a fresh seed (or
// GCOMPUTE_TEST_SEED when set, to replay a failure); GC_SEEDED_RNG prints it on failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/seed.hpp"

namespace gcompute::testing {

/// A std::mt19937_64 that remembers its seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : seed_(seed), engine_(seed) {}
  std::uint64_t seed() const { return seed_; }
  std::mt19937_64& engine() { return engine_; }

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine_);
  }
  double normal() { return std::normal_distribution<double>(0.0, 1.0)(engine_); }
  /// Uniform integer in [lo, hi].
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine_);
  }
  bool bernoulli(double p) { return std::bernoulli_distribution(p)(engine_); }

 private:
  std::uint64_t seed_;
  std::mt19937_64 engine_;
};

/// `count` values uniform in [lo, hi), converted to T.
template <typename T>
std::vector<T> random_uniform(Rng& rng, std::size_t count, double lo = -1.0, double hi = 1.0) {
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(rng.uniform(lo, hi));
  return v;
}

/// `count` standard normal values, converted to T.
template <typename T>
std::vector<T> random_normal(Rng& rng, std::size_t count) {
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(rng.normal());
  return v;
}

/// `count` random bytes (for byte-moving operations).
inline std::vector<unsigned char> random_bytes(Rng& rng, std::size_t count) {
  std::vector<unsigned char> v(count);
  for (auto& b : v) b = static_cast<unsigned char>(rng.engine()() & 0xffu);
  return v;
}

/// Fills with 0xFF bytes: NaN for floating point, -1 for integers. An output that is not
/// fully written shows up as NaN or -1.
template <typename T>
void poison(std::vector<T>& v) {
  if (!v.empty()) std::memset(static_cast<void*>(v.data()), 0xff, v.size() * sizeof(T));
}

/// A vector of `count` poisoned elements.
template <typename T>
std::vector<T> poisoned(std::size_t count) {
  std::vector<T> v(count);
  poison(v);
  return v;
}

/// The trace that names a test's seed in its failure messages, and how to replay it.
inline std::string seed_trace(std::uint64_t seed) {
  return "seed " + std::to_string(seed) +
         " (replay with GCOMPUTE_TEST_SEED=" + std::to_string(seed) + ")";
}

}  // namespace gcompute::testing

/// Declares `Rng name` seeded by test_seed() and traces the seed into every failure message.
#define GC_SEEDED_RNG(name)                                        \
  ::gcompute::testing::Rng name(::gcompute::testing::test_seed()); \
  SCOPED_TRACE(::gcompute::testing::seed_trace(name.seed()))
