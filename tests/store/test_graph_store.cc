// SPDX-License-Identifier: Apache-2.0
// GraphStore: every edit kind, ids, atomicity, versions, messages, limits, to_dense, journal.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "store/graphs/graph_store.hpp"

namespace gcompute::server {
namespace {

using ::testing::HasSubstr;

Hyperedge edge(std::vector<std::uint64_t> tails, std::vector<std::uint64_t> heads, double w,
               std::uint64_t id = 0) {
  return Hyperedge{id, std::move(tails), std::move(heads), w};
}

void expect_error(const absl::Status& s, absl::StatusCode code, const std::string& text) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(text));
}

/// A store holding "g": vertices 0..4 and edges 0: {0}->{1} w1, 1: {1,2}->{3} w2,
/// 2: {3}->{0,4} w3, 3: {2}->{2} w4 (a self-loop).
class GraphStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_
                    .create("g", 5,
                            {edge({0}, {1}, 1), edge({1, 2}, {3}, 2), edge({3}, {0, 4}, 3),
                             edge({2}, {2}, 4)})
                    .ok());
  }
  GraphSnapshot snap(const std::string& id = "g") {
    absl::StatusOr<GraphSnapshot> s = store_.get(id);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : GraphSnapshot{};
  }
  absl::StatusOr<ApplyResult> apply(std::vector<Edit> edits,
                                    std::optional<std::uint64_t> expected = std::nullopt) {
    return store_.apply("g", expected, edits);
  }
  GraphStore store_;
};

TEST_F(GraphStoreTest, CreateAssignsIdsAndVersionOne) {
  GraphSnapshot s = snap();
  EXPECT_EQ(s.info, (GraphInfo{"g", 1, 5, 4}));
  EXPECT_EQ(s.vertices, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
  ASSERT_EQ(s.edges.size(), 4u);
  EXPECT_EQ(s.edges[1], edge({1, 2}, {3}, 2, 1));
  EXPECT_EQ(s.edges[3], edge({2}, {2}, 4, 3));

  // Ids given on input are ignored.
  absl::StatusOr<GraphInfo> info = store_.create("h", 2, {edge({0}, {1}, 5, 77)});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(*info, (GraphInfo{"h", 1, 2, 1}));
  EXPECT_EQ(snap("h").edges.at(0).id, 0u);

  ASSERT_TRUE(store_.create("empty", 0, {}).ok());
  EXPECT_EQ(snap("empty").info, (GraphInfo{"empty", 1, 0, 0}));
}

TEST_F(GraphStoreTest, GraphIds) {
  absl::StatusOr<GraphInfo> a = store_.create("", 1, {});
  absl::StatusOr<GraphInfo> b = store_.create("", 1, {});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->graph_id.size(), 34u) << a->graph_id;  // "g-" and 128 random bits in hex
  EXPECT_EQ(a->graph_id.substr(0, 2), "g-");
  EXPECT_EQ(a->graph_id.find_first_not_of("0123456789abcdef", 2), std::string::npos) << a->graph_id;
  EXPECT_NE(a->graph_id, b->graph_id);
  EXPECT_TRUE(store_.get(a->graph_id).ok());

  EXPECT_TRUE(store_.create(std::string(128, 'x'), 0, {}).ok());
  EXPECT_TRUE(store_.create("A-z_0.9", 0, {}).ok());
  expect_error(store_.create(std::string(129, 'x'), 0, {}).status(),
               absl::StatusCode::kInvalidArgument, "129 characters");
  expect_error(store_.create("a b", 0, {}).status(), absl::StatusCode::kInvalidArgument,
               "graph_id \"a b\" has \" \" at position 1");
  expect_error(store_.create("a/b", 0, {}).status(), absl::StatusCode::kInvalidArgument,
               "graph_id \"a/b\" is outside the caller's namespace");
  expect_error(store_.create("a/b/c", 0, {}).status(), absl::StatusCode::kInvalidArgument,
               "has \"/\" at position 1");
  expect_error(store_.create("g", 0, {}).status(), absl::StatusCode::kAlreadyExists,
               "graph \"g\" already exists");
  EXPECT_EQ(snap().info.num_vertices, 5u);  // the existing graph is untouched
}

