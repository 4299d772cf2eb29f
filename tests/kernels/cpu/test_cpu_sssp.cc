// SPDX-License-Identifier: Apache-2.0
// cpu::sssp against plain Bellman-Ford in double (support/sssp_check.hpp) on fresh random
// graphs of ragged sizes: non-negative weights (Dijkstra), negative weights without negative
// cycles (SPFA), zero-weight cycles, unreachable vertices, negative cycles reachable from the
// source or not, invalid inputs and cancellation.
#include "gcompute/kernels/cpu/sssp.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "support/random.hpp"
#include "support/sssp_check.hpp"
#include "support/status_checks.hpp"

namespace gcompute::kernels::cpu {
namespace {

using testing::SsspGraph;

// Not a vertex and not -1, so an output left unwritten shows.
constexpr std::int32_t kParentPoison = 0x5a5a5a5a;

struct SsspRun {
  absl::StatusOr<SsspInfo> info;
  std::vector<float> dist;
  std::vector<std::int32_t> parent;
};

SsspRun run_sssp(const SsspGraph& g, std::int64_t source, StopToken stop = {}) {
  SsspRun r{absl::UnknownError("not run"), testing::poisoned<float>(static_cast<std::size_t>(g.n)),
            std::vector<std::int32_t>(static_cast<std::size_t>(g.n), kParentPoison)};
  r.info = sssp(g.view(), source, r.dist.data(), r.parent.data(), stop);
  return r;
}

// Runs from `source` and checks against the reference (no negative cycle expected).
SsspRun check_from(const SsspGraph& g, std::int64_t source) {
  SCOPED_TRACE(::testing::Message()
               << "n=" << g.n << " m=" << g.edges.size() << " source=" << source);
  const testing::SsspReference ref = testing::bellman_ford(g, source);
  SsspRun r = run_sssp(g, source);
  EXPECT_TRUE(r.info.ok()) << r.info.status();
  if (!r.info.ok()) return r;
  testing::expect_shortest_paths(g, source, ref, *r.info, r.dist, r.parent);
  EXPECT_GE(r.info->rounds, 1);
  return r;
}

// The same from a random source.
void check_shortest_paths(testing::Rng& rng, SsspGraph& g) {
  g.build_csr();
  check_from(g, rng.uniform_int(0, g.n - 1));
}

const std::int64_t kSizes[] = {1, 2, 3, 7, 31, 64, 97, 257, 1009};

TEST(CpuSssp, NonNegativeAndNegativeWeightsMatchBellmanFord) {
  GC_SEEDED_RNG(rng);
  for (const bool negative : {false, true}) {  // negative: potentials, no negative cycle
    for (std::int64_t n : kSizes) {
      for (double degree : {0.5, 2.0, 8.0}) {
        const auto m = static_cast<std::int64_t>(degree * static_cast<double>(n)) + 1;
        SsspGraph g = testing::random_sssp_graph(rng, n, m, 0, 100);
        if (negative) testing::apply_potentials(rng, g, 300);
        check_shortest_paths(rng, g);
      }
    }
  }
}

// Parents change only on strictly shorter distances, so zero cycles never close in them.
TEST(CpuSssp, ZeroWeightCyclesLeaveAParentTree) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {2, 5, 31, 97, 400}) {
    for (bool negative : {false, true}) {
      SsspGraph g = testing::random_sssp_graph(rng, n, 3 * n, 0, 5);
      for (int c = 0; c < 4; ++c) {
        const std::int64_t len = rng.uniform_int(1, std::min<std::int64_t>(n, 12));
        testing::add_cycle(rng, g, 0, n, len, 0, 0);
      }
      for (std::int64_t v = 0; v + 1 < n; v += 2) {
        g.edges.push_back({v, v + 1, 0});
        g.edges.push_back({v + 1, v, 0});
      }
      if (negative) testing::apply_potentials(rng, g, 50);
      check_shortest_paths(rng, g);
    }
  }
}

TEST(CpuSssp, UnreachableVerticesGetInfinityAndNoParent) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {2, 9, 100, 333}) {
    std::int64_t k = 0;
    const SsspGraph g = testing::graph_with_unreachable_part(rng, n, k);
    const SsspRun r = check_from(g, rng.uniform_int(0, k - 1));
    ASSERT_TRUE(r.info.ok());
    for (std::int64_t v = k; v < n; ++v) {
      EXPECT_EQ(r.dist[v], std::numeric_limits<float>::infinity()) << v;
      EXPECT_EQ(r.parent[v], -1) << v;
    }
  }
}

TEST(CpuSssp, ReachableNegativeCycleIsReported) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {1, 2, 3, 17, 97, 500}) {
    for (int trial = 0; trial < 3; ++trial) {
      std::int64_t source = 0;
      const SsspGraph g = testing::graph_with_reachable_negative_cycle(rng, n, source);
      SCOPED_TRACE(::testing::Message() << "n=" << n << " trial " << trial);
      ASSERT_TRUE(testing::bellman_ford(g, source).negative_cycle);
      const SsspRun r = run_sssp(g, source);
      ASSERT_TRUE(r.info.ok()) << r.info.status();
      testing::expect_negative_cycle(g, source, *r.info);
    }
  }
}

