// SPDX-License-Identifier: Apache-2.0
// Test graphs for the SSSP kernels (CPU and GPU): random edge lists turned into CSR, and an
// independent reference (plain Bellman-Ford in double over the edge list) with the checks a
// result must pass. Weights are integers, so f32 sums are exact and distances must match the
// reference exactly.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "gcompute/kernels/sssp_types.hpp"
#include "support/random.hpp"

namespace gcompute::testing {

struct SsspEdge {
  std::int64_t src, dst;
  double w;
};

/// A graph as an edge list and the CSR built from it (edges grouped by source, in list order).
struct SsspGraph {
  std::int64_t n = 0;
  std::vector<SsspEdge> edges;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> cols;
  std::vector<float> weights;

  void build_csr() {
    offsets.assign(static_cast<std::size_t>(n + 1), 0);
    for (const SsspEdge& e : edges) ++offsets[e.src + 1];
    std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
    cols.assign(edges.size(), 0);
    weights.assign(edges.size(), 0.0f);
    std::vector<std::uint64_t> next(offsets.begin(), offsets.end() - 1);
    for (const SsspEdge& e : edges) {
      const std::uint64_t at = next[e.src]++;
      cols[at] = static_cast<std::uint32_t>(e.dst);
      weights[at] = static_cast<float>(e.w);
    }
  }
  kernels::CsrView view() const {
    return {n, static_cast<std::int64_t>(cols.size()), offsets.data(), cols.data(), weights.data()};
  }
};

/// `m` random edges (self-loops and parallel edges included) with integer weights in [lo, hi].
inline SsspGraph random_sssp_graph(Rng& rng, std::int64_t n, std::int64_t m, int lo, int hi) {
  SsspGraph g;
  g.n = n;
  for (std::int64_t e = 0; e < m; ++e) {
    g.edges.push_back({rng.uniform_int(0, n - 1), rng.uniform_int(0, n - 1),
                       static_cast<double>(rng.uniform_int(lo, hi))});
  }
  return g;
}

/// w'(u, v) = w(u, v) + p(u) - p(v) with integer p in [0, max_p]: negative edges, the same
/// shortest paths, every cycle keeps its length (so no negative cycle appears).
inline void apply_potentials(Rng& rng, SsspGraph& g, int max_p) {
  std::vector<double> p(static_cast<std::size_t>(g.n));
  for (double& x : p) x = static_cast<double>(rng.uniform_int(0, max_p));
  for (SsspEdge& e : g.edges) e.w += p[e.src] - p[e.dst];
}

/// Adds a cycle through `len` distinct random vertices of [lo, hi) whose integer weights lie
/// in [-spread, spread] except the last, which makes their sum `total`; returns its vertices.
inline std::vector<std::int64_t> add_cycle(Rng& rng, SsspGraph& g, std::int64_t lo, std::int64_t hi,
                                           std::int64_t len, int total, int spread) {
  std::vector<std::int64_t> pool(static_cast<std::size_t>(hi - lo));
  std::iota(pool.begin(), pool.end(), lo);
  std::shuffle(pool.begin(), pool.end(), rng.engine());
  pool.resize(static_cast<std::size_t>(len));
  for (std::int64_t i = 0; i < len; ++i) {
    double w = static_cast<double>(rng.uniform_int(-spread, spread));
    if (i == len - 1) {
      double sum = 0;
      for (std::size_t k = g.edges.size() - static_cast<std::size_t>(len - 1); k < g.edges.size();
           ++k) {
        sum += g.edges[k].w;
      }
      w = total - sum;
    }
    g.edges.push_back({pool[i], pool[(i + 1) % len], w});
  }
  return pool;
}

inline constexpr double kRefInf = std::numeric_limits<double>::infinity();

/// Vertices reachable from `source` (breadth-first over the edge list).
inline std::vector<char> reachable_from(const SsspGraph& g, std::int64_t source) {
  std::vector<char> seen(static_cast<std::size_t>(g.n), 0);
  seen[source] = 1;
  for (bool grew = true; grew;) {
    grew = false;
    for (const SsspEdge& e : g.edges) {
      if (seen[e.src] && !seen[e.dst]) seen[e.dst] = grew = 1;
    }
  }
  return seen;
}

struct SsspReference {
  std::vector<double> dist;
  bool negative_cycle = false;  ///< one is reachable from the source
};

/// Plain Bellman-Ford in double: n - 1 rounds over every edge, then one more that finds a
/// reachable negative cycle if any still relaxes.
inline SsspReference bellman_ford(const SsspGraph& g, std::int64_t source) {
  SsspReference r{std::vector<double>(static_cast<std::size_t>(g.n), kRefInf)};
  r.dist[source] = 0;
  for (std::int64_t round = 0; round < g.n; ++round) {
    bool changed = false;
    for (const SsspEdge& e : g.edges) {
      if (r.dist[e.src] + e.w < r.dist[e.dst]) {
        r.dist[e.dst] = r.dist[e.src] + e.w;
        changed = true;
      }
    }
    if (!changed) return r;
  }
  r.negative_cycle = true;
  return r;
}

/// True when a closed walk of negative length passes through v.
inline bool on_negative_closed_walk(const SsspGraph& g, std::int64_t v) {
  std::vector<double> d(static_cast<std::size_t>(g.n), kRefInf);
  d[v] = 0;
  for (std::int64_t round = 0; round < g.n; ++round) {
    for (const SsspEdge& e : g.edges) {
      if (d[e.src] + e.w < d[e.dst]) d[e.dst] = d[e.src] + e.w;
    }
  }
  return d[v] < 0;
}

/// Checks a result against the reference: exact distances, +inf and -1 where unreachable, and
/// parents that form a tree rooted at the source whose paths have exactly those lengths.
inline void expect_shortest_paths(const SsspGraph& g, std::int64_t source, const SsspReference& ref,
                                  const kernels::SsspInfo& info, const std::vector<float>& dist,
                                  const std::vector<std::int32_t>& parent) {
  ASSERT_FALSE(ref.negative_cycle);
  EXPECT_FALSE(info.negative_cycle) << "cycle_vertex " << info.cycle_vertex;
  // Lightest edge u -> v, to add up the weights along the parent walks.
  std::vector<std::vector<std::pair<std::int64_t, double>>> into(static_cast<std::size_t>(g.n));
  for (const SsspEdge& e : g.edges) into[e.dst].push_back({e.src, e.w});
  auto lightest = [&](std::int64_t u, std::int64_t v) {
    double best = kRefInf;
    for (const auto& [s, w] : into[v]) {
      if (s == u) best = std::min(best, w);
    }
    return best;
  };
  int failures = 0;
  for (std::int64_t v = 0; v < g.n && failures < 5; ++v) {
    const double expected = ref.dist[v];
    if (expected == kRefInf) {
      if (dist[v] != std::numeric_limits<float>::infinity() || parent[v] != -1) {
        ADD_FAILURE() << "unreachable v=" << v << ": dist " << dist[v] << " parent " << parent[v];
        ++failures;
      }
      continue;
    }
    if (static_cast<double>(dist[v]) != expected) {
      ADD_FAILURE() << "v=" << v << ": dist " << dist[v] << ", reference " << expected;
      ++failures;
      continue;
    }
    if (v == source) {
      if (parent[v] != source) {
        ADD_FAILURE() << "parent[source] = " << parent[v];
        ++failures;
      }
      continue;
    }
    // Walk to the source: fewer than n steps, lengths adding up to dist[v].
    double length = 0;
    std::int64_t at = v, steps = 0;
    while (at != source && steps < g.n) {
      const std::int64_t p = parent[at];
      if (p < 0 || p >= g.n) break;
      length += lightest(p, at);
      at = p;
      ++steps;
    }
    if (at != source || length != expected) {
      ADD_FAILURE() << "parent walk from v=" << v << " ends at " << at << " after " << steps
                    << " steps, length " << length << ", dist " << expected;
      ++failures;
    }
  }
}

/// Checks a reported negative cycle: cycle_vertex is reachable from the source and a closed
/// walk of negative length passes through it.
inline void expect_negative_cycle(const SsspGraph& g, std::int64_t source,
                                  const kernels::SsspInfo& info) {
  ASSERT_TRUE(info.negative_cycle);
  ASSERT_GE(info.cycle_vertex, 0);
  ASSERT_LT(info.cycle_vertex, g.n);
  EXPECT_TRUE(reachable_from(g, source)[info.cycle_vertex]) << "v=" << info.cycle_vertex;
  EXPECT_TRUE(on_negative_closed_walk(g, info.cycle_vertex)) << "v=" << info.cycle_vertex;
}

/// A negative self-loop is a negative cycle, on a vertex past the source and on the source
/// itself. `run(graph, source)` returns a kernel's absl::StatusOr<kernels::SsspInfo>.
template <class Run>
void expect_negative_self_loops_found(Run run) {
  SsspGraph g;
  g.n = 3;
  g.edges = {{0, 1, 2}, {1, 1, -1}, {1, 2, 4}};
  g.build_csr();
  const auto on_vertex = run(g, 0);
  ASSERT_TRUE(on_vertex.ok()) << on_vertex.status();
  ASSERT_TRUE(on_vertex->negative_cycle);
  EXPECT_EQ(on_vertex->cycle_vertex, 1);
  g.edges = {{0, 0, -2}, {0, 1, 1}};
  g.build_csr();
  const auto on_source = run(g, 0);
  ASSERT_TRUE(on_source.ok()) << on_source.status();
  ASSERT_TRUE(on_source->negative_cycle);
  EXPECT_EQ(on_source->cycle_vertex, 0);
}

/// n vertices, edges within [0, k) (non-negative), within [k, n) and from [k, n) into [0, k),
/// k = max(1, n / 3): from a source in [0, k) every vertex of [k, n) is unreachable.
inline SsspGraph graph_with_unreachable_part(Rng& rng, std::int64_t n, std::int64_t& k) {
  k = std::max<std::int64_t>(1, n / 3);
  SsspGraph g;
  g.n = n;
  for (std::int64_t e = 0; e < 4 * n; ++e) {
    const std::int64_t a = rng.uniform_int(0, n - 1), b = rng.uniform_int(0, n - 1);
    const double w = static_cast<double>(rng.uniform_int(-3, 40));
    if ((a < k) == (b < k) || a >= k) g.edges.push_back({a, b, a < k ? std::abs(w) : w});
  }
  g.build_csr();
  return g;
}

/// A graph whose negative cycle lies in [k, n), k = n / 2, with no edge from [0, k) into it:
/// unreachable from a source in [0, k).
inline SsspGraph graph_with_unreachable_negative_cycle(Rng& rng, std::int64_t n, std::int64_t& k) {
  k = n / 2;
  SsspGraph g;
  g.n = n;
  for (std::int64_t e = 0; e < 3 * n; ++e) {
    const std::int64_t a = rng.uniform_int(0, n - 1), b = rng.uniform_int(0, n - 1);
    if (a < k && b >= k) continue;
    g.edges.push_back({a, b, static_cast<double>(rng.uniform_int(0, 30))});
  }
  add_cycle(rng, g, k, n, std::min<std::int64_t>(n - k, 5), -3, 20);
  g.build_csr();
  return g;
}

/// A random graph (potentials: negative weights) plus a negative cycle of up to 10 vertices
/// and an edge from `source` (random) onto it.
inline SsspGraph graph_with_reachable_negative_cycle(Rng& rng, std::int64_t n,
                                                     std::int64_t& source) {
  SsspGraph g = random_sssp_graph(rng, n, 3 * n, 0, 50);
  apply_potentials(rng, g, 100);
  const std::int64_t len = rng.uniform_int(1, std::min<std::int64_t>(n, 10));
  const std::vector<std::int64_t> cycle =
      add_cycle(rng, g, 0, n, len, -static_cast<int>(rng.uniform_int(1, 5)), 20);
  source = rng.uniform_int(0, n - 1);
  g.edges.push_back({source, cycle[0], 7});  // makes the cycle reachable
  g.build_csr();
  return g;
}

}  // namespace gcompute::testing