TEST_F(GraphStoreTest, CreateValidatesEdges) {
  expect_error(store_.create("x", 5, {edge({0}, {1}, 1), edge({1}, {7}, 1)}).status(),
               absl::StatusCode::kInvalidArgument,
               "edges[1].heads[0] = 7 but the graph has 5 vertices");
  expect_error(store_.create("x", 5, {edge({0, 5}, {1}, 1)}).status(),
               absl::StatusCode::kInvalidArgument,
               "edges[0].tails[1] = 5 but the graph has 5 vertices");
  expect_error(store_.create("x", 5, {edge({}, {1}, 1)}).status(),
               absl::StatusCode::kInvalidArgument, "edges[0].tails is empty");
  expect_error(store_.create("x", 5, {edge({1}, {}, 1)}).status(),
               absl::StatusCode::kInvalidArgument, "edges[0].heads is empty");
  expect_error(store_.create("x", 5, {edge({1, 2, 1}, {3}, 1)}).status(),
               absl::StatusCode::kInvalidArgument,
               "edges[0].tails[2] = 1 repeats edges[0].tails[0]");
  expect_error(store_.create("x", 5, {edge({1}, {3, 3}, 1)}).status(),
               absl::StatusCode::kInvalidArgument,
               "edges[0].heads[1] = 3 repeats edges[0].heads[0]");
  expect_error(
      store_.create("x", 5, {edge({1}, {3}, std::numeric_limits<double>::quiet_NaN())}).status(),
      absl::StatusCode::kInvalidArgument, "edges[0].weight = nan is not finite");
  expect_error(
      store_.create("x", 5, {edge({1}, {3}, -std::numeric_limits<double>::infinity())}).status(),
      absl::StatusCode::kInvalidArgument, "edges[0].weight = -inf is not finite");
  EXPECT_EQ(store_.get("x").status().code(), absl::StatusCode::kNotFound);
  // A vertex may be both a tail and a head.
  EXPECT_TRUE(store_.create("x", 2, {edge({0, 1}, {1, 0}, -3)}).ok());
}

TEST(GraphStoreLimits, ResourceExhausted) {
  GraphStore::Options options;
  options.max_graphs = 2;
  options.limits.max_vertices = 4;
  options.limits.max_edges = 3;
  GraphStore store(options);
  expect_error(store.create("a", 5, {}).status(), absl::StatusCode::kResourceExhausted,
               "num_vertices = 5 is more than the limit of 4");
  expect_error(store.create("a", 2, std::vector<Hyperedge>(4, edge({0}, {1}, 1))).status(),
               absl::StatusCode::kResourceExhausted, "4 edges, more than the limit of 3");
  ASSERT_TRUE(store.create("a", 3, {edge({0}, {1}, 1), edge({1}, {2}, 1)}).ok());
  ASSERT_TRUE(store.create("b", 0, {}).ok());
  expect_error(store.create("c", 0, {}).status(), absl::StatusCode::kResourceExhausted, "2 graphs");
  ASSERT_TRUE(store.remove("b").ok());
  EXPECT_TRUE(store.create("c", 0, {}).ok());

  std::vector<Edit> grow = {AddVertex{}, AddVertex{}};
  expect_error(store.apply("a", std::nullopt, grow).status(), absl::StatusCode::kResourceExhausted,
               "edits[1].add_vertex: the graph would have more than 4 vertices");
  std::vector<Edit> edges = {AddEdge{{0}, {2}, 1}, AddEdge{{2}, {0}, 1}};
  expect_error(store.apply("a", std::nullopt, edges).status(), absl::StatusCode::kResourceExhausted,
               "edits[1].add_edge: the graph would have more than 3 edges");
  // Limits count live elements: deleting first makes room within the same batch.
  std::vector<Edit> swap = {DeleteEdge{0}, AddEdge{{0}, {2}, 1}, AddEdge{{2}, {0}, 1},
                            AddEdge{{2}, {1}, 1}};
  expect_error(store.apply("a", std::nullopt, swap).status(), absl::StatusCode::kResourceExhausted,
               "edits[3].add_edge");
  std::vector<Edit> ok = {AddEdge{{0}, {2}, 1}};
  EXPECT_TRUE(store.apply("a", std::nullopt, ok).ok());
  std::vector<Edit> split = {DecomposeVertex{0, {}, 1}};
  expect_error(store.apply("a", std::nullopt, split).status(), absl::StatusCode::kResourceExhausted,
               "edits[0].decompose_vertex: the graph would have more than 3 edges");
  EXPECT_EQ(store.info("a")->version, 2u);
}

