// SPDX-License-Identifier: Apache-2.0
// cpu::apsp against a textbook Floyd-Warshall in double and Dijkstra (non-negative weights,
// and negative weights made by the potential trick w'(u,v) = w(u,v) + p(u) - p(v), which
// keeps every cycle's weight). Every next-hop path is walked: each hop must be an edge and the
// lengths must add up to D. Integer-valued weights make f32 sums exact, so D is compared
// exactly; real-valued weights are compared to a rounding bound. i32 distances beyond the i32
// range are checked against a plain Floyd-Warshall in int64.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "gcompute/kernels/cpu/apsp.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"
#include "support/stop_after.hpp"

namespace gcompute::kernels {
namespace {

using ::gcompute::testing::dijkstra;
using ::gcompute::testing::floyd_warshall_reference;
using ::gcompute::testing::kInf;
using ::gcompute::testing::Rng;

// A graph as doubles (+inf = no edge), converted per dtype when run.
struct Graph {
  std::int64_t n = 0;
  std::vector<double> w;
};

Graph empty_graph(std::int64_t n) {
  return {n, std::vector<double>(static_cast<std::size_t>(n * n), kInf)};
}

// Each ordered pair is an edge with probability p, integer weight in [lo, hi].
Graph random_graph(Rng& rng, std::int64_t n, double p, std::int64_t lo, std::int64_t hi) {
  Graph g = empty_graph(n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i != j && rng.bernoulli(p)) g.w[i * n + j] = static_cast<double>(rng.uniform_int(lo, hi));
    }
  }
  return g;
}

struct ApspRun {
  std::vector<double> d;  // +inf where unreachable
  std::vector<std::int32_t> next;
  ApspInfo info;
};

// Runs cpu::apsp on `g` in `dtype` with poisoned outputs.
ApspRun run_apsp(const Graph& g, DType dtype, bool next_hop, int threads = 0) {
  const std::int64_t nn = g.n * g.n;
  ApspRun r;
  r.next = ::gcompute::testing::poisoned<std::int32_t>(static_cast<std::size_t>(next_hop ? nn : 0));
  ApspShape shape{g.n, dtype, next_hop};
  absl::StatusOr<ApspInfo> info;
  if (dtype == DType::kF32) {
    std::vector<float> w(g.w.begin(), g.w.end());
    auto d = ::gcompute::testing::poisoned<float>(static_cast<std::size_t>(nn));
    info = cpu::apsp(w.data(), d.data(), next_hop ? r.next.data() : nullptr, shape, {}, threads);
    r.d.assign(d.begin(), d.end());
  } else {
    std::vector<std::int32_t> w(static_cast<std::size_t>(nn));
    for (std::int64_t e = 0; e < nn; ++e) {
      w[e] = g.w[e] == kInf ? kI32NoEdge : static_cast<std::int32_t>(g.w[e]);
    }
    auto d = ::gcompute::testing::poisoned<std::int32_t>(static_cast<std::size_t>(nn));
    info = cpu::apsp(w.data(), d.data(), next_hop ? r.next.data() : nullptr, shape, {}, threads);
    r.d.resize(static_cast<std::size_t>(nn));
    for (std::int64_t e = 0; e < nn; ++e) r.d[e] = d[e] == kI32NoEdge ? kInf : d[e];
  }
  EXPECT_TRUE(info.ok()) << info.status();
  if (info.ok()) r.info = *info;
  return r;
}

// Distances equal the reference to `tol` (0: exactly); with next hops, every path is walked.
void check_result(const Graph& g, const ApspRun& r, const std::vector<double>& ref, double tol) {
  const std::int64_t n = g.n;
  ASSERT_FALSE(r.info.negative_cycle);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double want = ref[i * n + j], got = r.d[i * n + j];
      if (want == kInf) {
        ASSERT_EQ(got, kInf) << "D[" << i << "][" << j << "]";
      } else {
        ASSERT_NEAR(got, want, tol) << "D[" << i << "][" << j << "]";
      }
    }
  }
  if (r.next.empty()) return;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int32_t first = r.next[i * n + j];
      if (i == j) {
        ASSERT_EQ(first, i) << "N[" << i << "][" << i << "]";
        continue;
      }
      if (r.d[i * n + j] == kInf) {
        ASSERT_EQ(first, -1) << "N[" << i << "][" << j << "] for an unreachable pair";
        continue;
      }
      double length = 0;
      std::int64_t v = i, hops = 0;
      while (v != j) {
        const std::int32_t nx = r.next[v * n + j];
        ASSERT_TRUE(nx >= 0 && nx < n)
            << "path " << i << "->" << j << " hop " << hops << " at " << v << ": N = " << nx;
        const double w = g.w[v * n + nx];
        ASSERT_NE(w, kInf) << "path " << i << "->" << j << ": " << v << "->" << nx
                           << " is not an edge";
        length += w;
        v = nx;
        ASSERT_LT(++hops, n) << "path " << i << "->" << j << " does not end (a loop)";
      }
      ASSERT_NEAR(length, r.d[i * n + j], tol) << "path " << i << "->" << j << " length";
    }
  }
}

const std::vector<std::int64_t> kSizes = {1, 2, 5, 63, 64, 65, 130, 200};

