// SPDX-License-Identifier: Apache-2.0
// GraphStore against a naive reference model over thousands of random edits, valid and not;
// its change feed against a replica built from deltas alone.
//
// The reference copies the whole graph per batch and scans every edge to delete a vertex:
// slow and obviously right. Both must agree on every status code, every EditResult, every
// snapshot and every dense matrix; the store's incidence sets are checked after each batch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "store/graphs/graph_store.hpp"

namespace gcompute::server {
namespace {

using Code = absl::StatusCode;

struct RefGraph {
  std::set<std::uint64_t> vertices;
  std::map<std::uint64_t, Hyperedge> edges;
  std::uint64_t next_vertex = 0;
  std::uint64_t next_edge = 0;
  std::uint64_t version = 1;
};

bool has(const std::vector<std::uint64_t>& ids, std::uint64_t v) {
  return std::find(ids.begin(), ids.end(), v) != ids.end();
}

bool distinct(std::vector<std::uint64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

/// One edit on the reference, checks in the documented order. Returns the status code.
Code ref_edit(RefGraph& g, const Edit& edit, const GraphLimits& limits, EditResult& r) {
  if (std::holds_alternative<AddVertex>(edit)) {
    if (g.vertices.size() >= limits.max_vertices) return Code::kResourceExhausted;
    r.vertex_id = g.next_vertex++;
    g.vertices.insert(r.vertex_id);
  } else if (auto* dv = std::get_if<DeleteVertex>(&edit)) {
    if (!g.vertices.contains(dv->vertex_id)) return Code::kNotFound;
    for (auto it = g.edges.begin(); it != g.edges.end();) {
      Hyperedge& e = it->second;
      std::erase(e.tails, dv->vertex_id);
      std::erase(e.heads, dv->vertex_id);
      if (e.tails.empty() || e.heads.empty()) {
        r.deleted_edge_ids.push_back(it->first);
        it = g.edges.erase(it);
      } else {
        ++it;
      }
    }
    g.vertices.erase(dv->vertex_id);
  } else if (auto* ae = std::get_if<AddEdge>(&edit)) {
    if (ae->tails.empty() || ae->heads.empty()) return Code::kInvalidArgument;
    for (const auto* ids : {&ae->tails, &ae->heads}) {
      for (std::uint64_t v : *ids) {
        if (!g.vertices.contains(v)) return Code::kNotFound;
      }
      if (!distinct(*ids)) return Code::kInvalidArgument;
    }
    if (!std::isfinite(ae->weight)) return Code::kInvalidArgument;
    if (g.edges.size() >= limits.max_edges) return Code::kResourceExhausted;
    r.edge_id = g.next_edge++;
    g.edges[r.edge_id] = Hyperedge{r.edge_id, ae->tails, ae->heads, ae->weight};
  } else if (auto* de = std::get_if<DeleteEdge>(&edit)) {
    if (g.edges.erase(de->edge_id) == 0) return Code::kNotFound;
  } else if (auto* sw = std::get_if<SetWeight>(&edit)) {
    if (!g.edges.contains(sw->edge_id)) return Code::kNotFound;
    if (!std::isfinite(sw->weight)) return Code::kInvalidArgument;
    g.edges[sw->edge_id].weight = sw->weight;
  } else {
    const auto& dc = std::get<DecomposeVertex>(edit);
    const std::uint64_t v = dc.vertex_id;
    if (!g.vertices.contains(v)) return Code::kNotFound;
    for (std::uint64_t e : dc.move_edge_ids) {
      auto it = g.edges.find(e);
      if (it == g.edges.end()) return Code::kNotFound;
      if (!has(it->second.tails, v) && !has(it->second.heads, v)) return Code::kInvalidArgument;
    }
    if (!distinct(dc.move_edge_ids)) return Code::kInvalidArgument;
    if (!std::isfinite(dc.joining_weight)) return Code::kInvalidArgument;
    if (g.vertices.size() >= limits.max_vertices) return Code::kResourceExhausted;
    if (g.edges.size() >= limits.max_edges) return Code::kResourceExhausted;
    const std::uint64_t w = g.next_vertex++;
    g.vertices.insert(w);
    for (std::uint64_t e : dc.move_edge_ids) {
      Hyperedge& he = g.edges[e];
      std::replace(he.tails.begin(), he.tails.end(), v, w);
      std::replace(he.heads.begin(), he.heads.end(), v, w);
    }
    const std::uint64_t j = g.next_edge++;
    g.edges[j] = Hyperedge{j, {v}, {w}, dc.joining_weight};
    r.vertex_id = w;
    r.edge_id = j;
  }
  return Code::kOk;
}

/// A batch on the reference: on a copy, kept only if every edit succeeds.
Code ref_apply(RefGraph& g, std::optional<std::uint64_t> expected, const std::vector<Edit>& edits,
               const GraphLimits& limits, ApplyResult& out) {
  if (expected.has_value() && *expected != g.version) return Code::kAborted;
  out = ApplyResult{g.version, {}};
  if (edits.empty()) return Code::kOk;
  RefGraph copy = g;
  for (const Edit& e : edits) {
    EditResult r;
    if (Code c = ref_edit(copy, e, limits, r); c != Code::kOk) return c;
    out.results.push_back(std::move(r));
  }
  ++copy.version;
  out.version = copy.version;
  g = std::move(copy);
  return Code::kOk;
}

GraphSnapshot ref_snapshot(const RefGraph& g, const std::string& id) {
  GraphSnapshot s;
  s.info = GraphInfo{id, g.version, g.vertices.size(), g.edges.size()};
  s.vertices.assign(g.vertices.begin(), g.vertices.end());
  for (const auto& [eid, e] : g.edges) s.edges.push_back(e);
  return s;
}

/// Random edits drawn against the graph as the earlier edits of the batch leave it, with an
/// occasional single fault (a missing or repeated id, a non-incident edge, a bad weight).
class EditGenerator {
 public:
  explicit EditGenerator(std::uint64_t seed) : rng_(seed) {}

  std::vector<Edit> batch(const RefGraph& graph, const GraphLimits& limits) {
    RefGraph scratch = graph;
    std::vector<Edit> edits;
    const int n = pick(0, 7) == 0 ? 0 : pick(1, 6);
    for (int i = 0; i < n; ++i) {
      edits.push_back(edit(scratch, limits));
      EditResult ignored;
      ref_edit(scratch, edits.back(), limits, ignored);  // failures leave scratch as it was
    }
    return edits;
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

 private:
  std::uint64_t any_vertex(const RefGraph& g) {
    if (g.vertices.empty()) return missing_vertex(g);
    auto it = g.vertices.begin();
    std::advance(it, pick(0, static_cast<int>(g.vertices.size()) - 1));
    return *it;
  }
  std::uint64_t missing_vertex(const RefGraph& g) {
    // Never created, or created and deleted since.
    for (int tries = 0; tries < 8; ++tries) {
      std::uint64_t v = static_cast<std::uint64_t>(pick(0, static_cast<int>(g.next_vertex) + 3));
      if (!g.vertices.contains(v)) return v;
    }
    return g.next_vertex + 100;
  }
  std::uint64_t any_edge(const RefGraph& g) {
    if (g.edges.empty()) return missing_edge(g);
    auto it = g.edges.begin();
    std::advance(it, pick(0, static_cast<int>(g.edges.size()) - 1));
    return it->first;
  }
  std::uint64_t missing_edge(const RefGraph& g) {
    for (int tries = 0; tries < 8; ++tries) {
      std::uint64_t e = static_cast<std::uint64_t>(pick(0, static_cast<int>(g.next_edge) + 3));
      if (!g.edges.contains(e)) return e;
    }
    return g.next_edge + 100;
  }
  double weight(bool fault) {
    if (fault) {
      switch (pick(0, 2)) {
        case 0:
          return std::numeric_limits<double>::quiet_NaN();
        case 1:
          return std::numeric_limits<double>::infinity();
        default:
          return -std::numeric_limits<double>::infinity();
      }
    }
    // Mostly small integers (so i32 conversion works and parallel edges tie), some fractions.
    if (chance(0.8)) return pick(-4, 20);
    return pick(-400, 2000) / 8.0;
  }
  /// 1..3 distinct existing vertices (or none/missing/repeated as the fault says).
  std::vector<std::uint64_t> vertex_set(const RefGraph& g, int fault) {
    if (fault == 1) return {};
    std::vector<std::uint64_t> ids;
    const int want = pick(1, 3);
    for (int k = 0; k < want * 3 && static_cast<int>(ids.size()) < want; ++k) {
      if (g.vertices.empty()) break;
      std::uint64_t v = any_vertex(g);
      if (!has(ids, v)) ids.push_back(v);
    }
    if (ids.empty()) ids.push_back(missing_vertex(g));  // no vertices at all: NOT_FOUND
    if (fault == 2)
      ids.insert(ids.begin() + pick(0, static_cast<int>(ids.size())), missing_vertex(g));
    if (fault == 3) ids.insert(ids.begin() + pick(0, static_cast<int>(ids.size())), ids[0]);
    return ids;
  }

  Edit edit(const RefGraph& g, const GraphLimits& limits) {
    const bool fault = chance(0.03);
    // Near a limit, mostly shrink, so that the limits are hit only now and then.
    if (g.vertices.size() + 2 >= limits.max_vertices && chance(0.5)) {
      return DeleteVertex{any_vertex(g)};
    }
    if (g.edges.size() + 2 >= limits.max_edges && chance(0.5)) return DeleteEdge{any_edge(g)};
    switch (pick(0, 12)) {
      case 0:
      case 1:
        return AddVertex{};
      case 2:
        return DeleteVertex{fault ? missing_vertex(g) : any_vertex(g)};
      case 3:
      case 4:
      case 5:
      case 6: {
        // fault: 0 none, 1 empty, 2 missing, 3 repeated, 4 weight; in tails or heads.
        const int kind = fault ? pick(1, 4) : 0;
        const bool in_tails = chance(0.5);
        AddEdge e;
        e.tails = vertex_set(g, kind != 4 && in_tails ? kind : 0);
        e.heads = vertex_set(g, kind != 4 && !in_tails ? kind : 0);
        if (chance(0.1) && !e.tails.empty() && kind == 0) e.heads = e.tails;  // self-loops
        e.weight = weight(kind == 4);
        return e;
      }
      case 7:
        return DeleteEdge{fault ? missing_edge(g) : any_edge(g)};
      case 8:
      case 9: {
        const bool bad_weight = fault && chance(0.5);
        return SetWeight{fault && !bad_weight ? missing_edge(g) : any_edge(g), weight(bad_weight)};
      }
      default: {
        DecomposeVertex d;
        d.vertex_id = any_vertex(g);
        std::vector<std::uint64_t> incident;
        for (const auto& [id, e] : g.edges) {
          if (has(e.tails, d.vertex_id) || has(e.heads, d.vertex_id)) incident.push_back(id);
        }
        for (std::uint64_t e : incident) {
          if (chance(0.5)) d.move_edge_ids.push_back(e);
        }
        std::shuffle(d.move_edge_ids.begin(), d.move_edge_ids.end(), rng_);
        const int kind = fault ? pick(0, 4) : -1;
        const auto at = [&] {
          return d.move_edge_ids.begin() + pick(0, static_cast<int>(d.move_edge_ids.size()));
        };
        if (kind == 0) d.vertex_id = missing_vertex(g);
        if (kind == 1) d.move_edge_ids.insert(at(), missing_edge(g));
        if (kind == 2 && !d.move_edge_ids.empty()) d.move_edge_ids.insert(at(), d.move_edge_ids[0]);
        if (kind == 3) {
          for (const auto& [id, e] : g.edges) {
            if (!has(incident, id)) {
              d.move_edge_ids.insert(at(), id);
              break;
            }
          }
        }
        d.joining_weight = weight(kind == 4);
        return d;
      }
    }
  }

  std::mt19937_64 rng_;
};

void expect_dense_equal(const GraphStore& store, const RefGraph& ref, const std::string& id) {
  std::map<std::uint64_t, std::size_t> index;
  for (std::uint64_t v : ref.vertices) index.emplace(v, index.size());
  const std::size_t n = index.size();
  std::vector<double> w(n * n, std::numeric_limits<double>::infinity());
  bool integral = true;
  for (const auto& [eid, e] : ref.edges) {
    integral = integral && e.weight == std::floor(e.weight);
    for (std::uint64_t t : e.tails) {
      for (std::uint64_t h : e.heads) {
        double& cell = w[index.at(t) * n + index.at(h)];
        cell = std::min(cell, e.weight);
      }
    }
  }
  absl::StatusOr<DenseGraph> f = store.to_dense(id, kernels::DType::kF32, 1 << 16);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ(f->vertex_ids, std::vector<std::uint64_t>(ref.vertices.begin(), ref.vertices.end()));
  ASSERT_EQ(f->weights.size(), n * n * 4);
  std::vector<float> fw(n * n);
  std::memcpy(fw.data(), f->weights.data(), f->weights.size());
  for (std::size_t k = 0; k < n * n; ++k) ASSERT_EQ(fw[k], static_cast<float>(w[k])) << k;

  absl::StatusOr<DenseGraph> i = store.to_dense(id, kernels::DType::kI32, 1 << 16);
  if (!integral) {
    ASSERT_EQ(i.status().code(), Code::kInvalidArgument) << i.status();
    return;
  }
  ASSERT_TRUE(i.ok()) << i.status();
  std::vector<std::int32_t> iw(n * n);
  std::memcpy(iw.data(), i->weights.data(), i->weights.size());
  for (std::size_t k = 0; k < n * n; ++k) {
    ASSERT_EQ(iw[k], std::isinf(w[k]) ? kernels::kI32NoEdge : static_cast<std::int32_t>(w[k]));
  }
}

/// A change-feed subscriber that rebuilds each graph from creation snapshots and deltas alone,
/// checking that every delta starts from the state the previous ones left.
class DeltaReplica final : public GraphSubscriber {
 public:
  void on_change(const GraphChange& change) override {
    if (change.kind == GraphChange::Kind::kRemove) {
      graphs.erase(change.graph_id);
      return;
    }
    Replica& g = graphs[change.graph_id];
    if (change.kind == GraphChange::Kind::kCreate) {
      g = Replica{};
      g.vertices.insert(change.graph->vertices.begin(), change.graph->vertices.end());
      for (const Hyperedge& e : change.graph->edges) g.edges[e.id] = e;
    } else {
      ++deltas;
      EXPECT_EQ(change.version, g.version + 1);
      for (const EdgeDelta& d : change.delta->edges) {
        auto it = g.edges.find(d.id);
        EXPECT_EQ(it == g.edges.end() ? std::nullopt : std::optional<Hyperedge>(it->second),
                  d.before)
            << "edge " << d.id;
        EXPECT_NE(d.before, d.after) << "edge " << d.id << " did not change";
        if (d.after) {
          g.edges[d.id] = *d.after;
        } else {
          g.edges.erase(d.id);
        }
      }
      for (std::uint64_t v : change.delta->removed_vertices) EXPECT_EQ(g.vertices.erase(v), 1u);
      for (std::uint64_t v : change.delta->added_vertices) EXPECT_TRUE(g.vertices.insert(v).second);
    }
    g.version = change.version;
  }

  struct Replica {
    std::set<std::uint64_t> vertices;
    std::map<std::uint64_t, Hyperedge> edges;
    std::uint64_t version = 0;
  };
  std::map<std::string, Replica> graphs;
  std::size_t deltas = 0;
};

void expect_replica_equal(const DeltaReplica& replica, const GraphSnapshot& g) {
  const auto& r = replica.graphs.at(g.info.graph_id);
  ASSERT_EQ(r.version, g.info.version);
  ASSERT_EQ(std::vector<std::uint64_t>(r.vertices.begin(), r.vertices.end()), g.vertices);
  std::vector<Hyperedge> edges;
  for (const auto& [id, e] : r.edges) edges.push_back(e);
  ASSERT_EQ(edges, g.edges);
}

class GraphStoreRandomTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(GraphStoreRandomTest, AgreesWithTheReferenceModel) {
  const std::uint64_t seed = GetParam();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  GraphStore::Options options;
  options.limits.max_vertices = 40;  // small, so the limits are hit now and then
  options.limits.max_edges = 60;
  DeltaReplica replica;
  options.subscribers.push_back(&replica);
  GraphStore store(options);
  EditGenerator gen(seed);

  RefGraph ref;
  for (std::uint64_t v = 0; v < 8; ++v) ref.vertices.insert(v);
  ref.next_vertex = 8;
  std::vector<Hyperedge> initial = {{0, {0}, {1}, 1.0}, {0, {1, 2}, {3, 4}, 2.0}};
  for (std::size_t i = 0; i < initial.size(); ++i) {
    ref.edges[i] = initial[i];
    ref.edges[i].id = i;
  }
  ref.next_edge = initial.size();
  ASSERT_TRUE(store.create("r", 8, initial).ok());

  std::map<Code, int> codes;
  std::size_t edits_applied = 0;
  std::size_t cascades = 0;
  for (int step = 0; step < 2500; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    const std::vector<Edit> edits = gen.batch(ref, options.limits);
    std::optional<std::uint64_t> expected;
    if (gen.chance(0.3)) expected = ref.version - (gen.chance(0.1) ? 1 : 0);

    const GraphSnapshot before = *store.get("r");
    ApplyResult want;
    const Code want_code = ref_apply(ref, expected, edits, options.limits, want);
    absl::StatusOr<ApplyResult> got = store.apply("r", expected, edits);
    ++codes[want_code];
    ASSERT_EQ(got.status().code(), want_code) << got.status();
    if (got.ok()) {
      ASSERT_EQ(*got, want);
      edits_applied += edits.size();
      for (const EditResult& r : want.results) cascades += !r.deleted_edge_ids.empty();
    } else {
      ASSERT_EQ(*store.get("r"), before);  // nothing applied
    }
    ASSERT_EQ(*store.get("r"), ref_snapshot(ref, "r"));
    expect_replica_equal(replica, *store.get("r"));
    ASSERT_TRUE(store.check_invariants().ok()) << store.check_invariants();
    if (step % 25 == 0) expect_dense_equal(store, ref, "r");
  }
  // The run must have covered what it claims to.
  std::string summary;
  for (const auto& [code, count] : codes) {
    summary += absl::StrCat(absl::StatusCodeToString(code), "=", count, " ");
  }
  SCOPED_TRACE(summary);
  EXPECT_GT(edits_applied, 5000u);
  EXPECT_GT(replica.deltas, 1000u);
  ASSERT_TRUE(store.remove("r").ok());
  EXPECT_TRUE(replica.graphs.empty());
  EXPECT_GT(cascades, 500u);
  EXPECT_GT(codes[Code::kNotFound], 30);
  EXPECT_GT(codes[Code::kInvalidArgument], 30);
  EXPECT_GT(codes[Code::kAborted], 30);
  EXPECT_GT(codes[Code::kResourceExhausted], 10);
}

INSTANTIATE_TEST_SUITE_P(Seeds, GraphStoreRandomTest, ::testing::Values(1, 2, 3, 20240611));

}  // namespace
}  // namespace gcompute::server
