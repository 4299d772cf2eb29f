// SPDX-License-Identifier: Apache-2.0
// DIMACS, Matrix Market and CSV graph files: contents, numbering, errors with line numbers.
#include "cli/graph_files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gcompute::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

void expect_error(const absl::StatusOr<GraphFile>& g, const std::string& where,
                  const std::string& what) {
  ASSERT_FALSE(g.ok()) << "expected an error containing: " << what;
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr(where));
  EXPECT_THAT(std::string(g.status().message()), HasSubstr(what));
}

TEST(Dimacs, ReadsArcsOneBasedToZeroBased) {
  const std::string text =
      "c a comment\n"
      "p sp 4 3\n"
      "\n"
      "a 1 2 7\n"
      "a 4 1 -2.5\n"
      "c another\n"
      "a 2 2 0\n";
  absl::StatusOr<GraphFile> g = parse_dimacs(text, "g.gr");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_vertices, 4);
  EXPECT_EQ(g->first_vertex, 1);
  EXPECT_THAT(g->src, ElementsAre(0, 3, 1));
  EXPECT_THAT(g->dst, ElementsAre(1, 0, 1));
  EXPECT_THAT(g->weight, ElementsAre(7.0, -2.5, 0.0));
}

TEST(Dimacs, ErrorsNameTheLine) {
  expect_error(parse_dimacs("p sp 3 1\na 1 4 1\n", "g.gr"), "g.gr:2:", "outside 1..3");
  expect_error(parse_dimacs("p sp 3 1\na 0 1 1\n", "g.gr"), "g.gr:2:", "outside 1..3");
  expect_error(parse_dimacs("a 1 2 1\np sp 3 1\n", "g.gr"), "g.gr:1:", "before the problem");
  expect_error(parse_dimacs("p sp 3 1\na 1 2\n", "g.gr"), "g.gr:2:", "'a U V WEIGHT'");
  expect_error(parse_dimacs("p sp 3 1\na 1 2 x\n", "g.gr"), "g.gr:2:", "'a U V WEIGHT'");
  expect_error(parse_dimacs("c\nc\np max 3 1\n", "g.gr"), "g.gr:3:", "p sp NODES ARCS");
  expect_error(parse_dimacs("p sp 3 1\np sp 3 1\n", "g.gr"), "g.gr:2:", "second problem");
  expect_error(parse_dimacs("p sp 3 1\nx 1 2 3\n", "g.gr"), "g.gr:2:", "unknown line type 'x'");
  expect_error(parse_dimacs("p sp 3 2\na 1 2 1\n", "g.gr"), "g.gr", "declares 2 arcs but 1");
  expect_error(parse_dimacs("c only comments\n", "g.gr"), "g.gr", "no problem line");
}