TEST(CpuApsp, NonNegativeDenseAndSparseMatchFloydWarshallAndDijkstra) {
  GC_SEEDED_RNG(rng);
  for (const DType t : {DType::kF32, DType::kI32}) {
    for (const std::int64_t n : kSizes) {
      for (const double p : {0.5, 3.0 / static_cast<double>(n), 0.0}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(t) << " n=" << n << " p=" << p);
        const Graph g = random_graph(rng, n, p, 0, 100);
        const auto ref = floyd_warshall_reference(g.w, n);
        for (std::int64_t s = 0; s < n; s += std::max<std::int64_t>(1, n / 7)) {
          const auto dj = dijkstra(g.w, n, s);
          for (std::int64_t j = 0; j < n; ++j)
            ASSERT_EQ(dj[j], ref[s * n + j]) << "oracles disagree";
        }
        for (const bool next : {true, false}) {
          check_result(g, run_apsp(g, t, next), ref, 0.0);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(CpuApsp, NextHopsFromTheDistancesFollowTheRule) {
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {2, 5, 65, 130, 200}) {
    for (const double p : {0.02, 0.3, 1.0}) {
      for (const std::int64_t hi : {4, 1000}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " p=" << p << " weights 1.." << hi);
        Graph g = random_graph(rng, n, p, 1, hi);
        for (std::int64_t i = 0; i < n; i += 7) g.w[i * n + i] = static_cast<double>(i % 3);
        const auto ref = floyd_warshall_reference(g.w, n);
        const auto rule = ::gcompute::testing::next_hop_rule(g.w, ref, n);
        for (const DType t : {DType::kF32, DType::kI32}) {
          const ApspRun r = run_apsp(g, t, true);
          ASSERT_TRUE(r.info.next_hop_from_distances) << dtype_name(t);
          check_result(g, r, ref, 0.0);
          ASSERT_EQ(r.next, rule) << dtype_name(t);
        }
      }
    }
  }
}

// Where the rule could be wrong, the fused Floyd-Warshall makes the next hops.
TEST(CpuApsp, NextHopsFallBackToTheFusedFloydWarshall) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 90;
  Graph zero = random_graph(rng, n, 0.2, 1, 20);
  zero.w[3 * n + 4] = 0;  // next-hop chains could loop through zero-weight cycles
  Graph negative = random_graph(rng, n, 0.2, 1, 20);
  negative.w[5 * n + 6] = -1;
  Graph fractional = random_graph(rng, n, 0.2, 1, 20);
  fractional.w[7 * n + 8] = 2.5;
  const Graph heavy = random_graph(rng, n, 0.2, 1, 1 << 19);  // 89 * 2^19 >= 2^24
  struct Case {
    const char* what;
    const Graph* g;
    DType t;
    bool from_distances;
  };
  for (const Case& c :
       {Case{"zero edge", &zero, DType::kF32, false}, Case{"zero edge", &zero, DType::kI32, false},
        Case{"negative edge", &negative, DType::kF32, false},
        Case{"negative edge", &negative, DType::kI32, false},
        Case{"fractional", &fractional, DType::kF32, false},
        Case{"sums beyond 2^24", &heavy, DType::kF32, false},
        Case{"i32 sums exact", &heavy, DType::kI32, true}}) {
    SCOPED_TRACE(::testing::Message() << dtype_name(c.t) << " " << c.what);
    const auto ref = floyd_warshall_reference(c.g->w, n);
    const ApspRun r = run_apsp(*c.g, c.t, true);
    EXPECT_EQ(r.info.next_hop_from_distances, c.from_distances);
    check_result(*c.g, r, ref, 0.0);
  }
  // In place, W is gone before the next hops could use it.
  const Graph g = random_graph(rng, n, 0.2, 1, 20);
  std::vector<float> buf(g.w.begin(), g.w.end());
  std::vector<std::int32_t> next(static_cast<std::size_t>(n * n));
  absl::StatusOr<ApspInfo> info =
      cpu::apsp(buf.data(), buf.data(), next.data(), {n, DType::kF32, true});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->next_hop_from_distances);
}

TEST(CpuApsp, TuningIsValidated) {
  EXPECT_TRUE(validate(ApspTuning{.next_hop_candidates = 2048}).ok());
  for (const int bad : {-1, 2049}) {
    const absl::Status st = validate(ApspTuning{.next_hop_candidates = bad});
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("next_hop_candidates"), std::string_view::npos) << st;
  }
}

