// SPDX-License-Identifier: Apache-2.0
// A one-to-one map between a server enum and its protobuf enum: the one list that decoding
// and encoding both read, and that messages name the accepted wire values from.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/generated_enum_reflection.h>

#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace gcompute::server {

template <typename Domain, typename Wire, std::size_t N>
class EnumMap {
 public:
  using Pair = std::pair<Domain, Wire>;
  constexpr explicit EnumMap(const Pair (&pairs)[N]) {
    for (std::size_t i = 0; i < N; ++i) pairs_[i] = pairs[i];
  }

  /// Empty for a wire value the list lacks.
  constexpr std::optional<Domain> decode(Wire wire) const {
    for (const Pair& p : pairs_) {
      if (p.second == wire) return p.first;
    }
    return std::nullopt;
  }

  /// `absent` for a domain value the list lacks.
  constexpr Wire encode(Domain value, Wire absent) const {
    for (const Pair& p : pairs_) {
      if (p.first == value) return p.second;
    }
    return absent;
  }

  /// Whether every domain value from 0 through `last` is listed (for a static_assert).
  constexpr bool covers_through(Domain last) const {
    using U = std::underlying_type_t<Domain>;
    for (U v = 0; v <= static_cast<U>(last); ++v) {
      bool listed = false;
      for (const Pair& p : pairs_) listed = listed || p.first == static_cast<Domain>(v);
      if (!listed) return false;
    }
    return true;
  }

  /// The wire values' names in list order, for messages: "A, B or C".
  std::string wire_names() const {
    const google::protobuf::EnumDescriptor* descriptor =
        google::protobuf::GetEnumDescriptor<Wire>();
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? " or " : ", ";
      out += descriptor->FindValueByNumber(pairs_[i].second)->name();
    }
    return out;
  }

 private:
  Pair pairs_[N] = {};
};

/// enum_map<Domain, Wire>({{d, w}, ...}): the length comes from the list.
template <typename Domain, typename Wire, std::size_t N>
constexpr EnumMap<Domain, Wire, N> enum_map(const std::pair<Domain, Wire> (&pairs)[N]) {
  return EnumMap<Domain, Wire, N>(pairs);
}

}  // namespace gcompute::server