TEST(MatrixMarket, GeneralRealAndSymmetricAndPattern) {
  absl::StatusOr<GraphFile> g = parse_matrix_market(
      "%%MatrixMarket matrix coordinate real general\n% comment\n3 3 2\n1 2 0.5\n3 1 4\n", "g.mtx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_vertices, 3);
  EXPECT_EQ(g->first_vertex, 1);
  EXPECT_THAT(g->src, ElementsAre(0, 2));
  EXPECT_THAT(g->dst, ElementsAre(1, 0));
  EXPECT_THAT(g->weight, ElementsAre(0.5, 4.0));

  g = parse_matrix_market(
      "%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 5\n3 3 1\n", "s.mtx");
  ASSERT_TRUE(g.ok()) << g.status();
  // The off-diagonal entry gives both directions; the diagonal one only itself.
  EXPECT_THAT(g->src, ElementsAre(1, 0, 2));
  EXPECT_THAT(g->dst, ElementsAre(0, 1, 2));
  EXPECT_THAT(g->weight, ElementsAre(5.0, 5.0, 1.0));

  g = parse_matrix_market("%%MatrixMarket MATRIX Coordinate Pattern General\n2 2 1\n1 2\n",
                          "p.mtx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->weight, ElementsAre(1.0));
}

TEST(MatrixMarket, ErrorsNameTheLine) {
  const std::string banner = "%%MatrixMarket matrix coordinate real general\n";
  expect_error(parse_matrix_market("%%MatrixMarket matrix array real general\n2 2\n", "a.mtx"),
               "a.mtx:1:", "only 'matrix coordinate'");
  expect_error(parse_matrix_market("%%MatrixMarket matrix coordinate complex general\n", "c.mtx"),
               "c.mtx:1:", "field 'complex'");
  expect_error(parse_matrix_market("%%MatrixMarket matrix coordinate real hermitian\n", "h.mtx"),
               "h.mtx:1:", "symmetry 'hermitian'");
  expect_error(parse_matrix_market("3 3 1\n", "n.mtx"), "n.mtx:1:", "banner");
  expect_error(parse_matrix_market(banner + "2 3 0\n", "r.mtx"), "r.mtx:2:", "must be square");
  expect_error(parse_matrix_market(banner + "2 2 1\n1 3 1\n", "o.mtx"), "o.mtx:3:", "outside 1..2");
  expect_error(parse_matrix_market(banner + "2 2 1\n1 2\n", "v.mtx"),
               "v.mtx:3:", "'ROW COL VALUE'");
  expect_error(parse_matrix_market(banner + "2 2 1\n1 2 1\n2 1 1\n", "m.mtx"),
               "m.mtx:4:", "more entries than the 1 declared");
  expect_error(parse_matrix_market(banner + "2 2 2\n1 2 1\n", "f.mtx"), "f.mtx",
               "declares 2 entries but 1");
  expect_error(parse_matrix_market(banner, "e.mtx"), "e.mtx", "no Matrix Market size line");
}

TEST(Csv, HeaderCommentsAndVertexCount) {
  absl::StatusOr<GraphFile> g =
      parse_edge_csv("src,dst,weight\n# comment\n0,1,2.5\n\n 3 , 0 , -1 \n", "e.csv");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_vertices, 4);
  EXPECT_EQ(g->first_vertex, 0);
  EXPECT_THAT(g->src, ElementsAre(0, 3));
  EXPECT_THAT(g->dst, ElementsAre(1, 0));
  EXPECT_THAT(g->weight, ElementsAre(2.5, -1.0));

  g = parse_edge_csv("0,1,1\n", "e.csv", 10);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->num_vertices, 10);
  g = parse_edge_csv("", "empty.csv");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->num_vertices, 0);
}

TEST(Csv, ErrorsNameTheLine) {
  expect_error(parse_edge_csv("0,1,1\n1,2\n", "e.csv"), "e.csv:2:", "expected 'src,dst,weight'");
  expect_error(parse_edge_csv("0,1,1\nsrc,dst,weight\n", "e.csv"),
               "e.csv:2:", "expected 'src,dst,weight'");
  expect_error(parse_edge_csv("0,-1,1\n", "e.csv"), "e.csv:1:", "outside");
  expect_error(parse_edge_csv("0,5,1\n", "e.csv", 5), "e.csv:1:", "outside 0..4");
  expect_error(parse_edge_csv("0,1,heavy\n", "e.csv"), "e.csv:1:", "expected 'src,dst,weight'");
}

TEST(GraphFiles, FormatByExtension) {
  EXPECT_EQ(graph_format_from_path("a/b.GR"), GraphFormat::kDimacs);
  EXPECT_EQ(graph_format_from_path("x.mtx"), GraphFormat::kMatrixMarket);
  EXPECT_EQ(graph_format_from_path("x.csv"), GraphFormat::kCsv);
  EXPECT_EQ(graph_format_from_path("x.npy"), GraphFormat::kNpy);
  EXPECT_EQ(graph_format_from_path("x.txt"), std::nullopt);
  EXPECT_EQ(graph_format_from_path("noext"), std::nullopt);
  absl::StatusOr<GraphFile> g = read_graph_file("graph.txt");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("graph.txt"));
}

}  // namespace
}  // namespace gcompute::cli
