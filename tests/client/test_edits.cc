// SPDX-License-Identifier: Apache-2.0
// The JSON reader and the JSON-lines edit files of `gcompute graph edit`.
#include "cli/edits.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gcompute::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Json, ParsesValues) {
  absl::StatusOr<JsonValue> v = parse_json(
      R"( {"a": [1, -2.5e3, true, false, null], "s": "x\"\\\/\n\u00e9\ud83d\ude00", "o": {}} )");
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->kind, JsonValue::Kind::kObject);
  ASSERT_EQ(v->object.size(), 3u);
  const JsonValue& a = v->object[0].second;
  ASSERT_EQ(a.array.size(), 5u);
  EXPECT_EQ(a.array[0].text, "1");
  EXPECT_EQ(a.array[1].text, "-2.5e3");
  EXPECT_TRUE(a.array[2].boolean);
  EXPECT_EQ(a.array[3].kind, JsonValue::Kind::kBool);
  EXPECT_FALSE(a.array[3].boolean);
  EXPECT_EQ(a.array[4].kind, JsonValue::Kind::kNull);
  EXPECT_EQ(v->object[1].second.text, "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v->object[2].second.kind, JsonValue::Kind::kObject);
}

TEST(Json, RefusesMalformedInput) {
  for (const char* bad : {"", "{", "{\"a\" 1}", "[1,]", "[01]", "1.", "-", "\"abc", "{\"a\":1,}",
                          "tru", "[1] 2", "\"\\x\"", "{'a':1}", "\"\\ud800\\u0041\""}) {
    EXPECT_FALSE(parse_json(bad).ok()) << bad;
  }
  absl::StatusOr<JsonValue> v = parse_json("[1, 2 3]");
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("column 7"));
}

TEST(Edits, ReadsEveryEdit) {
  const std::string text =
      "{\"add_vertex\":{}}\n"
      "\n"
      "{\"add_edge\":{\"tails\":[0],\"heads\":[1, 2],\"weight\":2.5}}\n"
      "  {\"delete_vertex\":{\"vertex_id\":3}}  \r\n"
      "{\"delete_edge\":{\"edge_id\":4}}\n"
      "{\"set_weight\":{\"edge_id\":1,\"weight\":-0.5}}\n"
      "{\"decompose_vertex\":{\"vertex_id\":2,\"move_edge_ids\":[5,6],\"joining_weight\":1}}\n"
      "{\"decompose_vertex\":{\"vertex_id\":18446744073709551615,\"joining_weight\":0}}";
  absl::StatusOr<std::vector<client::GraphEdit>> edits = parse_edits_jsonl(text, "e.jsonl");
  ASSERT_TRUE(edits.ok()) << edits.status();
  ASSERT_EQ(edits->size(), 7u);
  EXPECT_TRUE(std::holds_alternative<client::AddVertex>((*edits)[0]));
  const auto& add = std::get<client::AddEdge>((*edits)[1]);
  EXPECT_THAT(add.tails, ElementsAre(0u));
  EXPECT_THAT(add.heads, ElementsAre(1u, 2u));
  EXPECT_EQ(add.weight, 2.5);
  EXPECT_EQ(std::get<client::DeleteVertex>((*edits)[2]).vertex_id, 3u);
  EXPECT_EQ(std::get<client::DeleteEdge>((*edits)[3]).edge_id, 4u);
  EXPECT_EQ(std::get<client::SetWeight>((*edits)[4]).edge_id, 1u);
  EXPECT_EQ(std::get<client::SetWeight>((*edits)[4]).weight, -0.5);
  const auto& dec = std::get<client::DecomposeVertex>((*edits)[5]);
  EXPECT_EQ(dec.vertex_id, 2u);
  EXPECT_THAT(dec.move_edge_ids, ElementsAre(5u, 6u));
  EXPECT_EQ(dec.joining_weight, 1.0);
  EXPECT_EQ(std::get<client::DecomposeVertex>((*edits)[6]).vertex_id, 18446744073709551615u);
  EXPECT_TRUE(std::get<client::DecomposeVertex>((*edits)[6]).move_edge_ids.empty());
}

TEST(Edits, ErrorsNameFileLineAndProblem) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"{\"add_vertex\":{}}\n{\"add_vertex\":{}", "e.jsonl:3: column 17"},
      {"{\"add_vertex\":{},\"delete_edge\":{\"edge_id\":1}}", "exactly one key"},
      {"[1]", "exactly one key"},
      {"{\"remove_vertex\":{\"vertex_id\":1}}", "unknown edit \"remove_vertex\""},
      {"{\"delete_vertex\":{}}", "delete_vertex: missing field \"vertex_id\""},
      {"{\"delete_vertex\":{\"vertex_id\":-1}}", "\"vertex_id\" = -1 is not a non-negative"},
      {"{\"delete_vertex\":{\"vertex_id\":1.5}}", "\"vertex_id\" = 1.5 is not a non-negative"},
      {"{\"delete_vertex\":{\"vertex_id\":\"3\"}}",
       "must be a non-negative integer id, not a "
       "string"},
      {"{\"delete_vertex\":{\"vertex_id\":18446744073709551616}}", "is not a non-negative"},
      {"{\"delete_edge\":{\"edge_id\":1,\"weight\":2}}", "delete_edge: unknown field \"weight\""},
      {"{\"add_edge\":{\"tails\":[0],\"heads\":[1]}}", "missing field \"weight\""},
      {"{\"add_edge\":{\"tails\":0,\"heads\":[1],\"weight\":1}}", "\"tails\" must be an array"},
      {"{\"add_edge\":{\"tails\":[0],\"heads\":[1],\"weight\":true}}", "must be a number"},
      {"{\"set_weight\":{\"edge_id\":1,\"weight\":1e999}}", "not a finite number"},
      {"{\"set_weight\":{\"edge_id\":1,\"edge_id\":2,\"weight\":1}}", "given twice"},
      {"{\"add_vertex\":[]}", "the value must be an object"},
      {"{\"add_vertex\":{\"id\":1}}", "unknown field \"id\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<client::GraphEdit>> edits =
        parse_edits_jsonl("\n" + c.text, "e.jsonl");
    ASSERT_FALSE(edits.ok()) << c.text;
    EXPECT_EQ(edits.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(edits.status().message());
    EXPECT_THAT(message, HasSubstr(c.expected)) << c.text;
    // The edit is on the second line (after a blank one) unless the case says otherwise.
    if (c.expected.find("e.jsonl:") == std::string::npos) {
      EXPECT_THAT(message, HasSubstr("e.jsonl:2:")) << c.text;
    }
  }
}

}  // namespace
}  // namespace gcompute::cli
