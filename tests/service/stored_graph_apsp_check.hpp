// SPDX-License-Identifier: Apache-2.0
// One scenario for the APSP cache of stored graphs through the service, run on each backend
// (CPU in test_service_ops, CUDA in test_service_jobs_gpu): Apsp of a stored graph (computed,
// cached), then batches that only add edges, lower weights and add vertices (the next Apsp is
// an update of the cached result), then a deletion (recomputed). Every answer is checked against
// Floyd-Warshall of the graph as GetGraph returns it (integer weights: exact), next hops by
// walking every pair, and the cache's counters say which path answered.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "ops/apsp_cache.hpp"
#include "server.hpp"
#include "service_fixture.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {

/// Dense weights of a GetGraph answer (every tail to every head, least weight), rows in the
/// order of g.vertices().
inline std::vector<double> dense_weights_of(const v1::GetGraphResponse& g) {
  const auto n = static_cast<std::int64_t>(g.vertices_size());
  std::map<std::uint64_t, std::int64_t> index;
  for (std::int64_t i = 0; i < n; ++i) index[g.vertices(static_cast<int>(i))] = i;
  std::vector<double> w(static_cast<std::size_t>(n * n), std::numeric_limits<double>::infinity());
  for (const auto& e : g.edges()) {
    for (std::uint64_t t : e.tails()) {
      for (std::uint64_t h : e.heads()) {
        double& x = w[index.at(t) * n + index.at(h)];
        x = std::min(x, e.weight());
      }
    }
  }
  return w;
}

/// Apsp of the stored graph `id` with next hops, checked exactly against Floyd-Warshall, and
/// ShortestPath (one SSSP, no APSP) for a sample of pairs against the same reference.
inline void expect_stored_apsp(TestServer& ts, const std::string& id) {
  grpc::ClientContext get_ctx;
  v1::GetGraphRequest get;
  get.set_graph_id(id);
  v1::GetGraphResponse snap;
  ASSERT_TRUE(is_ok(ts.stub->GetGraph(&get_ctx, get, &snap)));
  const auto n = static_cast<std::int64_t>(snap.vertices_size());
  const std::vector<double> w = dense_weights_of(snap);
  const std::vector<double> ref = gcompute::testing::floyd_warshall_reference(w, n);

  grpc::ClientContext ctx;
  v1::ApspRequest req;
  req.set_graph_id(id);
  req.set_next_hop(true);
  v1::ApspResponse resp;
  ASSERT_TRUE(is_ok(ts.stub->Apsp(&ctx, req, &resp)));
  const auto d = values_of<float>(resp.distances().inline_());
  const auto next = values_of<std::int32_t>(resp.next_hop().inline_());
  ASSERT_EQ(static_cast<std::int64_t>(d.size()), n * n);
  ASSERT_EQ(static_cast<std::int64_t>(next.size()), n * n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double want = ref[i * n + j];
      ASSERT_EQ(static_cast<double>(d[i * n + j]), want) << "D[" << i << "][" << j << "]";
      if (std::isinf(want) || i == j) continue;
      double length = 0;
      std::int64_t at = i;
      for (std::int64_t steps = 0; at != j; ++steps) {
        ASSERT_LT(steps, n) << "the hops from " << i << " to " << j << " loop";
        const std::int32_t hop = next[at * n + j];
        ASSERT_TRUE(hop >= 0 && hop < n) << "N[" << at << "][" << j << "] = " << hop;
        ASSERT_FALSE(std::isinf(w[at * n + hop])) << "no edge " << at << " -> " << hop;
        length += w[at * n + hop];
        at = hop;
      }
      ASSERT_EQ(length, want) << "the path by next hops from " << i << " to " << j;
    }
  }
  for (std::int64_t k = 0; k < 40; ++k) {
    const std::int64_t i = (k * 37) % n, j = (k * 101 + 5) % n;
    v1::ShortestPathRequest sp;
    sp.mutable_graph()->set_graph_id(id);
    sp.set_source(static_cast<std::int64_t>(snap.vertices(static_cast<int>(i))));
    sp.set_target(static_cast<std::int64_t>(snap.vertices(static_cast<int>(j))));
    v1::ShortestPathResponse path;
    grpc::ClientContext pctx;
    ASSERT_TRUE(is_ok(ts.stub->ShortestPath(&pctx, sp, &path)));
    const double want = ref[i * n + j];
    ASSERT_EQ(path.reachable(), !std::isinf(want)) << i << " -> " << j;
    if (!path.reachable()) continue;
    ASSERT_EQ(path.length(), want) << i << " -> " << j;
    ASSERT_GE(path.vertices_size(), 1);
    EXPECT_EQ(path.vertices(0), sp.source());
    EXPECT_EQ(path.vertices(path.vertices_size() - 1), sp.target());
    std::map<std::uint64_t, std::int64_t> row;
    for (std::int64_t r = 0; r < n; ++r) row[snap.vertices(static_cast<int>(r))] = r;
    double length = 0;
    for (int h = 0; h + 1 < path.vertices_size(); ++h) {
      const double x = w[row.at(path.vertices(h)) * n + row.at(path.vertices(h + 1))];
      ASSERT_FALSE(std::isinf(x)) << "hop " << path.vertices(h) << " -> " << path.vertices(h + 1);
      length += x;
    }
    ASSERT_EQ(length, want) << "the path's edges from " << i << " to " << j;
  }
}