TEST_F(GraphStoreTest, ListAndRemove) {
  ASSERT_TRUE(store_.create("b", 1, {}).ok());
  ASSERT_TRUE(store_.create("a", 2, {}).ok());
  std::vector<GraphInfo> list = store_.list();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0], (GraphInfo{"a", 1, 2, 0}));
  EXPECT_EQ(list[1].graph_id, "b");
  EXPECT_EQ(list[2], (GraphInfo{"g", 1, 5, 4}));
  EXPECT_EQ(store_.size(), 3u);

  ASSERT_TRUE(store_.remove("b").ok());
  expect_error(store_.remove("b"), absl::StatusCode::kNotFound, "graph \"b\" not found");
  expect_error(store_.get("b").status(), absl::StatusCode::kNotFound, "graph \"b\" not found");
  expect_error(store_.apply("b", std::nullopt, std::vector<Edit>{AddVertex{}}).status(),
               absl::StatusCode::kNotFound, "\"b\"");
  expect_error(store_.to_dense("b", kernels::DType::kF32, 100).status(),
               absl::StatusCode::kNotFound, "\"b\"");
  expect_error(store_.info("nope\n").status(), absl::StatusCode::kNotFound,
               "graph \"nope\\n\" not found");
  EXPECT_EQ(store_.list().size(), 2u);
  // The id is free again, for a brand-new graph.
  ASSERT_TRUE(store_.create("b", 7, {}).ok());
  EXPECT_EQ(snap("b").info, (GraphInfo{"b", 1, 7, 0}));
}

