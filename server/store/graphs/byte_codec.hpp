// SPDX-License-Identifier: Apache-2.0
// Little-endian fixed-width integers: the one encoding of them in the store's files (log
// record frames, snapshot headers and trailers, and codec::Writer/Reader's fixed fields).
// Byte by byte, so the result does not depend on the host's byte order or alignment.
#pragma once

#include <concepts>
#include <cstddef>
#include <string>

namespace gcompute::server::codec {

/// Appends the sizeof(U) little-endian bytes of `v` to `out`.
template <std::unsigned_integral U>
void put_le(std::string& out, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

/// Overwrites the sizeof(U) bytes at `p` with the little-endian bytes of `v`.
template <std::unsigned_integral U>
void store_le(char* p, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) p[i] = static_cast<char>(v >> (8 * i));
}

/// The value of the sizeof(U) little-endian bytes at `p` (the caller checks they exist).
template <std::unsigned_integral U>
U load_le(const char* p) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) v |= U{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

}  // namespace gcompute::server::codec
