// SPDX-License-Identifier: Apache-2.0
// The f16 / bf16 / tf32 conversions in gcompute/kernels/half.hpp, checked against the
// compiler's _Float16 (libgcc soft-float, round to nearest even) and against a rounding
// oracle built from frexp / nearbyint in double.
#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gcompute/kernels/half.hpp"
#include "support/random.hpp"

namespace gcompute::kernels {
namespace {

// x rounded to `bits` significant bits (nearest, ties to even), with a quantum no finer than
// 2^min_exp; done in double, where every step is exact.
double round_significand(double x, int bits, int min_exp) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // x = f * 2^e, 0.5 <= |f| < 1
  const int quantum = std::max(e - bits, min_exp);
  return std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
}

float oracle_bf16(float x) {
  const double r = round_significand(x, 8, -133);  // bf16 subnormal quantum 2^-133
  if (std::fabs(r) > std::numeric_limits<float>::max()) return std::copysign(INFINITY, x);
  return static_cast<float>(r);
}
float oracle_tf32(float x) {
  const double r = round_significand(x, 11, -136);  // tf32 subnormal quantum 2^-136
  if (std::fabs(r) > std::numeric_limits<float>::max()) return std::copysign(INFINITY, x);
  return static_cast<float>(r);
}

float random_float_any_exponent(::gcompute::testing::Rng& rng) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(rng.engine()()));
}

TEST(Half, F16DecodeAllPatterns) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float want = static_cast<float>(std::bit_cast<_Float16>(bits));
    const float got = f16_bits_to_float(bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << h;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want))
          << std::hex << h;
    }
  }
}

TEST(Half, F16EncodeRoundTripsAndTies) {
  // Every finite half, and every midpoint between neighbours (ties go to even) plus the
  // floats just either side of each midpoint.
  for (std::uint32_t h = 0; h < 0x7c00u; ++h) {
    for (const std::uint32_t sign : {0u, 0x8000u}) {
      const auto bits = static_cast<std::uint16_t>(h | sign);
      const float v = f16_bits_to_float(bits);
      ASSERT_EQ(float_to_f16_bits(v), bits) << std::hex << h;
      const double next =
          static_cast<double>(f16_bits_to_float(static_cast<std::uint16_t>(bits + 1)));
      const auto mid = static_cast<float>((static_cast<double>(v) + next) / 2);  // exact in f32
      for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 2 * mid)}) {
        const auto want = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
        ASSERT_EQ(float_to_f16_bits(x), want) << "x=" << x << " h=" << std::hex << h;
      }
    }
  }
}

TEST(Half, F16EncodeRandomAndSpecial) {
  GC_SEEDED_RNG(rng);
  for (int i = 0; i < 2000000; ++i) {
    float x = random_float_any_exponent(rng);
    if (i % 2 == 0)
      x = std::ldexp(static_cast<float>(rng.uniform(-1, 1)),
                     static_cast<int>(rng.uniform_int(-30, 17)));
    const std::uint16_t got = float_to_f16_bits(x);
    const auto want = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(f16_bits_to_float(got))) << x;
      ASSERT_EQ(got & 0x8000u, want & 0x8000u);
      ASSERT_NE(got & 0x0200u, 0u) << "NaN not quiet";
    } else {
      ASSERT_EQ(got, want) << "x=" << x << " bits=" << std::hex << std::bit_cast<std::uint32_t>(x);
    }
  }
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bffu);
  EXPECT_EQ(float_to_f16_bits(65519.99f), 0x7bffu);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00u);
  EXPECT_EQ(float_to_f16_bits(-INFINITY), 0xfc00u);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001u);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000u);  // tie to even (zero)
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.5f, -25)), 0x0001u);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000u);
  EXPECT_TRUE(std::isnan(round_to_f16(NAN)));
}

TEST(Half, Bf16AndTf32AgainstRoundingOracle) {
  GC_SEEDED_RNG(rng);
  for (int i = 0; i < 2000000; ++i) {
    float x = random_float_any_exponent(rng);
    if (i % 3 == 0) {  // force exact ties: a value with the bit just below the kept ones set
      const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
      x = std::bit_cast<float>(i % 2 ? (u & ~0xffffu) | 0x8000u : (u & ~0x1fffu) | 0x1000u);
    }
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(round_to_bf16(x)));
      ASSERT_TRUE(std::isnan(round_to_tf32(x)));
      ASSERT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(x))));
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(round_to_bf16(x)),
              std::bit_cast<std::uint32_t>(oracle_bf16(x)))
        << "x=" << x << " bits=" << std::hex << std::bit_cast<std::uint32_t>(x);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(round_to_tf32(x)),
              std::bit_cast<std::uint32_t>(oracle_tf32(x)))
        << "x=" << x << " bits=" << std::hex << std::bit_cast<std::uint32_t>(x);
    ASSERT_EQ(bf16_bits_to_float(float_to_bf16_bits(x)), round_to_bf16(x));
  }
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), INFINITY);
  EXPECT_EQ(round_to_tf32(-std::numeric_limits<float>::max()), -INFINITY);
  EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);  // tie to even
  EXPECT_EQ(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(float_to_bf16_bits(-INFINITY), 0xff80u);
  EXPECT_EQ(round_to_tf32(INFINITY), INFINITY);
}

}  // namespace
}  // namespace gcompute::kernels
