// SPDX-License-Identifier: Apache-2.0
#include "cli/edits.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <set>
#include <string_view>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gcompute::cli {
namespace {

using client::GraphEdit;

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}

  absl::StatusOr<JsonValue> parse_document() {
    JsonValue v;
    if (absl::Status st = value(v, 0); !st.ok()) return st;
    ws();
    if (pos_ != s_.size()) return error("unexpected text after the value");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;
  // The one-letter escapes of a string and the characters they stand for, position by position.
  static constexpr std::string_view kEscapeLetters = "\"\\/bfnrt";
  static constexpr std::string_view kEscapedChars = "\"\\/\b\f\n\r\t";
  static_assert(kEscapeLetters.size() == kEscapedChars.size());

  absl::Status error(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("column ", pos_ + 1, ": ", what));
  }
  void ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) == 0) {
      pos_ += w.size();
      return true;
    }
    return false;
  }

  absl::Status value(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return error("nesting too deep");
    ws();
    if (pos_ >= s_.size()) return error("unexpected end of input");
    const char c = s_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.kind = JsonValue::Kind::kString;
      return string(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    if (literal("true")) {
      out.kind = JsonValue::Kind::kBool;
      out.boolean = true;
      return absl::OkStatus();
    }
    if (literal("false")) {
      out.kind = JsonValue::Kind::kBool;
      return absl::OkStatus();
    }
    if (literal("null")) {
      out.kind = JsonValue::Kind::kNull;
      return absl::OkStatus();
    }
    return error(absl::StrCat("unexpected character '", std::string(1, c), "'"));
  }

  absl::Status object(JsonValue& out, int depth) {
    out.kind = JsonValue::Kind::kObject;
    return elements("}", [&]() -> absl::Status {
      ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return error("expected a quoted key");
      std::string key;
      if (absl::Status st = string(key); !st.ok()) return st;
      ws();
      if (!literal(":")) return error("expected ':'");
      JsonValue v;
      if (absl::Status st = value(v, depth + 1); !st.ok()) return st;
      out.object.emplace_back(std::move(key), std::move(v));
      return absl::OkStatus();
    });
  }

  absl::Status array(JsonValue& out, int depth) {
    out.kind = JsonValue::Kind::kArray;
    return elements("]", [&]() -> absl::Status {
      JsonValue v;
      if (absl::Status st = value(v, depth + 1); !st.ok()) return st;
      out.array.push_back(std::move(v));
      return absl::OkStatus();
    });
  }

  /// The comma-separated elements of an object or array, from its opening bracket (at pos_)
  /// through `close`; `element` parses one.
  template <typename Element>
  absl::Status elements(const char* close, Element element) {
    ++pos_;
    ws();
    if (literal(close)) return absl::OkStatus();
    while (true) {
      if (absl::Status st = element(); !st.ok()) return st;
      ws();
      if (literal(",")) continue;
      if (literal(close)) return absl::OkStatus();
      return error(absl::StrCat("expected ',' or '", close, "'"));
    }
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  absl::Status hex4(uint32_t& out) {
    if (pos_ + 4 > s_.size()) return error("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      out <<= 4;
      if (h >= '0' && h <= '9') {
        out |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        out |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        out |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return error("bad hex digit in \\u escape");
      }
    }
    return absl::OkStatus();
  }

  absl::Status string(std::string& out) {
    ++pos_;  // opening quote
    out.clear();
    while (true) {
      if (pos_ >= s_.size()) return error("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return absl::OkStatus();
      if (static_cast<unsigned char>(c) < 0x20) return error("control character in a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return error("unterminated escape");
      const char e = s_[pos_++];
      if (const std::size_t i = kEscapeLetters.find(e); i != std::string_view::npos) {
        out.push_back(kEscapedChars[i]);
        continue;
      }
      if (e != 'u') return error(absl::StrCat("bad escape '\\", std::string(1, e), "'"));
      uint32_t cp = 0;
      if (absl::Status st = hex4(cp); !st.ok()) return st;
      if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
        pos_ += 2;
        uint32_t low = 0;
        if (absl::Status st = hex4(low); !st.ok()) return st;
        if (low < 0xDC00 || low >= 0xE000) return error("bad surrogate pair");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      append_utf8(out, cp);
    }
  }

  absl::Status number(JsonValue& out) {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t before = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ > before;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return error("bad number");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) return error("bad number: digits expected after '.'");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return error("bad number: digits expected in the exponent");
    }
    out.kind = JsonValue::Kind::kNumber;
    out.text = s_.substr(start, pos_ - start);
    return absl::OkStatus();
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

const char* kind_name(JsonValue::Kind kind) {
  // By JsonValue::Kind, in declaration order.
  static constexpr const char* kNames[] = {"null",     "a boolean", "a number",
                                           "a string", "an array",  "an object"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(JsonValue::Kind::kObject) + 1);
  return kNames[static_cast<std::size_t>(kind)];
}

/// One field of an edit's JSON object: its key and the member of `Edit` it is read into.
template <typename Edit>
struct FieldSpec {
  const char* key;
  std::variant<uint64_t Edit::*, std::vector<uint64_t> Edit::*, double Edit::*> member;
  bool required = true;
};

// Reads the fields of one edit's object, refusing unknown and missing ones.
class Fields {
 public:
  Fields(const std::string& op, const JsonValue& object) : op_(op), object_(object) {}

  /// The edit whose fields are `specs`; any other key is refused before a value is read.
  template <typename Edit>
  absl::StatusOr<GraphEdit> read(std::initializer_list<FieldSpec<Edit>> specs) const {
    if (absl::Status st = check_known(specs); !st.ok()) return st;
    Edit edit;
    for (const FieldSpec<Edit>& spec : specs) {
      const JsonValue* v = find(spec.key);
      if (!v) {
        if (spec.required) return missing(spec.key);
        continue;
      }
      absl::Status st = std::visit(
          [&](auto member) { return read_value(*v, spec.key, edit.*member); }, spec.member);
      if (!st.ok()) return st;
    }
    return edit;
  }

 private:
  template <typename Edit>
  absl::Status check_known(std::initializer_list<FieldSpec<Edit>> specs) const {
    for (const auto& [key, value] : object_.object) {
      bool ok = false;
      for (const FieldSpec<Edit>& spec : specs) ok = ok || key == spec.key;
      if (!ok)
        return absl::InvalidArgumentError(absl::StrCat(op_, ": unknown field \"", key, "\""));
    }
    std::set<std::string> seen;
    for (const auto& kv : object_.object) {
      if (!seen.insert(kv.first).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(op_, ": field \"", kv.first, "\" given twice"));
      }
    }
    return absl::OkStatus();
  }

  const JsonValue* find(const char* key) const {
    for (const auto& [k, v] : object_.object) {
      if (k == key) return &v;
    }
    return nullptr;
  }

  absl::Status read_value(const JsonValue& v, const char* key, uint64_t& out) const {
    if (v.kind != JsonValue::Kind::kNumber) return wrong(key, "a non-negative integer id", v);
    const char* end = v.text.data() + v.text.size();
    auto [p, ec] = std::from_chars(v.text.data(), end, out);
    if (ec != std::errc() || p != end) {
      return absl::InvalidArgumentError(
          absl::StrCat(op_, ": \"", key, "\" = ", v.text, " is not a non-negative integer id"));
    }
    return absl::OkStatus();
  }

  absl::Status read_value(const JsonValue& v, const char* key, std::vector<uint64_t>& out) const {
    if (v.kind != JsonValue::Kind::kArray) return wrong(key, "an array of ids", v);
    for (const JsonValue& item : v.array) {
      uint64_t id = 0;
      if (absl::Status st = read_value(item, key, id); !st.ok()) return st;
      out.push_back(id);
    }
    return absl::OkStatus();
  }

  absl::Status read_value(const JsonValue& v, const char* key, double& out) const {
    if (v.kind != JsonValue::Kind::kNumber) return wrong(key, "a number", v);
    const char* end = v.text.data() + v.text.size();
    auto [p, ec] = std::from_chars(v.text.data(), end, out);
    if (ec != std::errc() || p != end || !std::isfinite(out)) {
      return absl::InvalidArgumentError(
          absl::StrCat(op_, ": \"", key, "\" = ", v.text, " is not a finite number"));
    }
    return absl::OkStatus();
  }

  absl::Status missing(const char* key) const {
    return absl::InvalidArgumentError(absl::StrCat(op_, ": missing field \"", key, "\""));
  }
  absl::Status wrong(const char* key, const char* want, const JsonValue& v) const {
    return absl::InvalidArgumentError(
        absl::StrCat(op_, ": \"", key, "\" must be ", want, ", not ", kind_name(v.kind)));
  }

  const std::string& op_;
  const JsonValue& object_;
};

using client::AddEdge;
using client::AddVertex;
using client::DecomposeVertex;
using client::DeleteEdge;
using client::DeleteVertex;
using client::SetWeight;

using EditReader = absl::StatusOr<GraphEdit> (*)(const Fields&);

/// Each edit's key and fields, in the order messages list them.
constexpr std::pair<std::string_view, EditReader> kEditReaders[] = {
    {"add_vertex", [](const Fields& f) { return f.read<AddVertex>({}); }},
    {"delete_vertex",
     [](const Fields& f) {
       return f.read<DeleteVertex>({{"vertex_id", &DeleteVertex::vertex_id}});
     }},
    {"add_edge",
     [](const Fields& f) {
       return f.read<AddEdge>(
           {{"tails", &AddEdge::tails}, {"heads", &AddEdge::heads}, {"weight", &AddEdge::weight}});
     }},
    {"delete_edge",
     [](const Fields& f) {
       return f.read<DeleteEdge>({{"edge_id", &DeleteEdge::edge_id}});
     }},
    {"set_weight",
     [](const Fields& f) {
       return f.read<SetWeight>({{"edge_id", &SetWeight::edge_id}, {"weight", &SetWeight::weight}});
     }},
    {"decompose_vertex",
     [](const Fields& f) {
       return f.read<DecomposeVertex>(
           {{"vertex_id", &DecomposeVertex::vertex_id},
            {"move_edge_ids", &DecomposeVertex::move_edge_ids, /*required=*/false},
            {"joining_weight", &DecomposeVertex::joining_weight}});
     }},
};

/// "add_vertex, delete_vertex, ... or decompose_vertex".
std::string edit_keys() {
  std::string out;
  for (std::size_t i = 0; i < std::size(kEditReaders); ++i) {
    if (i > 0) out += i + 1 == std::size(kEditReaders) ? " or " : ", ";
    out += kEditReaders[i].first;
  }
  return out;
}

absl::StatusOr<GraphEdit> to_edit(const JsonValue& v) {
  if (v.kind != JsonValue::Kind::kObject || v.object.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected an object with exactly one key naming the edit (", edit_keys(), ")"));
  }
  const std::string& op = v.object[0].first;
  const JsonValue& body = v.object[0].second;
  if (body.kind != JsonValue::Kind::kObject) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the value must be an object, not ", kind_name(body.kind)));
  }
  for (const auto& [key, read] : kEditReaders) {
    if (op == key) return read(Fields(op, body));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown edit \"", op, "\" (expected ", edit_keys(), ")"));
}

}  // namespace

absl::StatusOr<JsonValue> parse_json(const std::string& text) {
  return JsonParser(text).parse_document();
}

absl::StatusOr<std::vector<GraphEdit>> parse_edits_jsonl(const std::string& text,
                                                         const std::string& name) {
  std::vector<GraphEdit> edits;
  std::size_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    const std::string s(line);
    if (s.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::StatusOr<JsonValue> v = parse_json(s);
    absl::StatusOr<GraphEdit> edit = v.ok() ? to_edit(*v) : absl::StatusOr<GraphEdit>(v.status());
    if (!edit.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ":", line_no, ": ", std::string(edit.status().message())));
    }
    edits.push_back(*std::move(edit));
  }
  return edits;
}

}  // namespace gcompute::cli