TEST(CpuApsp, NegativeEdgesWithoutNegativeCycles) {
  GC_SEEDED_RNG(rng);
  for (const DType t : {DType::kF32, DType::kI32}) {
    for (const std::int64_t n : {3, 64, 97, 150}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(t) << " n=" << n);
      const Graph base = random_graph(rng, n, 0.2, 0, 30);  // zero weights: zero-weight cycles
      std::vector<double> pot(static_cast<std::size_t>(n));
      for (double& x : pot) x = static_cast<double>(rng.uniform_int(-60, 60));
      Graph g = base;
      std::int64_t negative = 0;
      for (std::int64_t u = 0; u < n; ++u) {
        for (std::int64_t v = 0; v < n; ++v) {
          double& w = g.w[u * n + v];
          if (w != kInf) {
            w += pot[u] - pot[v];
            negative += w < 0;
          }
        }
      }
      if (n > 3) {
        ASSERT_GT(negative, 0);
      }
      // Independent oracle: Dijkstra on the non-negative graph, shifted back.
      std::vector<double> ref(static_cast<std::size_t>(n * n));
      for (std::int64_t s = 0; s < n; ++s) {
        const auto dj = dijkstra(base.w, n, s);
        for (std::int64_t v = 0; v < n; ++v) {
          ref[s * n + v] = dj[v] == kInf ? kInf : dj[v] + pot[s] - pot[v];
        }
      }
      const auto fw = floyd_warshall_reference(g.w, n);
      ASSERT_EQ(fw, ref) << "oracles disagree";
      check_result(g, run_apsp(g, t, true), ref, 0.0);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CpuApsp, RealWeightsF32WithinRounding) {
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {7, 66, 129}) {
    Graph g = empty_graph(n);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        if (i != j && rng.bernoulli(0.3))
          g.w[i * n + j] = static_cast<float>(rng.uniform(0.01, 10));
      }
    }
    const auto ref = floyd_warshall_reference(g.w, n);
    // A path has < n edges of weight <= 10; f32 sums of them are off by < n * 10n * eps.
    const double tol = 10.0 * n * n * std::numeric_limits<float>::epsilon();
    check_result(g, run_apsp(g, DType::kF32, true), ref, tol);
  }
}

TEST(CpuApsp, DisconnectedComponentsAndSelfLoops) {
  GC_SEEDED_RNG(rng);
  for (const DType t : {DType::kF32, DType::kI32}) {
    const std::int64_t n = 140;
    Graph g = empty_graph(n);
    // Two dense components (0..69, 70..139) and nothing between; self loops of both signs
    // of weight >= 0 (a negative self loop is a negative cycle, tested separately).
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        if ((i < 70) == (j < 70) && rng.bernoulli(0.1)) {
          g.w[i * n + j] = static_cast<double>(rng.uniform_int(0, 50));
        }
      }
    }
    const auto ref = floyd_warshall_reference(g.w, n);
    const ApspRun r = run_apsp(g, t, true);
    check_result(g, r, ref, 0.0);
    for (std::int64_t i = 0; i < 70; ++i) {
      for (std::int64_t j = 70; j < n; ++j) {
        ASSERT_EQ(r.d[i * n + j], kInf);
        ASSERT_EQ(r.d[j * n + i], kInf);
        ASSERT_EQ(r.next[i * n + j], -1);
      }
    }
    for (std::int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(r.d[i * n + i], 0.0);
    }
  }
}

TEST(CpuApsp, ResultsDoNotDependOnThreadCount) {
  GC_SEEDED_RNG(rng);
  for (const DType t : {DType::kF32, DType::kI32}) {
    const Graph g = random_graph(rng, 300, 0.05, -5, 100);  // negative cycles are possible
    const ApspRun one = run_apsp(g, t, true, 1);
    for (const int threads : {2, 3, 8, 0}) {
      const ApspRun many = run_apsp(g, t, true, threads);
      EXPECT_EQ(many.info.negative_cycle, one.info.negative_cycle);
      if (!one.info.negative_cycle) {
        EXPECT_EQ(many.d, one.d) << threads << " threads";
        EXPECT_EQ(many.next, one.next) << threads << " threads";
      }
    }
  }
}

TEST(CpuApsp, HopCountsStayInRangeThroughDenseNegativeCycles) {
  // Every edge -1: negative cycles everywhere, so hop counts grow far past n within a round.
  // They saturate below 2^30 (under UBSan a hop-count overflow aborts the test).
  const std::int64_t n = 200;
  Graph g = empty_graph(n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i != j) g.w[i * n + j] = -1;
    }
  }
  for (const DType t : {DType::kF32, DType::kI32}) {
    for (const int threads : {1, 3}) {
      const ApspRun r = run_apsp(g, t, true, threads);
      EXPECT_TRUE(r.info.negative_cycle) << dtype_name(t) << ", " << threads << " threads";
    }
  }
}

// Vertices that reach `c` and are reached from it, by BFS over edges of g.
std::vector<bool> on_closed_walk_with(const Graph& g, std::int64_t c) {
  const std::int64_t n = g.n;
  auto reach = [&](bool forward) {
    std::vector<bool> seen(static_cast<std::size_t>(n), false);
    std::vector<std::int64_t> stack = {c};
    seen[c] = true;
    while (!stack.empty()) {
      const std::int64_t u = stack.back();
      stack.pop_back();
      for (std::int64_t v = 0; v < n; ++v) {
        const double w = forward ? g.w[u * n + v] : g.w[v * n + u];
        if (w != kInf && !seen[v]) {
          seen[v] = true;
          stack.push_back(v);
        }
      }
    }
    return seen;
  };
  const auto fwd = reach(true), bwd = reach(false);
  std::vector<bool> both(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) both[v] = fwd[v] && bwd[v];
  return both;
}