TEST(CpuSssp, UnreachableNegativeCycleIsNotReported) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {4, 10, 97, 300}) {
    std::int64_t k = 0;
    const SsspGraph g = testing::graph_with_unreachable_negative_cycle(rng, n, k);
    check_from(g, rng.uniform_int(0, k - 1));
  }
}

TEST(CpuSssp, NegativeSelfLoopIsANegativeCycle) {
  testing::expect_negative_self_loops_found(
      [](const SsspGraph& g, std::int64_t source) { return run_sssp(g, source).info; });
}

TEST(CpuSssp, InfiniteWeightsActAsNoEdge) {
  SsspGraph g;
  g.n = 3;
  g.edges = {{0, 1, testing::kRefInf}, {0, 2, 5}, {2, 1, -1}};
  g.build_csr();
  const SsspRun r = run_sssp(g, 0);
  ASSERT_TRUE(r.info.ok()) << r.info.status();
  EXPECT_EQ(r.dist[1], 4.0f);
  EXPECT_EQ(r.parent[1], 2);
}

TEST(CpuSssp, RejectsInvalidInputsNamingTheField) {
  SsspGraph g;
  g.n = 4;
  g.edges = {{0, 1, 1}, {1, 2, 2}, {2, 3, -1}, {3, 0, 5}};
  g.build_csr();
  std::vector<float> dist(4);
  std::vector<std::int32_t> parent(4);
  auto call = [&](const CsrView& v, std::int64_t source) {
    return sssp(v, source, dist.data(), parent.data()).status();
  };
  ASSERT_TRUE(call(g.view(), 0).ok());
  using absl::StatusCode::kInvalidArgument;
  testing::expect_status(call(g.view(), 4), kInvalidArgument, "source 4 out of range 0..3");
  testing::expect_status(call(g.view(), -1), kInvalidArgument, "source -1");
  CsrView v = g.view();
  v.n = 0;
  testing::expect_status(call(v, 0), kInvalidArgument, "n = 0");
  v = g.view();
  v.m = -1;
  testing::expect_status(call(v, 0), kInvalidArgument, "m = -1");
  v = g.view();
  v.row_offsets = nullptr;
  testing::expect_status(call(v, 0), kInvalidArgument, "row_offsets is null");
  v = g.view();
  v.weights = nullptr;
  testing::expect_status(call(v, 0), kInvalidArgument, "weights is null");

  SsspGraph bad = g;
  bad.offsets[0] = 1;
  testing::expect_status(call(bad.view(), 0), kInvalidArgument, "row_offsets[0] = 1");
  bad = g;
  bad.offsets[2] = 5;
  testing::expect_status(call(bad.view(), 0), kInvalidArgument,
                         "row_offsets[2] = 5 > row_offsets[3] = 3");
  bad = g;
  bad.offsets[4] = 3;
  testing::expect_status(call(bad.view(), 0), kInvalidArgument,
                         "row_offsets[n = 4] = 3, must equal m = 4");
  bad = g;
  bad.offsets[3] = 5;
  testing::expect_status(call(bad.view(), 0), kInvalidArgument,
                         "row_offsets decrease: row_offsets[3] = 5 > row_offsets[4] = 4");
  v = g.view();
  v.m = 3;
  testing::expect_status(call(v, 0), kInvalidArgument, "row_offsets[n = 4] = 4, must equal m = 3");
  bad = g;
  bad.cols[2] = 4;
  testing::expect_status(call(bad.view(), 0), kInvalidArgument, "cols[2] = 4 out of range 0..3");
  bad = g;
  bad.weights[1] = std::numeric_limits<float>::quiet_NaN();
  testing::expect_status(call(bad.view(), 0), kInvalidArgument, "weights[1] = nan");
  bad = g;
  bad.weights[3] = -std::numeric_limits<float>::infinity();
  testing::expect_status(call(bad.view(), 0), kInvalidArgument, "weights[3] = -inf");
  testing::expect_status(sssp(g.view(), 0, nullptr, parent.data()).status(), kInvalidArgument,
                         "dist and parent");
}

TEST(CpuSssp, StopsWhenCancelled) {
  // A long chain, so that the stop token is polled many times before the end.
  for (double w : {1.0, -1.0}) {  // Dijkstra, then Bellman-Ford
    SsspGraph g;
    g.n = 100000;
    for (std::int64_t v = 0; v + 1 < g.n; ++v) g.edges.push_back({v, v + 1, w});
    g.build_csr();
    const std::atomic<bool> flag{true};
    const SsspRun r = run_sssp(g, 0, StopToken(&flag));
    testing::expect_status(r.info.status(), absl::StatusCode::kCancelled, "sssp cancelled");
    // Without the flag the same call finishes.
    const SsspRun full = run_sssp(g, 0);
    ASSERT_TRUE(full.info.ok()) << full.info.status();
    EXPECT_EQ(full.dist[g.n - 1], static_cast<float>(w * static_cast<double>(g.n - 1)));
  }
}

}  // namespace
}  // namespace gcompute::kernels::cpu
