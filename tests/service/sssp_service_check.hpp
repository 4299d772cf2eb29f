// SPDX-License-Identifier: Apache-2.0
// Sssp through the service, one scenario per backend (CPU in test_service_sssp, CUDA in
// test_service_jobs_gpu): edge lists of ragged sizes with negative edges and an unreachable
// part, and a stored graph whose vertex ids are not 0..n-1. Weights are integers, so the f32
// distances must equal a plain Bellman-Ford in double exactly; parents are checked edge by edge
// and followed back to the source.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "service_fixture.hpp"
#include "stored_graph_apsp_check.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {

struct WeightedEdge {
  std::int64_t src, dst;
  double w;
};

/// Bellman-Ford in double over the edge list (no negative cycle reachable from `s`).
inline std::vector<double> bellman_ford_reference(std::int64_t n,
                                                  const std::vector<WeightedEdge>& edges,
                                                  std::int64_t s) {
  std::vector<double> d(static_cast<std::size_t>(n), std::numeric_limits<double>::infinity());
  d[s] = 0;
  for (std::int64_t round = 0; round < n; ++round) {
    bool changed = false;
    for (const WeightedEdge& e : edges) {
      if (d[e.src] + e.w < d[e.dst]) {
        d[e.dst] = d[e.src] + e.w;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return d;
}

/// Distances equal to `ref`; every reachable row's parent is joined to it by an edge that
/// makes its distance exact; following parents reaches `s`; unreachable rows have -1.
inline void expect_sssp_answer(const v1::SsspResponse& resp, std::int64_t n,
                               const std::vector<WeightedEdge>& edges, std::int64_t s,
                               const std::vector<double>& ref) {
  const auto d = values_of<float>(resp.distances().inline_());
  const auto p = values_of<std::int32_t>(resp.parents().inline_());
  ASSERT_EQ(static_cast<std::int64_t>(d.size()), n);
  ASSERT_EQ(static_cast<std::int64_t>(p.size()), n);
  std::map<std::pair<std::int64_t, std::int64_t>, double> least;
  for (const WeightedEdge& e : edges) {
    auto [it, fresh] = least.try_emplace({e.src, e.dst}, e.w);
    if (!fresh) it->second = std::min(it->second, e.w);
  }
  std::int64_t reachable = 0;
  for (std::int64_t v = 0; v < n; ++v) {
    SCOPED_TRACE(::testing::Message() << "row " << v);
    if (std::isinf(ref[v])) {
      EXPECT_TRUE(std::isinf(d[v]) && d[v] > 0) << d[v];
      EXPECT_EQ(p[v], -1);
      continue;
    }
    ++reachable;
    ASSERT_EQ(static_cast<double>(d[v]), ref[v]);
    if (v == s) {
      EXPECT_EQ(p[v], s);
      continue;
    }
    ASSERT_GE(p[v], 0);
    ASSERT_LT(p[v], n);
    auto edge = least.find({p[v], v});
    ASSERT_NE(edge, least.end()) << "no edge " << p[v] << " -> " << v;
    EXPECT_EQ(ref[p[v]] + edge->second, ref[v]);
    std::int64_t at = v, steps = 0;
    while (at != s && steps++ <= n) at = p[at];
    EXPECT_EQ(at, s) << "the parents of row " << v << " do not lead to the source";
  }
  EXPECT_EQ(resp.reachable(), reachable);
}

/// Random edges with integer weights and potentials (negative edges, no negative cycle) among
/// the first `reach` vertices, and edges only among the rest (unreachable from vertex 0).
inline std::vector<WeightedEdge> sssp_test_edges(gcompute::testing::Rng& rng, std::int64_t n,
                                                 std::int64_t reach, std::int64_t m) {
  std::vector<double> pot(static_cast<std::size_t>(n));
  for (double& x : pot) x = static_cast<double>(rng.uniform_int(0, 20));
  std::vector<WeightedEdge> edges;
  for (std::int64_t e = 0; e < m; ++e) {
    const bool inside = reach == n || rng.uniform_int(0, 3) != 0;
    const std::int64_t lo = inside ? 0 : reach, hi = inside ? reach - 1 : n - 1;
    if (lo > hi) continue;
    const std::int64_t a = rng.uniform_int(lo, hi), b = rng.uniform_int(lo, hi);
    edges.push_back({a, b, static_cast<double>(rng.uniform_int(0, 30)) + pot[a] - pot[b]});
  }
  return edges;
}

inline v1::SsspRequest sssp_edges_request(std::int64_t n, const std::vector<WeightedEdge>& edges,
                                          std::int64_t s) {
  v1::SsspRequest req;
  v1::EdgeList* list = req.mutable_edges();
  list->set_num_vertices(n);
  for (const WeightedEdge& e : edges) {
    list->add_src(e.src);
    list->add_dst(e.dst);
    list->add_weight(e.w);
  }
  req.set_source(s);
  return req;
}

inline grpc::Status call_sssp(TestServer& ts, const v1::SsspRequest& req, v1::SsspResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return ts.stub->Sssp(&ctx, req, resp);
}

/// Edge lists of 1, 2, 97 and 600 vertices (a quarter of the larger ones unreachable).
inline void expect_sssp_of_edge_lists(TestServer& ts, gcompute::testing::Rng& rng) {
  for (const std::int64_t n : {1, 2, 97, 600}) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    const std::int64_t reach = n < 4 ? n : n - n / 4;
    const auto edges = sssp_test_edges(rng, n, reach, 4 * n);
    const std::int64_t s = rng.uniform_int(0, reach - 1);
    v1::SsspResponse resp;
    ASSERT_TRUE(is_ok(call_sssp(ts, sssp_edges_request(n, edges, s), &resp)));
    EXPECT_EQ(resp.vertex_ids_size(), 0);
    expect_sssp_answer(resp, n, edges, s, bellman_ford_reference(n, edges, s));
  }
}

/// A stored graph with vertices deleted (ids no longer 0..n-1) and one hyperedge: rows follow
/// the ids GetGraph lists, distances equal Bellman-Ford over its expanded edges.
inline void expect_sssp_of_stored_graph(TestServer& ts, gcompute::testing::Rng& rng,
                                        const std::string& id) {
  const std::int64_t n0 = 70;
  v1::CreateGraphRequest create;
  create.set_graph_id(id);
  create.set_num_vertices(n0);
  for (const WeightedEdge& e : sssp_test_edges(rng, n0, n0, 5 * n0)) {
    auto* edge = create.add_edges();
    edge->add_tails(e.src);
    edge->add_heads(e.dst);
    edge->set_weight(std::abs(e.w) + 1);  // >= 1: the -1 hyperedge closes no negative cycle
  }
  auto* hyper = create.add_edges();
  for (int v : {1, 2}) hyper->add_tails(v);
  for (int v : {60, 61, 62}) hyper->add_heads(v);
  hyper->set_weight(-1);
  {
    grpc::ClientContext ctx;
    v1::CreateGraphResponse created;
    ASSERT_TRUE(is_ok(ts.stub->CreateGraph(&ctx, create, &created)));
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyEditsRequest edits;
    edits.set_graph_id(id);
    for (int v : {0, 5, 33}) edits.add_edits()->mutable_delete_vertex()->set_vertex_id(v);
    v1::ApplyEditsResponse applied;
    ASSERT_TRUE(is_ok(ts.stub->ApplyEdits(&ctx, edits, &applied)));
  }
  v1::GetGraphResponse snap;
  {
    grpc::ClientContext ctx;
    v1::GetGraphRequest get;
    get.set_graph_id(id);
    ASSERT_TRUE(is_ok(ts.stub->GetGraph(&ctx, get, &snap)));
  }
  const auto n = static_cast<std::int64_t>(snap.vertices_size());
  const std::vector<double> w = dense_weights_of(snap);
  std::vector<WeightedEdge> edges;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (!std::isinf(w[i * n + j])) edges.push_back({i, j, w[i * n + j]});
    }
  }
  const std::int64_t source_row = 1;  // vertex id 2 (0 was deleted)
  v1::SsspRequest req;
  req.set_graph_id(id);
  req.set_source(static_cast<std::int64_t>(snap.vertices(source_row)));
  v1::SsspResponse resp;
  ASSERT_TRUE(is_ok(call_sssp(ts, req, &resp)));
  ASSERT_EQ(resp.vertex_ids_size(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(static_cast<std::uint64_t>(resp.vertex_ids(static_cast<int>(i))),
              snap.vertices(static_cast<int>(i)));
  }
  expect_sssp_answer(resp, n, edges, source_row, bellman_ford_reference(n, edges, source_row));
}

}  // namespace gcompute::service_test