TEST(CpuApsp, DetectsPlantedNegativeCycles) {
  GC_SEEDED_RNG(rng);
  for (const DType t : {DType::kF32, DType::kI32}) {
    for (const std::int64_t n : {2, 65, 200}) {
      for (int trial = 0; trial < 3; ++trial) {
        SCOPED_TRACE(::testing::Message() << dtype_name(t) << " n=" << n << " trial " << trial);
        Graph g = random_graph(rng, n, 0.05, 0, 100);
        // A cycle through `len` random distinct vertices with total weight -1 or less.
        const std::int64_t len = std::min<std::int64_t>(n, rng.uniform_int(2, 6));
        std::vector<std::int64_t> cyc;
        while (static_cast<std::int64_t>(cyc.size()) < len) {
          const std::int64_t v = rng.uniform_int(0, n - 1);
          if (std::find(cyc.begin(), cyc.end(), v) == cyc.end()) cyc.push_back(v);
        }
        for (std::int64_t e = 0; e < len; ++e) {
          g.w[cyc[e] * n + cyc[(e + 1) % len]] = e == 0 ? -static_cast<double>(len) * 10 : 9;
        }
        bool ref_negative = false;
        floyd_warshall_reference(g.w, n, &ref_negative);
        ASSERT_TRUE(ref_negative);
        for (const bool next : {true, false}) {
          const ApspRun r = run_apsp(g, t, next);
          ASSERT_TRUE(r.info.negative_cycle);
          const std::int64_t v = r.info.cycle_vertex;
          ASSERT_TRUE(v >= 0 && v < n) << v;
          EXPECT_TRUE(on_closed_walk_with(g, cyc[0])[v])
              << "vertex " << v << " is not on a negative closed walk";
        }
      }
    }
    // A negative self loop is a negative cycle of one vertex.
    Graph g = random_graph(rng, 70, 0.1, 1, 10);
    g.w[69 * 70 + 69] = -1;
    const ApspRun r = run_apsp(g, t, true);
    EXPECT_TRUE(r.info.negative_cycle);
    EXPECT_EQ(r.info.cycle_vertex, 69);
  }
}

// ---- i32 distances beyond the i32 range -----------------------------------------------------

constexpr std::int64_t kNoPath = std::numeric_limits<std::int64_t>::max();

// Plain Floyd-Warshall in int64 (kNoPath = no edge). The diagonal is checked after every k and
// the loop stops at the first negative one, before any value can run away (until then every
// value is a path length of at most n - 1 edges): returns false on a negative cycle.
bool floyd_warshall_i64(const std::vector<std::int32_t>& w, std::int64_t n,
                        std::vector<std::int64_t>& d) {
  d.resize(static_cast<std::size_t>(n * n));
  for (std::int64_t e = 0; e < n * n; ++e) d[e] = w[e] == kI32NoEdge ? kNoPath : w[e];
  for (std::int64_t v = 0; v < n; ++v) d[v * n + v] = std::min<std::int64_t>(d[v * n + v], 0);
  for (std::int64_t v = 0; v < n; ++v) {
    if (d[v * n + v] < 0) return false;
  }
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (d[i * n + k] == kNoPath) continue;
      for (std::int64_t j = 0; j < n; ++j) {
        if (d[k * n + j] != kNoPath)
          d[i * n + j] = std::min(d[i * n + j], d[i * n + k] + d[k * n + j]);
      }
    }
    for (std::int64_t v = 0; v < n; ++v) {
      if (d[v * n + v] < 0) return false;
    }
  }
  return true;
}

bool in_i32_range(std::int64_t v) {
  return v >= kI32MinDistance && v <= kI32MaxDistance;
}

struct I32Run {
  ApspInfo info;
  std::vector<std::int32_t> d, next;
};

// cpu::apsp (or apsp_i32_wide) on i32 weights, with poisoned outputs.
I32Run run_i32(const std::vector<std::int32_t>& w, std::int64_t n, bool next_hop, bool wide,
               int threads = 0) {
  I32Run r;
  r.d = ::gcompute::testing::poisoned<std::int32_t>(static_cast<std::size_t>(n * n));
  r.next = ::gcompute::testing::poisoned<std::int32_t>(static_cast<std::size_t>(n * n));
  const ApspShape shape{n, DType::kI32, next_hop};
  absl::StatusOr<ApspInfo> info =
      wide ? cpu::apsp_i32_wide(w.data(), r.d.data(), r.next.data(), shape, {}, threads)
           : cpu::apsp(w.data(), r.d.data(), r.next.data(), shape, {}, threads);
  EXPECT_TRUE(info.ok()) << info.status();
  if (info.ok()) r.info = *info;
  if (!next_hop) r.next.clear();
  return r;
}

