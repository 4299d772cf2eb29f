// SPDX-License-Identifier: Apache-2.0
// Names that clients sent (ids, refs), as error messages show them: quoted, escaped and cut
// short, because they may be hostile (a megabyte of bytes, NULs, terminal escapes).
#pragma once

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gcompute::server {

/// "\"abc\"", or "\"<first 64 characters, escaped>\"... (9000 characters)".
inline std::string quote_id(const std::string& id) {
  constexpr std::size_t kShown = 64;
  if (id.size() <= kShown) return absl::StrCat("\"", absl::CHexEscape(id), "\"");
  return absl::StrCat("\"", absl::CHexEscape(id.substr(0, kShown)), "\"... (", id.size(),
                      " characters)");
}

}  // namespace gcompute::server
