// SPDX-License-Identifier: Apache-2.0
// Protobuf's base-128 varints and field tags, for the messages coded by hand in wire/.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gcompute::wire {

/// Wire type 2: a length-delimited field (bytes, string, submessage).
constexpr std::uint32_t kLengthDelimited = 2;

constexpr std::uint32_t field_tag(std::uint32_t field_number, std::uint32_t wire_type) {
  return (field_number << 3) | wire_type;
}

constexpr std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// Writes `v` at `p`; returns the byte after it.
inline char* put_varint(char* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

}  // namespace gcompute::wire
