// SPDX-License-Identifier: Apache-2.0
// The JSON-lines edit files of `gcompute graph edit`: one JSON object per line naming one
// edit, e.g. {"add_edge":{"tails":[0],"heads":[1],"weight":2.5}}. A minimal JSON reader
// (RFC 8259 values; no JSON library ships with the toolchain) and the mapping to edits.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gcompute/client/host_matrix.hpp"

namespace gcompute::cli {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  std::string text;  ///< a string's value, or a number's literal text (for exact integers)
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  ///< in file order
};

/// Parses one JSON value (surrounding whitespace allowed); errors give the column.
absl::StatusOr<JsonValue> parse_json(const std::string& text);

/// Parses a JSON-lines edit file; blank lines are skipped; errors name `name` and the line.
absl::StatusOr<std::vector<client::GraphEdit>> parse_edits_jsonl(const std::string& text,
                                                                 const std::string& name);

}  // namespace gcompute::cli