TEST_F(GraphStoreTest, AddVertexAndEdgeIdsAreMonotonicAndUsableInTheBatch) {
  absl::StatusOr<ApplyResult> r =
      apply({AddVertex{}, AddVertex{}, AddEdge{{5}, {6, 0}, 2.5}, AddEdge{{6}, {6}, -1}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->version, 2u);
  ASSERT_EQ(r->results.size(), 4u);
  EXPECT_EQ(r->results[0].vertex_id, 5u);
  EXPECT_EQ(r->results[1].vertex_id, 6u);
  EXPECT_EQ(r->results[2].edge_id, 4u);
  EXPECT_EQ(r->results[3].edge_id, 5u);
  GraphSnapshot s = snap();
  EXPECT_EQ(s.info, (GraphInfo{"g", 2, 7, 6}));
  EXPECT_EQ(s.edges[4], edge({5}, {6, 0}, 2.5, 4));
  EXPECT_EQ(s.edges[5], edge({6}, {6}, -1, 5));

  // Deleted ids are never handed out again.
  ASSERT_TRUE(apply({DeleteVertex{6}, DeleteEdge{4}}).ok());
  r = apply({AddVertex{}, AddEdge{{0}, {1}, 1}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->results[0].vertex_id, 7u);
  EXPECT_EQ(r->results[1].edge_id, 6u);
}

TEST_F(GraphStoreTest, AddEdgeErrorsNameTheEditAndField) {
  expect_error(apply({AddVertex{}, AddEdge{{0}, {9}, 1}}).status(), absl::StatusCode::kNotFound,
               "edits[1].add_edge.heads[0] = 9: no such vertex");
  expect_error(apply({AddEdge{{0, 1, 8}, {2}, 1}}).status(), absl::StatusCode::kNotFound,
               "edits[0].add_edge.tails[2] = 8: no such vertex");
  expect_error(apply({AddEdge{{}, {2}, 1}}).status(), absl::StatusCode::kInvalidArgument,
               "edits[0].add_edge.tails is empty");
  expect_error(apply({AddEdge{{1}, {}, 1}}).status(), absl::StatusCode::kInvalidArgument,
               "edits[0].add_edge.heads is empty");
  expect_error(apply({AddEdge{{1, 1}, {2}, 1}}).status(), absl::StatusCode::kInvalidArgument,
               "edits[0].add_edge.tails[1] = 1 repeats edits[0].add_edge.tails[0]");
  expect_error(apply({AddEdge{{1}, {2}, std::numeric_limits<double>::infinity()}}).status(),
               absl::StatusCode::kInvalidArgument, "edits[0].add_edge.weight = inf is not finite");
  EXPECT_EQ(snap().info.version, 1u);
}

TEST_F(GraphStoreTest, DeleteEdgeAndSetWeight) {
  absl::StatusOr<ApplyResult> r = apply({SetWeight{1, -7.5}, DeleteEdge{0}, SetWeight{2, 0}});
  ASSERT_TRUE(r.ok()) << r.status();
  GraphSnapshot s = snap();
  ASSERT_EQ(s.edges.size(), 3u);
  EXPECT_EQ(s.edges[0], edge({1, 2}, {3}, -7.5, 1));
  EXPECT_EQ(s.edges[1], edge({3}, {0, 4}, 0, 2));
  EXPECT_EQ(s.vertices.size(), 5u);  // deleting an edge keeps its vertices

  expect_error(apply({DeleteEdge{0}}).status(), absl::StatusCode::kNotFound,
               "edits[0].delete_edge.edge_id = 0: no such edge");
  expect_error(apply({SetWeight{1, 1}, SetWeight{9, 1}}).status(), absl::StatusCode::kNotFound,
               "edits[1].set_weight.edge_id = 9: no such edge");
  expect_error(apply({SetWeight{1, std::nan("")}}).status(), absl::StatusCode::kInvalidArgument,
               "edits[0].set_weight.weight = nan is not finite");
  // An edge deleted earlier in the batch is gone for the later edits.
  expect_error(apply({DeleteEdge{1}, SetWeight{1, 1}}).status(), absl::StatusCode::kNotFound,
               "edits[1].set_weight.edge_id = 1");
  EXPECT_EQ(snap(), s);
}

TEST_F(GraphStoreTest, DeleteVertexCascades) {
  // Vertex 3: sole head of edge 1 (deleted), sole tail of edge 2 (deleted).
  absl::StatusOr<ApplyResult> r = apply({DeleteVertex{3}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->results[0].deleted_edge_ids, (std::vector<std::uint64_t>{1, 2}));
  GraphSnapshot s = snap();
  EXPECT_EQ(s.info, (GraphInfo{"g", 2, 4, 2}));
  EXPECT_EQ(s.vertices, (std::vector<std::uint64_t>{0, 1, 2, 4}));
  EXPECT_EQ(s.edges[0], edge({0}, {1}, 1, 0));
  EXPECT_EQ(s.edges[1], edge({2}, {2}, 4, 3));

  // Removing one of several tails/heads keeps the edge, in order, without the vertex.
  ASSERT_TRUE(apply({AddEdge{{0, 1, 2}, {4, 1}, 6}, DeleteVertex{1}}).ok());
  s = snap();
  EXPECT_EQ(s.edges.back(), edge({0, 2}, {4}, 6, 4));
  EXPECT_EQ(s.edges.size(), 2u);  // edge 0 ({0}->{1}) went with vertex 1

  // A self-loop's only vertex takes it along.
  r = apply({DeleteVertex{2}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->results[0].deleted_edge_ids, (std::vector<std::uint64_t>{3}));
  s = snap();
  ASSERT_EQ(s.edges.size(), 1u);
  EXPECT_EQ(s.edges[0], edge({0}, {4}, 6, 4));

  expect_error(apply({DeleteVertex{2}}).status(), absl::StatusCode::kNotFound,
               "edits[0].delete_vertex.vertex_id = 2: no such vertex");
  expect_error(apply({AddVertex{}, DeleteVertex{0}, DeleteVertex{0}}).status(),
               absl::StatusCode::kNotFound, "edits[2].delete_vertex.vertex_id = 0");
  EXPECT_TRUE(store_.check_invariants().ok());
}

TEST_F(GraphStoreTest, DecomposeVertex) {
  // Vertex 2 is a tail of edge 1 and both tail and head of the self-loop 3.
  ASSERT_TRUE(apply({AddEdge{{0}, {2, 4}, 8}}).ok());  // edge 4: 2 is a head
  absl::StatusOr<ApplyResult> r = apply({DecomposeVertex{2, {3, 4}, 0.5}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->results[0].vertex_id, 5u);
  EXPECT_EQ(r->results[0].edge_id, 5u);
  EXPECT_TRUE(r->results[0].deleted_edge_ids.empty());
  GraphSnapshot s = snap();
  EXPECT_EQ(s.info, (GraphInfo{"g", 3, 6, 6}));
  EXPECT_EQ(s.edges[1], edge({1, 2}, {3}, 2, 1));  // not moved: stays on 2
  EXPECT_EQ(s.edges[3], edge({5}, {5}, 4, 3));     // self-loop moved entirely
  EXPECT_EQ(s.edges[4], edge({0}, {5, 4}, 8, 4));  // position kept
  EXPECT_EQ(s.edges[5], edge({2}, {5}, 0.5, 5));   // joining edge v -> w

  // No edges moved: just a new vertex and the joining edge.
  r = apply({DecomposeVertex{0, {}, -2}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(snap().edges.back(), edge({0}, {6}, -2, 6));
  // The new vertex and edge are usable later in the same batch.
  r = apply({DecomposeVertex{4, {2}, 1}, DecomposeVertex{7, {2}, 1}, DeleteEdge{7}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->results[1].vertex_id, 8u);
  EXPECT_EQ(snap().edges[2], edge({3}, {0, 8}, 3, 2));

  const GraphSnapshot before = snap();
  expect_error(
      apply({DecomposeVertex{1, {2}, 1}}).status(), absl::StatusCode::kInvalidArgument,
      "edits[0].decompose_vertex.move_edge_ids[0] = 2: edge 2 is not incident to vertex 1");
  expect_error(apply({DecomposeVertex{1, {0, 42}, 1}}).status(), absl::StatusCode::kNotFound,
               "edits[0].decompose_vertex.move_edge_ids[1] = 42: no such edge");
  expect_error(apply({DecomposeVertex{1, {0, 0}, 1}}).status(), absl::StatusCode::kInvalidArgument,
               "move_edge_ids[1] = 0 repeats edits[0].decompose_vertex.move_edge_ids[0]");
  expect_error(apply({DecomposeVertex{99, {}, 1}}).status(), absl::StatusCode::kNotFound,
               "edits[0].decompose_vertex.vertex_id = 99: no such vertex");
  expect_error(apply({DecomposeVertex{1, {}, std::nan("")}}).status(),
               absl::StatusCode::kInvalidArgument, "decompose_vertex.joining_weight = nan");
  EXPECT_EQ(snap(), before);
  EXPECT_TRUE(store_.check_invariants().ok());
}

TEST_F(GraphStoreTest, FailingBatchLeavesTheGraphExactlyAsItWas) {
  ASSERT_TRUE(apply({SetWeight{0, 10}}).ok());
  const GraphSnapshot before = snap();
  // Every kind of change before the failing edit at index 5.
  std::vector<Edit> batch = {
      AddVertex{},      AddEdge{{5}, {0, 1}, 3}, DeleteVertex{3}, DecomposeVertex{2, {3}, 1},
      SetWeight{0, -1}, DeleteEdge{2},           AddVertex{}};
  expect_error(apply(batch).status(), absl::StatusCode::kNotFound,
               "edits[5].delete_edge.edge_id = 2: no such edge");
  EXPECT_EQ(snap(), before);
  EXPECT_TRUE(store_.check_invariants().ok());

  // The counters were rolled back too: the same batch without the bad edit gets the ids the
  // failed one would have got.
  batch.erase(batch.begin() + 5);
  absl::StatusOr<ApplyResult> r = apply(batch, before.info.version);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->version, before.info.version + 1);
  EXPECT_EQ(r->results[0].vertex_id, 5u);
  EXPECT_EQ(r->results[1].edge_id, 4u);
  EXPECT_EQ(r->results[2].deleted_edge_ids, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(r->results[3].vertex_id, 6u);
  EXPECT_EQ(r->results[3].edge_id, 5u);
  EXPECT_EQ(r->results[5].vertex_id, 7u);
  GraphSnapshot s = snap();
  EXPECT_EQ(s.vertices, (std::vector<std::uint64_t>{0, 1, 2, 4, 5, 6, 7}));
  EXPECT_EQ(s.edges[0], edge({0}, {1}, -1, 0));
  EXPECT_EQ(s.edges[1], edge({6}, {6}, 4, 3));
  EXPECT_EQ(s.edges[2], edge({5}, {0, 1}, 3, 4));
  EXPECT_EQ(s.edges[3], edge({2}, {6}, 1, 5));
  EXPECT_TRUE(store_.check_invariants().ok());
}

TEST_F(GraphStoreTest, Versions) {
  expect_error(apply({AddVertex{}}, 0).status(), absl::StatusCode::kAborted,
               "graph \"g\" has version 1, expected 0");
  ASSERT_TRUE(apply({AddVertex{}}, 1).ok());
  ASSERT_TRUE(apply({AddVertex{}}).ok());
  expect_error(apply({AddVertex{}}, 2).status(), absl::StatusCode::kAborted,
               "graph \"g\" has version 3, expected 2");
  EXPECT_EQ(snap().info, (GraphInfo{"g", 3, 7, 4}));

  // An empty batch changes nothing, but the version is still checked.
  absl::StatusOr<ApplyResult> r = apply({}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->version, 3u);
  EXPECT_TRUE(r->results.empty());
  EXPECT_EQ(apply({}, 4).status().code(), absl::StatusCode::kAborted);
  // A failed batch does not bump the version.
  EXPECT_FALSE(apply({DeleteEdge{99}}).ok());
  EXPECT_EQ(snap().info.version, 3u);
}

// ---- to_dense ---------------------------------------------------------------------------

/// The matrix built independently from a snapshot, in double: (vertex ids, W) with +inf for
/// no edge.
std::pair<std::vector<std::uint64_t>, std::vector<double>> oracle_dense(const GraphSnapshot& s) {
  std::map<std::uint64_t, std::size_t> index;
  for (std::uint64_t v : s.vertices) index.emplace(v, index.size());
  const std::size_t n = index.size();
  std::vector<double> w(n * n, std::numeric_limits<double>::infinity());
  for (const Hyperedge& e : s.edges) {
    for (std::uint64_t t : e.tails) {
      for (std::uint64_t h : e.heads) {
        double& cell = w[index.at(t) * n + index.at(h)];
        if (e.weight < cell) cell = e.weight;
      }
    }
  }
  return {s.vertices, w};
}

template <typename T>
std::vector<T> decode(const std::string& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

void expect_dense_matches(GraphStore& store, const std::string& id) {
  absl::StatusOr<GraphSnapshot> s = store.get(id);
  ASSERT_TRUE(s.ok());
  auto [ids, w] = oracle_dense(*s);
  absl::StatusOr<DenseGraph> f = store.to_dense(id, kernels::DType::kF32, 1 << 20);
  absl::StatusOr<DenseGraph> i = store.to_dense(id, kernels::DType::kI32, 1 << 20);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ(f->vertex_ids, ids);
  EXPECT_EQ(i->vertex_ids, ids);
  EXPECT_EQ(f->version, s->info.version);
  ASSERT_EQ(f->weights.size(), w.size() * 4);
  ASSERT_EQ(i->weights.size(), w.size() * 4);
  std::vector<float> fw = decode<float>(f->weights);
  std::vector<std::int32_t> iw = decode<std::int32_t>(i->weights);
  for (std::size_t k = 0; k < w.size(); ++k) {
    EXPECT_EQ(fw[k], static_cast<float>(w[k])) << "element " << k;
    EXPECT_EQ(iw[k], std::isinf(w[k]) ? kernels::kI32NoEdge : static_cast<std::int32_t>(w[k]))
        << "element " << k;
  }
}

TEST_F(GraphStoreTest, ToDenseMatchesAnIndependentConstruction) {
  // Parallel edges (min wins, including a hyperedge overlapping a plain edge), negative
  // weights, self-loops through tails and heads, sparse ids after deletions.
  ASSERT_TRUE(apply({AddEdge{{0}, {1}, -3}, AddEdge{{0, 4}, {1, 4}, 2}, AddEdge{{4}, {1}, 9},
                     DeleteVertex{3}, AddVertex{}, AddEdge{{5}, {0, 5}, 1}})
                  .ok());
  expect_dense_matches(store_, "g");
  absl::StatusOr<DenseGraph> f = store_.to_dense("g", kernels::DType::kF32, 25);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->vertex_ids, (std::vector<std::uint64_t>{0, 1, 2, 4, 5}));
  std::vector<float> w = decode<float>(f->weights);
  EXPECT_EQ(w[0 * 5 + 1], -3.0f);  // 0 -> 1: min(1, -3, 2)
  EXPECT_EQ(w[3 * 5 + 3], 2.0f);   // 4 -> 4 from the hyperedge {0,4}->{1,4}
  EXPECT_EQ(w[2 * 5 + 2], 4.0f);   // the self-loop on 2
  EXPECT_EQ(w[4 * 5 + 0], 1.0f);   // 5 -> 0
  EXPECT_EQ(w[1 * 5 + 0], std::numeric_limits<float>::infinity());

  ASSERT_TRUE(store_.create("empty", 0, {}).ok());
  absl::StatusOr<DenseGraph> e = store_.to_dense("empty", kernels::DType::kI32, 0);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->vertex_ids.empty());
  EXPECT_TRUE(e->weights.empty());
}

TEST_F(GraphStoreTest, ToCsrHoldsEveryTailHeadPairAndMatchesToDense) {
  // The same graph as above: parallel edges stay (the least weight is the dense matrix's),
  // hyperedges expand to every tail -> head pair, rows are ids in ascending order.
  ASSERT_TRUE(apply({AddEdge{{0}, {1}, -3}, AddEdge{{0, 4}, {1, 4}, 2}, AddEdge{{4}, {1}, 9},
                     DeleteVertex{3}, AddVertex{}, AddEdge{{5}, {0, 5}, 1}})
                  .ok());
  std::size_t pairs = 0;
  const auto check_csr = [&](const std::string& where) {
    SCOPED_TRACE(where);
    absl::StatusOr<GraphSnapshot> snap = store_.get("g");
    ASSERT_TRUE(snap.ok());
    absl::StatusOr<CsrGraph> csr = store_.to_csr("g", 1000);
    ASSERT_TRUE(csr.ok()) << csr.status();
    auto [ids, w] = oracle_dense(*snap);
    EXPECT_EQ(csr->vertex_ids, ids);
    EXPECT_EQ(csr->version, snap->info.version);
    const std::size_t n = ids.size();
    ASSERT_EQ(csr->row_offsets.size(), n + 1);
    EXPECT_EQ(csr->row_offsets.front(), 0u);
    ASSERT_EQ(csr->row_offsets.back(), csr->cols.size());
    ASSERT_EQ(csr->cols.size(), csr->weights.size());
    pairs = 0;
    for (const Hyperedge& e : snap->edges) pairs += e.tails.size() * e.heads.size();
    EXPECT_EQ(csr->cols.size(), pairs);
    std::vector<double> least(n * n, std::numeric_limits<double>::infinity());
    for (std::size_t v = 0; v < n; ++v) {
      ASSERT_LE(csr->row_offsets[v], csr->row_offsets[v + 1]);
      for (std::uint64_t e = csr->row_offsets[v]; e < csr->row_offsets[v + 1]; ++e) {
        ASSERT_LT(csr->cols[e], n);
        double& cell = least[v * n + csr->cols[e]];
        cell = std::min(cell, static_cast<double>(csr->weights[e]));
      }
    }
    EXPECT_EQ(least, w);
  };
  check_csr("ids 0..n-1 but 3: rows from a table");
  // A live vertex id far beyond the vertex count: rows found by a search instead.
  std::vector<Edit> far(1100, AddVertex{});
  ASSERT_TRUE(apply(far).ok());
  std::vector<Edit> sparse;
  for (std::uint64_t v = 6; v < 1105; ++v) sparse.push_back(DeleteVertex{v});
  sparse.push_back(AddEdge{{1105}, {0, 2}, 0.5});
  ASSERT_TRUE(apply(sparse).ok());
  check_csr("a vertex id of 1105 among 6: rows from a search");
  // Limits and weights as to_dense words them.
  expect_error(store_.to_csr("g", pairs - 1).status(), absl::StatusCode::kResourceExhausted,
               absl::StrCat("graph \"g\": the graph has ", pairs,
                            " (tail, head) pairs, more than the limit of ", pairs - 1));
  ASSERT_TRUE(apply({SetWeight{0, -1e39}}).ok());
  expect_error(store_.to_csr("g", 1000).status(), absl::StatusCode::kInvalidArgument,
               "edge 0 has weight -1e+39, which is beyond");
  EXPECT_EQ(store_.to_csr("absent", 1000).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(GraphStoreTest, ToDenseErrors) {
  expect_error(store_.to_dense("g", kernels::DType::kF32, 24).status(),
               absl::StatusCode::kResourceExhausted,
               "graph \"g\": the graph has 5 vertices: its dense matrix would have 5x5 elements, "
               "more than the limit of 24");
  expect_error(store_.to_dense("g", kernels::DType::kF64, 100).status(),
               absl::StatusCode::kInvalidArgument, "dtype = f64");

  ASSERT_TRUE(apply({SetWeight{2, 2.5}}).ok());
  EXPECT_TRUE(store_.to_dense("g", kernels::DType::kF32, 100).ok());
  expect_error(store_.to_dense("g", kernels::DType::kI32, 100).status(),
               absl::StatusCode::kInvalidArgument, "edge 2 has weight 2.5");
  ASSERT_TRUE(
      apply({SetWeight{2, kernels::kI32MaxAbsWeight}, SetWeight{1, -kernels::kI32MaxAbsWeight}})
          .ok());
  absl::StatusOr<DenseGraph> ok = store_.to_dense("g", kernels::DType::kI32, 100);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(decode<std::int32_t>(ok->weights)[3 * 5 + 0], kernels::kI32MaxAbsWeight);
  ASSERT_TRUE(apply({SetWeight{1, -double(kernels::kI32MaxAbsWeight) - 1}}).ok());
  expect_error(store_.to_dense("g", kernels::DType::kI32, 100).status(),
               absl::StatusCode::kInvalidArgument, "edge 1 has weight -1073741824");
  ASSERT_TRUE(apply({SetWeight{1, 0}, SetWeight{0, 1e39}}).ok());
  EXPECT_TRUE(store_.to_dense("g", kernels::DType::kI32, 100).status().code() ==
              absl::StatusCode::kInvalidArgument);
  expect_error(store_.to_dense("g", kernels::DType::kF32, 100).status(),
               absl::StatusCode::kInvalidArgument, "edge 0 has weight 1e+39, which is beyond");
}

// ---- journal ----------------------------------------------------------------------------

/// Replays every change on its own copies, as a write-ahead log replayed at startup (or a
/// device mirror) would; can be told to refuse the next change.
class ReplayJournal : public GraphJournal {
 public:
  absl::Status on_create(const GraphSnapshot& graph) override {
    if (absl::Status s = take_refusal(); !s.ok()) return s;
    std::vector<Hyperedge> edges = graph.edges;
    // Ids are dense right after creation, so the snapshot recreates the same graph.
    absl::StatusOr<GraphState> state =
        GraphState::create(graph.info.num_vertices, std::move(edges), GraphLimits{});
    if (!state.ok()) return state.status();
    graphs.insert_or_assign(graph.info.graph_id, *std::move(state));
    return absl::OkStatus();
  }
  absl::Status on_apply(const std::string& graph_id, std::span<const Edit> edits,
                        const ApplyResult& result) override {
    if (absl::Status s = take_refusal(); !s.ok()) return s;
    absl::StatusOr<ApplyResult> replayed = graphs.at(graph_id).apply(edits, GraphLimits{});
    if (!replayed.ok()) return replayed.status();
    EXPECT_EQ(*replayed, result);
    return absl::OkStatus();
  }
  absl::Status on_remove(const std::string& graph_id) override {
    if (absl::Status s = take_refusal(); !s.ok()) return s;
    graphs.erase(graph_id);
    return absl::OkStatus();
  }
  absl::Status take_refusal() {
    if (!refuse_next) return absl::OkStatus();
    refuse_next = false;
    return absl::UnavailableError("log is full");
  }

  bool refuse_next = false;
  std::map<std::string, GraphState> graphs;
};

/// Counts the committed changes the feed announces, by kind.
class ChangeCounter final : public GraphSubscriber {
 public:
  void on_change(const GraphChange& change) override { ++counts[static_cast<int>(change.kind)]; }
  std::map<int, int> counts;
};

TEST(GraphStoreJournalTest, SeesEveryChangeAndCanRefuseIt) {
  ReplayJournal log;
  ChangeCounter feed;
  GraphStore::Options options;
  options.journal = &log;
  options.subscribers.push_back(&feed);
  GraphStore store(options);

  log.refuse_next = true;
  expect_error(store.create("g", 3, {}).status(), absl::StatusCode::kUnavailable, "log is full");
  EXPECT_EQ(store.size(), 0u);
  ASSERT_TRUE(store.create("g", 3, {edge({0}, {1, 2}, 1)}).ok());

  std::vector<Edit> batch = {AddVertex{}, AddEdge{{3}, {0}, 2}, DecomposeVertex{0, {0}, 5}};
  ASSERT_TRUE(store.apply("g", std::nullopt, batch).ok());
  const GraphSnapshot before = *store.get("g");
  log.refuse_next = true;
  std::vector<Edit> more = {DeleteVertex{1}, SetWeight{0, 9}};
  expect_error(store.apply("g", std::nullopt, more).status(), absl::StatusCode::kUnavailable,
               "log is full");
  EXPECT_EQ(*store.get("g"), before);  // refused: rolled back
  ASSERT_TRUE(store.apply("g", std::nullopt, more).ok());
  // Failing edits never reach the journal (the replay would fail and say so).
  EXPECT_FALSE(store.apply("g", std::nullopt, std::vector<Edit>{DeleteEdge{99}}).ok());

  EXPECT_EQ(log.graphs.at("g").snapshot("g"), *store.get("g"));
  // Subscribers hear only what committed: one create and two batches so far.
  EXPECT_EQ(feed.counts, (std::map<int, int>{{static_cast<int>(GraphChange::Kind::kCreate), 1},
                                             {static_cast<int>(GraphChange::Kind::kApply), 2}}));

  log.refuse_next = true;
  EXPECT_EQ(store.remove("g").code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(store.get("g").ok());
  ASSERT_TRUE(store.remove("g").ok());
  EXPECT_TRUE(log.graphs.empty());
  EXPECT_EQ(feed.counts[static_cast<int>(GraphChange::Kind::kRemove)], 1);
}

}  // namespace
}  // namespace gcompute::server