// The result against the int64 oracle `ref` (no negative cycle): in-range distances exact,
// out-of-range ones clamped and the first of them reported, every next-hop path walked and
// summed in int64 (also for pairs beyond the range).
void check_i32_result(const std::vector<std::int32_t>& w, std::int64_t n,
                      const std::vector<std::int64_t>& ref, const I32Run& r) {
  ASSERT_FALSE(r.info.negative_cycle);
  std::int64_t first = -1;
  for (std::int64_t e = 0; e < n * n; ++e) {
    const std::int64_t want = ref[e];
    const std::int32_t got = r.d[e];
    if (want == kNoPath) {
      ASSERT_EQ(got, kI32NoEdge) << "D[" << e / n << "][" << e % n << "]";
    } else if (in_i32_range(want)) {
      ASSERT_EQ(got, want) << "D[" << e / n << "][" << e % n << "]";
    } else {
      if (first < 0) first = e;
      ASSERT_EQ(got, want < 0 ? kI32MinDistance : kI32MaxDistance)
          << "D[" << e / n << "][" << e % n << "] (true " << want << ")";
    }
  }
  ASSERT_EQ(r.info.out_of_range, first >= 0);
  if (first >= 0) {
    EXPECT_EQ(r.info.range_row, first / n);
    EXPECT_EQ(r.info.range_col, first % n);
    EXPECT_EQ(r.info.range_value, ref[first]);
  }
  if (r.next.empty()) return;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int32_t hop = r.next[i * n + j];
      if (i == j || ref[i * n + j] == kNoPath) {
        ASSERT_EQ(hop, i == j ? i : -1) << "N[" << i << "][" << j << "]";
        continue;
      }
      std::int64_t length = 0, v = i, hops = 0;
      while (v != j) {
        const std::int32_t nx = r.next[v * n + j];
        ASSERT_TRUE(nx >= 0 && nx < n) << "path " << i << "->" << j << " at " << v;
        ASSERT_NE(w[v * n + nx], kI32NoEdge) << v << "->" << nx << " is not an edge";
        length += w[v * n + nx];
        v = nx;
        ASSERT_LT(++hops, n) << "path " << i << "->" << j << " does not end";
      }
      ASSERT_EQ(length, ref[i * n + j]) << "path " << i << "->" << j << " length";
    }
  }
}

// The graph of issue #11: 0 -> 1 -> 2 -> 3 with three edges of +-kI32MaxAbsWeight.
std::vector<std::int32_t> chain_of_three(std::int32_t weight) {
  std::vector<std::int32_t> w(16, kI32NoEdge);
  w[0 * 4 + 1] = w[1 * 4 + 2] = w[2 * 4 + 3] = weight;
  return w;
}

TEST(CpuApsp, I32FitsBound) {
  // (n - 1) * max|w| <= 2^31 - 2: three vertices with the largest weight fit, four do not.
  std::vector<std::int32_t> w3(9, kI32NoEdge);
  w3[1] = w3[5] = kI32MaxAbsWeight;
  EXPECT_TRUE(cpu::i32_apsp_fits(w3.data(), 3));
  w3[5] = -kI32MaxAbsWeight;
  EXPECT_TRUE(cpu::i32_apsp_fits(w3.data(), 3));
  EXPECT_FALSE(cpu::i32_apsp_fits(chain_of_three(kI32MaxAbsWeight).data(), 4));
  EXPECT_FALSE(cpu::i32_apsp_fits(chain_of_three(-kI32MaxAbsWeight).data(), 4));
  // The exact edge of the bound: 2^31 - 2 = 2 * 3 * 357913941.
  std::vector<std::int32_t> w7(49, kI32NoEdge);
  w7[0 * 7 + 1] = 357913941;
  EXPECT_TRUE(cpu::i32_apsp_fits(w7.data(), 7));
  w7[3 * 7 + 2] = -357913942;
  EXPECT_FALSE(cpu::i32_apsp_fits(w7.data(), 7));
  // Self loops are on no simple path; no-edge values are not weights.
  std::vector<std::int32_t> w4(16, 5);
  w4[0] = w4[5] = kI32MaxAbsWeight;
  w4[10] = -kI32MaxAbsWeight;
  w4[3] = kI32NoEdge;
  EXPECT_TRUE(cpu::i32_apsp_fits(w4.data(), 4));
  EXPECT_TRUE(cpu::i32_apsp_fits(nullptr, 0));
  const std::int32_t one = -kI32MaxAbsWeight;
  EXPECT_TRUE(cpu::i32_apsp_fits(&one, 1));
}

TEST(CpuApsp, I32DistancesBeyondTheRangeAreReported) {
  for (const std::int32_t sign : {1, -1}) {
    const std::vector<std::int32_t> w = chain_of_three(sign * kI32MaxAbsWeight);
    std::vector<std::int64_t> ref;
    ASSERT_TRUE(floyd_warshall_i64(w, 4, ref));
    ASSERT_EQ(ref[0 * 4 + 3], sign * 3221225469LL);
    for (const bool next : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "sign " << sign << " next " << next);
      const I32Run r = run_i32(w, 4, next, false);
      EXPECT_TRUE(r.info.out_of_range);
      EXPECT_EQ(r.info.range_row, 0);
      EXPECT_EQ(r.info.range_col, 3);
      EXPECT_EQ(r.info.range_value, sign * 3221225469LL);
      EXPECT_EQ(r.d[0 * 4 + 2], sign * 2147483646LL);  // two edges still fit
      EXPECT_EQ(r.d[1 * 4 + 3], sign * 2147483646LL);
      check_i32_result(w, 4, ref, r);
      if (next) {
        EXPECT_EQ(r.next[0 * 4 + 3], 1);
      }
    }
    // In place (W and D one buffer) through the int64 path.
    std::vector<std::int32_t> buf = w;
    const absl::StatusOr<ApspInfo> info =
        cpu::apsp(buf.data(), buf.data(), nullptr, {4, DType::kI32, false});
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_TRUE(info->out_of_range);
    EXPECT_EQ(info->range_value, sign * 3221225469LL);
    EXPECT_EQ(buf[0 * 4 + 2], sign * 2147483646LL);
    EXPECT_EQ(buf[0 * 4 + 3], sign > 0 ? kI32MaxDistance : kI32MinDistance);
    EXPECT_EQ(buf[3 * 4 + 0], kI32NoEdge);
  }
  // The first pair is the smallest row, then column: here (1, 4), not (0, 5) or (2, 5).
  std::vector<std::int32_t> w(36, kI32NoEdge);
  for (std::int64_t v = 1; v < 5; ++v) w[v * 6 + v + 1] = kI32MaxAbsWeight;
  w[0 * 6 + 5] = 7;  // row 0 reaches only 5, and stays in range
  std::vector<std::int64_t> ref;
  ASSERT_TRUE(floyd_warshall_i64(w, 6, ref));
  const I32Run r = run_i32(w, 6, true, false);
  check_i32_result(w, 6, ref, r);
  EXPECT_EQ(r.info.range_row, 1);
  EXPECT_EQ(r.info.range_col, 4);
  EXPECT_EQ(r.info.range_value, 3221225469LL);
}