inline void apply_edits(TestServer& ts, const v1::ApplyEditsRequest& edits) {
  grpc::ClientContext ctx;
  v1::ApplyEditsResponse resp;
  ASSERT_TRUE(is_ok(ts.stub->ApplyEdits(&ctx, edits, &resp)));
}

inline void expect_incremental_stored_apsp(TestServer& ts, gcompute::testing::Rng& rng) {
  const std::string id = "cached";
  const std::uint64_t n = 150;  // more than one 128-vertex tile
  v1::CreateGraphRequest create;
  create.set_graph_id(id);
  create.set_num_vertices(n);
  for (int k = 0; k < 900; ++k) {
    auto* e = create.add_edges();
    e->add_tails(static_cast<std::uint64_t>(rng.uniform_int(0, n - 1)));
    const auto head = static_cast<std::uint64_t>(rng.uniform_int(0, n - 1));
    e->add_heads(head);
    if (k % 50 == 0) e->add_heads((head + 1) % n);  // a hyperedge with two heads
    e->set_weight(static_cast<double>(rng.uniform_int(5, 40)));
  }
  {
    grpc::ClientContext ctx;
    v1::CreateGraphResponse created;
    ASSERT_TRUE(is_ok(ts.stub->CreateGraph(&ctx, create, &created)));
  }
  server::ApspCache* cache = ts.server->apsp_cache();
  ASSERT_NE(cache, nullptr);
  const server::ApspCache::Stats before = cache->stats();
  ASSERT_NO_FATAL_FAILURE(expect_stored_apsp(ts, id));  // computed and cached
  for (int batch = 0; batch < 3; ++batch) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch);
    v1::ApplyEditsRequest edits;
    edits.set_graph_id(id);
    for (int k = 0; k < 6; ++k) {
      auto* add = edits.add_edits()->mutable_add_edge();
      add->add_tails(static_cast<std::uint64_t>(rng.uniform_int(0, n - 1)));
      add->add_heads(static_cast<std::uint64_t>(rng.uniform_int(0, n - 1)));
      add->set_weight(static_cast<double>(rng.uniform_int(1, 6)));
    }
    if (batch == 1) edits.add_edits()->mutable_add_vertex();  // a new vertex, id n
    if (batch == 2) {                                         // joined to the graph
      auto* in = edits.add_edits()->mutable_add_edge();
      in->add_tails(3);
      in->add_heads(n);
      in->set_weight(2);
      auto* out = edits.add_edits()->mutable_add_edge();
      out->add_tails(n);
      out->add_heads(5);
      out->set_weight(1);
    }
    ASSERT_NO_FATAL_FAILURE(apply_edits(ts, edits));
    ASSERT_NO_FATAL_FAILURE(expect_stored_apsp(ts, id));  // an update of the cached result
  }
  const server::ApspCache::Stats updated = cache->stats();
  EXPECT_EQ(updated.misses - before.misses, 1u);
  EXPECT_EQ(updated.incremental - before.incremental, 3u);
  // A deletion: recomputed.
  v1::ApplyEditsRequest del;
  del.set_graph_id(id);
  del.add_edits()->mutable_delete_vertex()->set_vertex_id(7);
  ASSERT_NO_FATAL_FAILURE(apply_edits(ts, del));
  ASSERT_NO_FATAL_FAILURE(expect_stored_apsp(ts, id));
  EXPECT_EQ(cache->stats().misses - updated.misses, 1u);
  ASSERT_NO_FATAL_FAILURE(expect_stored_apsp(ts, id));  // and now a hit
  EXPECT_GE(cache->stats().hits - updated.hits, 1u);
}

}  // namespace gcompute::service_test
