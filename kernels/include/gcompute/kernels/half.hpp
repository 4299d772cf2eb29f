// SPDX-License-Identifier: Apache-2.0
// Host conversions between f32 and the 16-bit formats (IEEE binary16 and bfloat16), and the
// input roundings used to emulate reduced-precision matrix units (tf32, bf16, f16).
// Every narrowing conversion rounds to nearest, ties to even; overflow gives +-inf, NaN stays
// a (quiet) NaN of the same sign, subnormals are produced and read exactly.
#pragma once

#include <bit>
#include <cstdint>

namespace gcompute::kernels {

/// IEEE binary16 bits of `f`, rounded to nearest even (|f| >= 65520 gives inf).
constexpr std::uint16_t float_to_f16_bits(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN; a NaN keeps its top payload bits and becomes quiet
    if (abs == 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  const std::uint32_t exp = abs >> 23;
  if (abs < 0x38800000u) {       // below the smallest normal half (2^-14): subnormal half or zero
    if (exp < 102) return sign;  // below 2^-25 (half of the smallest subnormal): rounds to 0
    // value = mant * 2^(exp - 150); in units of 2^-24 that is mant >> (126 - exp).
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exp;  // 14..24
    std::uint32_t r = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t h = ((exp - 112) << 10) | ((abs >> 13) & 0x3ffu);
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry bumps the exponent
  return static_cast<std::uint16_t>(sign | h);
}

/// The f32 value of IEEE binary16 bits (exact).
constexpr float f16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in f32
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

/// bfloat16 bits of `f`, rounded to nearest even.
constexpr std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// The f32 value of bfloat16 bits (exact).
constexpr float bf16_bits_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

/// `f` rounded to TensorFloat-32 (8-bit exponent, 10-bit mantissa), nearest even, kept in f32.
constexpr float round_to_tf32(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;  // inf and NaN unchanged
  return std::bit_cast<float>((u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu);
}

/// `f` rounded to bfloat16, kept in f32.
constexpr float round_to_bf16(float f) {
  return bf16_bits_to_float(float_to_bf16_bits(f));
}

/// `f` rounded to IEEE binary16, kept in f32.
constexpr float round_to_f16(float f) {
  return f16_bits_to_float(float_to_f16_bits(f));
}

}  // namespace gcompute::kernels