// Weights that make distances long: a Hamiltonian chain through a random vertex order with
// weights in [lo, hi], a few forward chords in [lo, hi], and, when `ring` (lo >= 0 then), a
// closing edge; then a random potential p in [-pot, pot] as w(u, v) + p(u) - p(v), which keeps
// every cycle's length (so none is negative) and moves distances by p(s) - p(t).
std::vector<std::int32_t> long_path_graph(Rng& rng, std::int64_t n, std::int64_t lo,
                                          std::int64_t hi, bool ring, std::int64_t pot) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) order[v] = v;
  std::shuffle(order.begin(), order.end(), rng.engine());
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t& x : p) x = rng.uniform_int(-pot, pot);
  std::vector<std::int32_t> w(static_cast<std::size_t>(n * n), kI32NoEdge);
  auto edge = [&](std::int64_t a, std::int64_t b) {
    const std::int64_t u = order[a], v = order[b];
    const std::int64_t x = rng.uniform_int(lo, hi) + p[u] - p[v];
    w[u * n + v] = static_cast<std::int32_t>(std::clamp<std::int64_t>(
        x, -kI32MaxAbsWeight, kI32MaxAbsWeight));  // clamped chords stay cycle-free below
  };
  for (std::int64_t a = 0; a + 1 < n; ++a) edge(a, a + 1);
  for (std::int64_t a = 0; a + 2 < n; ++a) {
    if (rng.bernoulli(0.05))
      edge(a, a + 2 + rng.uniform_int(0, std::min<std::int64_t>(3, n - a - 3)));
  }
  if (ring && n > 1) edge(n - 1, 0);
  return w;
}

TEST(CpuApsp, I32NearTheBoundMatchesInt64FloydWarshall) {
  GC_SEEDED_RNG(rng);
  constexpr std::int64_t kR = kI32MaxDistance;
  int beyond = 0, fitting = 0;
  for (const std::int64_t n : {2, 4, 5, 9, 64, 65, 131}) {
    // Largest weights that fit the bound for n, and 1.5 times that (capped by the weight limit).
    const std::int64_t fit =
        std::min<std::int64_t>(kI32MaxAbsWeight, kR / std::max<std::int64_t>(1, n - 1));
    const std::int64_t over = std::min<std::int64_t>(kI32MaxAbsWeight, fit + fit / 2 + 1);
    for (const std::int64_t m : {fit, over}) {
      struct Family {
        const char* name;
        std::int64_t lo, hi, pot;
        bool ring;
      };
      // Positive chains, negative chains, and rings (cycles of length >= 0) shifted by
      // potentials into mixed signs; weights stay within +-m.
      const Family families[] = {{"positive", m - m / 8, m, 0, false},
                                 {"negative", -m, -(m - m / 8), 0, false},
                                 {"mixed", -m, m, 0, false},
                                 {"ring", m / 2, m / 2 + m / 8, m / 4, true}};
      for (const Family& f : families) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " max|w|=" << m << " " << f.name);
        const std::vector<std::int32_t> w = long_path_graph(rng, n, f.lo, f.hi, f.ring, f.pot);
        std::vector<std::int64_t> ref;
        ASSERT_TRUE(floyd_warshall_i64(w, n, ref)) << "the generator made a negative cycle";
        const bool fits = cpu::i32_apsp_fits(w.data(), n);
        std::int64_t max_abs = 0;
        for (std::int64_t i = 0; i < n; ++i) {
          for (std::int64_t j = 0; j < n; ++j) {
            const std::int64_t x = w[i * n + j];
            if (i != j && x != kI32NoEdge) max_abs = std::max(max_abs, std::abs(x));
          }
        }
        ASSERT_EQ(fits, (n - 1) * max_abs <= kR);
        bool all_in_range = true;
        for (const std::int64_t x : ref) all_in_range &= x == kNoPath || in_i32_range(x);
        if (fits) {
          ASSERT_TRUE(all_in_range) << "the bound holds but a distance leaves the range";
        }
        (all_in_range ? fitting : beyond) += 1;
        for (const bool next : {true, false}) {
          check_i32_result(w, n, ref, run_i32(w, n, next, false));
          if (HasFatalFailure()) return;
          check_i32_result(w, n, ref, run_i32(w, n, next, true));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  // Both sides of the range were exercised (positive and negative chains beyond it).
  EXPECT_GE(beyond, 8);
  EXPECT_GE(fitting, 8);
}

TEST(CpuApsp, I32WideMatchesTheI32KernelWhereBothAreExact) {
  // Inside the bound both paths are exact: the same distances, next hops (the same tie rule),
  // negative-cycle verdict and cycle vertex, for any thread count.
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {1, 3, 64, 100, 200}) {
    for (const std::int64_t lo : {0, -3, -30}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " lo=" << lo);
      const Graph g = random_graph(rng, n, 0.08, lo, 100);  // lo < 0: negative cycles likely
      std::vector<std::int32_t> w(static_cast<std::size_t>(n * n));
      for (std::int64_t e = 0; e < n * n; ++e) {
        w[e] = g.w[e] == kInf ? kI32NoEdge : static_cast<std::int32_t>(g.w[e]);
      }
      ASSERT_TRUE(cpu::i32_apsp_fits(w.data(), n));
      std::vector<std::int64_t> ref;
      const bool no_cycle = floyd_warshall_i64(w, n, ref);
      const I32Run fast = run_i32(w, n, true, false, 1);
      for (const int threads : {1, 3, 0}) {
        const I32Run wide = run_i32(w, n, true, true, threads);
        ASSERT_EQ(wide.info.negative_cycle, !no_cycle) << threads << " threads";
        ASSERT_EQ(fast.info.negative_cycle, !no_cycle);
        EXPECT_FALSE(wide.info.out_of_range);
        if (no_cycle) {
          check_i32_result(w, n, ref, wide);
          EXPECT_EQ(wide.d, fast.d) << threads << " threads";
          EXPECT_EQ(wide.next, fast.next) << threads << " threads";
        } else {
          EXPECT_EQ(wide.info.cycle_vertex, fast.info.cycle_vertex) << threads << " threads";
        }
      }
    }
  }
}

