// SPDX-License-Identifier: Apache-2.0
// Lookups of a per-enumerator value (a name, a size) in a table indexed by the enumerator, for
// enums numbered 0, 1, 2, ... Each table lists every enumerator up to the last one, in order;
// a table of another length does not compile.
#pragma once

#include <cstddef>
#include <type_traits>

namespace gcompute::kernels {

/// Number of enumerators of an enum numbered 0..last.
template <auto Last>
inline constexpr std::size_t kEnumCount =
    static_cast<std::size_t>(static_cast<std::underlying_type_t<decltype(Last)>>(Last)) + 1;

/// The entry of `table` for `value`; `fallback` for a value outside the enum (an unchecked
/// cast from an integer).
template <auto Last, typename T, std::size_t N>
constexpr T enum_lookup(decltype(Last) value, const T (&table)[N], T fallback) {
  static_assert(std::is_enum_v<decltype(Last)>);
  static_assert(N == kEnumCount<Last>, "the table needs one entry per enumerator");
  const auto index =
      static_cast<std::size_t>(static_cast<std::underlying_type_t<decltype(Last)>>(value));
  return index < N ? table[index] : fallback;
}

/// enum_lookup for names, "?" outside the enum.
template <auto Last, std::size_t N>
constexpr const char* enum_name(decltype(Last) value, const char* const (&names)[N]) {
  return enum_lookup<Last>(value, names, static_cast<const char*>("?"));
}

}  // namespace gcompute::kernels