TEST(CpuApsp, I32NegativeCyclesBeyondTheBoundAreDetected) {
  // Large negative cycles run away in any arithmetic; the wide path still finds them (the
  // double oracle runs away without overflow) and reports no range error then.
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {4, 65, 150}) {
    for (int trial = 0; trial < 3; ++trial) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " trial " << trial);
      std::vector<std::int32_t> w =
          long_path_graph(rng, n, kI32MaxAbsWeight / 4 * 3, kI32MaxAbsWeight, false, 0);
      for (std::int64_t e = 0; e < n * n; ++e) {
        if (w[e] != kI32NoEdge) w[e] = -w[e];
      }
      // A back edge closes a negative cycle through a random stretch of the chain.
      const std::int64_t u = rng.uniform_int(0, n - 1), v = rng.uniform_int(0, n - 1);
      w[u * n + v] = std::min<std::int32_t>(w[u * n + v], -1);
      Graph g = empty_graph(n);
      for (std::int64_t e = 0; e < n * n; ++e) {
        if (w[e] != kI32NoEdge) g.w[e] = w[e];
      }
      bool ref_negative = false;
      floyd_warshall_reference(g.w, n, &ref_negative);
      std::vector<std::int64_t> ref;
      ASSERT_EQ(floyd_warshall_i64(w, n, ref), !ref_negative) << "oracles disagree";
      ASSERT_FALSE(cpu::i32_apsp_fits(w.data(), n));
      const I32Run r = run_i32(w, n, true, false);
      ASSERT_EQ(r.info.negative_cycle, ref_negative);
      if (ref_negative) {
        EXPECT_FALSE(r.info.out_of_range);
        const std::int64_t c = r.info.cycle_vertex;
        ASSERT_TRUE(c >= 0 && c < n) << c;
      } else {
        check_i32_result(w, n, ref, r);
      }
    }
  }
}

TEST(CpuApsp, I32WideRejectsWhatApspRejects) {
  std::vector<std::int32_t> w(9, 1), d(9), next(9);
  EXPECT_EQ(
      cpu::apsp_i32_wide(w.data(), d.data(), nullptr, {3, DType::kF32, false}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu::apsp_i32_wide(w.data(), d.data(), nullptr, {3, DType::kI32, true}).status().code(),
            absl::StatusCode::kInvalidArgument);
  w[4] = kI32MaxAbsWeight + 1;
  const absl::Status st =
      cpu::apsp_i32_wide(w.data(), d.data(), next.data(), {3, DType::kI32, true}).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("W[1][1]"), absl::string_view::npos) << st;
  EXPECT_TRUE(cpu::apsp_i32_wide(nullptr, nullptr, nullptr, {0, DType::kI32, true}).ok());
}

TEST(CpuApsp, InPlaceAndZeroSize) {
  GC_SEEDED_RNG(rng);
  const Graph g = random_graph(rng, 77, 0.1, -2, 40);
  const auto ref = floyd_warshall_reference(g.w, 77);
  std::vector<float> buf(g.w.begin(), g.w.end());
  std::vector<std::int32_t> next(77 * 77);
  bool ref_negative = false;
  floyd_warshall_reference(g.w, 77, &ref_negative);
  absl::StatusOr<ApspInfo> info =
      cpu::apsp(buf.data(), buf.data(), next.data(), {77, DType::kF32, true});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->negative_cycle, ref_negative);
  if (!ref_negative) {
    for (std::size_t e = 0; e < buf.size(); ++e)
      ASSERT_EQ(static_cast<double>(buf[e]), ref[e]) << e;
  }
  info = cpu::apsp(nullptr, nullptr, nullptr, {0, DType::kI32, true});
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->negative_cycle);
}

TEST(CpuApsp, CancelledByStopToken) {
  GC_SEEDED_RNG(rng);
  std::atomic<bool> flag{true};
  const std::int64_t n = 1200;
  const Graph g = random_graph(rng, n, 0.01, 1, 100);
  std::vector<float> w(g.w.begin(), g.w.end()), d(w.size());
  absl::StatusOr<ApspInfo> r =
      cpu::apsp(w.data(), d.data(), nullptr, {n, DType::kF32, false}, StopToken(&flag));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  r = ::gcompute::testing::call_stopped_after(std::chrono::milliseconds(20), [&](StopToken stop) {
        return cpu::apsp(w.data(), d.data(), nullptr, {n, DType::kF32, false}, stop);
      }).result;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
}

TEST(CpuApsp, RejectsInvalidInput) {
  std::vector<float> w(9, 1.0f), d(9);
  std::vector<std::int32_t> next(9);
  EXPECT_EQ(cpu::apsp(w.data(), d.data(), nullptr, {-1, DType::kF32, false}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu::apsp(w.data(), d.data(), nullptr, {3, DType::kF64, false}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu::apsp(w.data(), d.data(), nullptr, {3, DType::kF32, true}).status().code(),
            absl::StatusCode::kInvalidArgument);
  w[5] = std::numeric_limits<float>::quiet_NaN();
  absl::Status st = cpu::apsp(w.data(), d.data(), next.data(), {3, DType::kF32, true}).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("W[1][2]"), absl::string_view::npos) << st;
  w[5] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(cpu::apsp(w.data(), d.data(), next.data(), {3, DType::kF32, true}).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<std::int32_t> wi(9, 1);
  std::vector<std::int32_t> di(9);
  wi[7] = kI32MaxAbsWeight + 1;
  st = cpu::apsp(wi.data(), di.data(), next.data(), {3, DType::kI32, true}).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("W[2][1]"), absl::string_view::npos) << st;
  wi[7] = -kI32MaxAbsWeight;
  EXPECT_TRUE(cpu::apsp(wi.data(), di.data(), next.data(), {3, DType::kI32, true}).ok());
}

TEST(CpuApsp, EdgeListToDense) {
  const std::vector<std::int64_t> src = {0, 1, 0, 2, 2, 1};
  const std::vector<std::int64_t> dst = {1, 2, 1, 2, 0, 2};
  const std::vector<double> wt = {5, -3, 2, 7, 1e6, -1};
  EdgeListView view{3, 6, src.data(), dst.data(), wt.data()};
  auto f = ::gcompute::testing::poisoned<float>(9);
  ASSERT_TRUE(cpu::edge_list_to_dense(view, DType::kF32, f.data()).ok());
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f, (std::vector<float>{inf, 2, inf, inf, inf, -3, 1e6, inf, 7}));
  auto i = ::gcompute::testing::poisoned<std::int32_t>(9);
  ASSERT_TRUE(cpu::edge_list_to_dense(view, DType::kI32, i.data()).ok());
  const std::int32_t no = kI32NoEdge;
  EXPECT_EQ(i, (std::vector<std::int32_t>{no, 2, no, no, no, -3, 1000000, no, 7}));

  auto expect_error = [&](const EdgeListView& v, DType t, const char* needle) {
    std::vector<float> out(16, 42.0f);
    const absl::Status st = cpu::edge_list_to_dense(v, t, out.data());
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find(needle), absl::string_view::npos)
        << st << " should mention " << needle;
    for (float x : out) {
      EXPECT_EQ(x, 42.0f) << "output written despite the error";
    }
  };
  const std::vector<std::int64_t> bad_dst = {1, 2, 3};
  expect_error({3, 3, src.data(), bad_dst.data(), wt.data()}, DType::kF32, "edge 2");
  const std::vector<std::int64_t> neg_src = {0, -1};
  expect_error({3, 2, neg_src.data(), dst.data(), wt.data()}, DType::kF32, "edge 1");
  const std::vector<double> nan_w = {1, 2, std::nan(""), 4};
  expect_error({3, 4, src.data(), dst.data(), nan_w.data()}, DType::kF32, "edge 2");
  const std::vector<double> frac = {1, 1.5};
  expect_error({3, 2, src.data(), dst.data(), frac.data()}, DType::kI32, "edge 1");
  const std::vector<double> big = {1, 2, 3, kI32MaxAbsWeight + 1.0};
  expect_error({3, 4, src.data(), dst.data(), big.data()}, DType::kI32, "edge 3");
  const std::vector<double> minus_inf = {-kInf};
  expect_error({3, 1, src.data(), dst.data(), minus_inf.data()}, DType::kF32, "edge 0");
  expect_error({3, 1, src.data(), dst.data(), wt.data()}, DType::kF64, "f64");
  // No edges: all "no edge"; n = 0: nothing.
  std::vector<float> e(4, 0.0f);
  ASSERT_TRUE(
      cpu::edge_list_to_dense({2, 0, nullptr, nullptr, nullptr}, DType::kF32, e.data()).ok());
  EXPECT_EQ(e, std::vector<float>(4, inf));
  EXPECT_TRUE(
      cpu::edge_list_to_dense({0, 0, nullptr, nullptr, nullptr}, DType::kI32, nullptr).ok());
}

}  // namespace
}  // namespace gcompute::kernels
