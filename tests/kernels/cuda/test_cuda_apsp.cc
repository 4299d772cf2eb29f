// SPDX-License-Identifier: Apache-2.0
// cuda::apsp against a plain triple-loop Floyd-Warshall in double / int64 (and Dijkstra for
// non-negative weights), on fresh random graphs of ragged sizes, with poisoned outputs.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include "gcompute/kernels/cuda/apsp.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/gpu.hpp"
#include "support/oracle.hpp"

namespace gcompute::kernels::cuda {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

std::mt19937_64& rng() {
  static std::mt19937_64 gen(std::random_device{}());
  return gen;
}

/// Dense weight matrix in double; +inf = no edge. Weights are exactly representable in the
/// dtype they are run with (callers pick integers for i32 and exact-sum tests).
struct Graph {
  std::int64_t n = 0;
  std::vector<double> w;
  double& at(std::int64_t i, std::int64_t j) { return w[i * n + j]; }
  double at(std::int64_t i, std::int64_t j) const { return w[i * n + j]; }
};

/// Random graph: each ordered pair (no self-loops) is an edge with probability `density`;
/// weights uniform in [lo, hi], rounded to integers when `integer`.
Graph random_graph(std::int64_t n, double density, double lo, double hi, bool integer) {
  Graph g{n, std::vector<double>(n * n, kInf)};
  std::uniform_real_distribution<double> u(0.0, 1.0), w(lo, hi);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i == j || u(rng()) >= density) continue;
      double x = w(rng());
      if (integer) x = std::floor(x);
      if (!integer) x = static_cast<double>(static_cast<float>(x));
      g.at(i, j) = x;
    }
  }
  return g;
}

/// w'(u,v) = w(u,v) + p(u) - p(v): negative edges, the same shortest paths, no negative cycle.
void apply_potentials(Graph& g, std::int64_t max_p) {
  std::uniform_int_distribution<std::int64_t> p(0, max_p);
  std::vector<double> pot(g.n);
  for (auto& x : pot) x = static_cast<double>(p(rng()));
  for (std::int64_t i = 0; i < g.n; ++i) {
    for (std::int64_t j = 0; j < g.n; ++j) {
      if (std::isfinite(g.at(i, j))) g.at(i, j) += pot[i] - pot[j];
    }
  }
}

struct Oracle {
  std::vector<double> d;
  bool negative_cycle = false;
};

/// Plain Floyd-Warshall in double (exact for the integer weights used here).
Oracle floyd_warshall(const Graph& g) {
  const std::int64_t n = g.n;
  Oracle o{g.w};
  for (std::int64_t i = 0; i < n; ++i) o.d[i * n + i] = std::min(0.0, o.d[i * n + i]);
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double a = o.d[i * n + k];
      if (a == kInf) continue;
      for (std::int64_t j = 0; j < n; ++j) {
        const double s = a + o.d[k * n + j];
        if (s < o.d[i * n + j]) o.d[i * n + j] = s;
      }
    }
  }
  for (std::int64_t i = 0; i < n; ++i) o.negative_cycle |= o.d[i * n + i] < 0;
  return o;
}

/// Dense Dijkstra from every source (non-negative weights only).
std::vector<double> dijkstra_all(const Graph& g) {
  const std::int64_t n = g.n;
  std::vector<double> out(n * n, kInf);
  std::vector<char> done(n);
  for (std::int64_t s = 0; s < n; ++s) {
    double* dist = &out[s * n];
    std::fill(done.begin(), done.end(), 0);
    dist[s] = 0;
    for (std::int64_t it = 0; it < n; ++it) {
      std::int64_t u = -1;
      for (std::int64_t v = 0; v < n; ++v) {
        if (!done[v] && (u < 0 || dist[v] < dist[u])) u = v;
      }
      if (u < 0 || dist[u] == kInf) break;
      done[u] = 1;
      for (std::int64_t v = 0; v < n; ++v) dist[v] = std::min(dist[v], dist[u] + g.at(u, v));
    }
  }
  return out;
}

struct GpuResult {
  absl::StatusOr<ApspInfo> info;
  std::vector<double> d;  ///< decoded: +inf for no path
  std::vector<std::int32_t> next;
};

/// Device memory for `count` elements of T (at least one), on the test device's stream.
template <class T>
struct DevBuf {
  DeviceArray<T> a;
  T* p = nullptr;
  DevBuf(const testing::TestDevice& device, std::size_t count) {
    absl::StatusOr<DeviceArray<T>> made =
        DeviceArray<T>::create(std::max<std::size_t>(count, 1), device.stream(), device.memory());
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return;
    a = *std::move(made);
    p = a.data();
  }
};

/// Runs cuda::apsp on g in `dtype`; outputs are poisoned before the run. With `two_streams`
/// (the server's configuration) the context carries a higher-priority second stream, so the
/// next round's pivot work overlaps the bulk of each round; without, everything runs in order
/// on one stream. The streams are blocking: ordered after the legacy stream's cudaMemset
/// poison, unlike the lanes' streams.
GpuResult run_gpu(const Graph& g, DType dtype, bool next_hop, StopToken stop = {},
                  bool two_streams = true, ApspTuning tuning = {}) {
  const std::int64_t n = g.n;
  const std::size_t count = static_cast<std::size_t>(n * n);
  ApspShape shape{n, dtype, next_hop};
  std::vector<std::uint32_t> host_w(count);
  for (std::size_t e = 0; e < count; ++e) {
    if (dtype == DType::kF32) {
      const float f = static_cast<float>(g.w[e]);
      std::memcpy(&host_w[e], &f, 4);
    } else {
      const std::int32_t v = std::isfinite(g.w[e]) ? static_cast<std::int32_t>(g.w[e]) : kI32NoEdge;
      std::memcpy(&host_w[e], &v, 4);
    }
  }
  absl::StatusOr<testing::TestDevice> device = testing::TestDevice::create(two_streams, false);
  EXPECT_TRUE(device.ok()) << device.status();
  if (!device.ok()) return GpuResult{device.status(), {}, {}};
  const Context ctx = device->context();
  DevBuf<std::uint32_t> w(*device, count), d(*device, count);
  DevBuf<std::int32_t> nx(*device, count);
  const std::size_t ws_bytes = apsp_workspace_bytes(shape);
  DevBuf<unsigned char> ws(*device, ws_bytes);
  EXPECT_EQ(cudaMemcpy(w.p, host_w.data(), count * 4, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(d.p, 0x7f, std::max<std::size_t>(count, 1) * 4), cudaSuccess);  // poison
  EXPECT_EQ(cudaMemset(nx.p, 0x5a, std::max<std::size_t>(count, 1) * 4), cudaSuccess);
  EXPECT_EQ(cudaMemset(ws.p, 0x33, std::max<std::size_t>(ws_bytes, 1)), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the poison lands before apsp starts
  GpuResult r{
      apsp(ctx, w.p, d.p, next_hop ? nx.p : nullptr, shape, ws.p, ws_bytes, stop, tuning), {}, {}};
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::uint32_t> raw(count);
  EXPECT_EQ(cudaMemcpy(raw.data(), d.p, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  r.d.resize(count);
  for (std::size_t e = 0; e < count; ++e) {
    if (dtype == DType::kF32) {
      float f;
      std::memcpy(&f, &raw[e], 4);
      r.d[e] = f;
    } else {
      std::int32_t v;
      std::memcpy(&v, &raw[e], 4);
      r.d[e] = v == kI32NoEdge ? kInf : v;
    }
  }
  if (next_hop) {
    r.next.resize(count);
    EXPECT_EQ(cudaMemcpy(r.next.data(), nx.p, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  }
  return r;
}

/// Exact comparison (integer-valued inputs) or relative to the magnitude of path sums.
void expect_distances(const Graph& g, const std::vector<double>& want,
                      const std::vector<double>& got, double tol, const char* what) {
  std::int64_t bad = 0;
  for (std::int64_t e = 0; e < g.n * g.n; ++e) {
    const bool ok = (std::isinf(want[e]) || std::isinf(got[e]))
                        ? want[e] == got[e]
                        : std::fabs(want[e] - got[e]) <= tol * std::max(1.0, std::fabs(want[e]));
    if (!ok && ++bad <= 5) {
      ADD_FAILURE() << what << " n=" << g.n << " (" << e / g.n << "," << e % g.n << ") want "
                    << want[e] << " got " << got[e];
    }
  }
  EXPECT_EQ(bad, 0) << what << " n=" << g.n;
}

/// Every next-hop path is made of edges and sums to the reported distance.
void expect_paths(const Graph& g, const GpuResult& r, double tol) {
  const std::int64_t n = g.n;
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n && bad < 5; ++i) {
    for (std::int64_t j = 0; j < n && bad < 5; ++j) {
      const std::int32_t h = r.next[i * n + j];
      const double dist = r.d[i * n + j];
      if (std::isinf(dist)) {
        if (h != -1) ++bad, ADD_FAILURE() << "(" << i << "," << j << ") unreachable, next " << h;
        continue;
      }
      if (i == j) {
        if (h != i) ++bad, ADD_FAILURE() << "next[" << i << "][" << i << "] = " << h;
        continue;
      }
      double len = 0;
      std::int64_t x = i, steps = 0;
      bool ok = true;
      while (x != j) {
        const std::int32_t y = r.next[x * n + j];
        if (y < 0 || y >= n || !std::isfinite(g.at(x, y)) || ++steps > n) {
          ok = false;
          break;
        }
        len += g.at(x, y);
        x = y;
      }
      if (!ok || std::fabs(len - dist) > tol * std::max(1.0, std::fabs(dist))) {
        ++bad;
        ADD_FAILURE() << "path " << i << "->" << j << " broken or length " << len << " != " << dist
                      << " (steps " << steps << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

/// Checks the GPU's result against the oracle and returns how the next hops were made (false
/// also when the run failed, which has been reported).
bool check_against_oracle(const Graph& g, DType dtype, bool next_hop, double tol,
                          ApspTuning tuning = {}) {
  const Oracle o = floyd_warshall(g);
  EXPECT_FALSE(o.negative_cycle);
  const GpuResult r = run_gpu(g, dtype, next_hop, {}, true, tuning);
  EXPECT_TRUE(r.info.ok()) << r.info.status();
  if (!r.info.ok()) return false;
  EXPECT_FALSE(r.info->negative_cycle);
  expect_distances(g, o.d, r.d, tol, dtype == DType::kF32 ? "f32" : "i32");
  if (next_hop) expect_paths(g, r, tol);
  return r.info->next_hop_from_distances;
}

const std::int64_t kSizes[] = {1, 2, 3, 63, 64, 65, 127, 128, 129, 200, 256, 300};

TEST(CudaApsp, F32RealWeightsRaggedSizes) {
  GC_REQUIRE_GPU();
  for (std::int64_t n : kSizes) {
    for (double density : {1.0, 0.3}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " density=" << density);
      check_against_oracle(random_graph(n, density, 0.5, 100.0, false), DType::kF32, false, 2e-6);
    }
  }
}

TEST(CudaApsp, F32SparseDisconnectedMatchesDijkstra) {
  GC_REQUIRE_GPU();
  for (std::int64_t n : {131, 300, 517}) {
    Graph g = random_graph(n, 4.0 / n, 1, 1000, true);
    // Cut every edge between the halves and isolate the last vertex.
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        if ((i < n / 2) != (j < n / 2) || i == n - 1 || j == n - 1) g.at(i, j) = kInf;
      }
    }
    const std::vector<double> want = dijkstra_all(g);
    const GpuResult r = run_gpu(g, DType::kF32, false);
    ASSERT_TRUE(r.info.ok()) << r.info.status();
    expect_distances(g, want, r.d, 0, "f32 vs dijkstra");
    EXPECT_TRUE(std::isinf(r.d[0 * n + (n - 2)]));
    EXPECT_EQ(r.d[(n - 1) * n + (n - 1)], 0.0);
  }
}

TEST(CudaApsp, F32NegativeEdgesWithPotentials) {
  GC_REQUIRE_GPU();
  for (std::int64_t n : {2, 65, 130, 300}) {
    for (double density : {1.0, 0.05}) {
      Graph g = random_graph(n, density, 0, 100, true);
      apply_potentials(g, 80);
      check_against_oracle(g, DType::kF32, false, 0);
    }
  }
}

TEST(CudaApsp, I32RaggedDenseSparseNegative) {
  GC_REQUIRE_GPU();
  for (std::int64_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    check_against_oracle(random_graph(n, 1.0, -0, 1000, true), DType::kI32, false, 0);
    check_against_oracle(random_graph(n, 0.04, 1, 1000000, true), DType::kI32, false, 0);
    Graph g = random_graph(n, 0.2, 0, 500, true);
    apply_potentials(g, 400);
    check_against_oracle(g, DType::kI32, false, 0);
  }
}

TEST(CudaApsp, I32LargeWeightsSaturate) {
  GC_REQUIRE_GPU();
  // Paths of two such edges exceed 2^30 (exact), of three exceed kI32NoEdge (unreachable).
  for (std::int64_t n : {40, 129}) {
    Graph g = random_graph(n, 0.05, (1 << 29), kI32MaxAbsWeight, true);
    Oracle o = floyd_warshall(g);
    for (double& x : o.d) {
      if (x >= static_cast<double>(kI32NoEdge)) x = kInf;
    }
    const GpuResult r = run_gpu(g, DType::kI32, true);
    ASSERT_TRUE(r.info.ok()) << r.info.status();
    expect_distances(g, o.d, r.d, 0, "i32 large");
    std::int64_t above = 0;
    for (double x : r.d) above += std::isfinite(x) && x >= (1 << 30);
    EXPECT_GT(above, 0) << "test should reach distances above 2^30";
  }
  // Mixed signs whose range does not fit the fast path.
  Graph g = random_graph(100, 0.1, 0, 1 << 26, true);
  apply_potentials(g, 1 << 26);
  check_against_oracle(g, DType::kI32, false, 0);
  check_against_oracle(g, DType::kI32, true, 0);
}

TEST(CudaApsp, NextHopPathsAreEdgesAndSumToDistance) {
  GC_REQUIRE_GPU();
  for (std::int64_t n : {1, 2, 65, 129, 300}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    check_against_oracle(random_graph(n, 0.5, 0.5, 50.0, false), DType::kF32, true, 1e-5);
    // Many zero-weight edges (zero cycles, ties everywhere).
    check_against_oracle(random_graph(n, 0.1, 0, 3, true), DType::kI32, true, 0);
    check_against_oracle(random_graph(n, 1.0, 0, 2, true), DType::kF32, true, 0);
    Graph g = random_graph(n, 0.1, 0, 20, true);
    apply_potentials(g, 30);
    check_against_oracle(g, DType::kI32, true, 0);
    check_against_oracle(g, DType::kF32, true, 0);
  }
}

// Positive integer weights: next hops come from the distances (one pass after distance-only
// rounds) and are exactly the documented rule's, which the CPU backend also follows: sparse,
// dense and complete graphs, ragged sizes and multiples of the tile, both element types.
void expect_next_hop_rule(const Graph& g, DType dtype) {
  const Oracle o = floyd_warshall(g);
  ASSERT_FALSE(o.negative_cycle);
  const GpuResult r = run_gpu(g, dtype, true);
  ASSERT_TRUE(r.info.ok()) << r.info.status();
  EXPECT_TRUE(r.info->next_hop_from_distances) << "next hops not from the distances";
  expect_distances(g, o.d, r.d, 0, dtype == DType::kF32 ? "f32" : "i32");
  expect_paths(g, r, 0);
  const std::vector<std::int32_t> want = gcompute::testing::next_hop_rule(g.w, o.d, g.n);
  std::int64_t differ = 0;
  for (std::size_t e = 0; e < want.size(); ++e) {
    if (r.next[e] != want[e] && differ++ < 5) {
      ADD_FAILURE() << "N[" << e / g.n << "][" << e % g.n << "] = " << r.next[e] << ", the rule "
                    << want[e];
    }
  }
  EXPECT_EQ(differ, 0);
}

TEST(CudaApsp, NextHopsFromDistancesFollowTheRule) {
  GC_REQUIRE_GPU();
  for (std::int64_t n : {2, 3, 64, 65, 128, 129, 200, 256, 300, 515}) {
    for (double density : {0.02, 0.3, 1.0}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " density=" << density);
      const Graph g = random_graph(n, density, 1, n % 2 == 0 ? 1000 : 4, true);
      for (DType dtype : {DType::kF32, DType::kI32}) expect_next_hop_rule(g, dtype);
    }
  }
  // Every weight equal: every pair is its own edge and nothing is a candidate.
  expect_next_hop_rule(random_graph(300, 1.0, 7, 7, true), DType::kF32);
  // Self-loops of weight >= 0 do not matter.
  Graph g = random_graph(200, 0.1, 1, 30, true);
  for (std::int64_t i = 0; i < 200; i += 3) g.at(i, i) = static_cast<double>(i % 5);
  expect_next_hop_rule(g, DType::kI32);
}

// Wherever the pass could be wrong or does not fit, the fused kernel makes the next hops.
TEST(CudaApsp, NextHopsFallBackToTheFusedKernel) {
  GC_REQUIRE_GPU();
  const std::int64_t n = 200;
  Graph zero = random_graph(n, 0.2, 1, 20, true);
  zero.at(3, 4) = 0;  // a zero-weight edge: chains could loop through zero-weight cycles
  Graph negative = random_graph(n, 0.2, 1, 20, true);
  negative.at(5, 6) = -1;
  const Graph fractional = random_graph(n, 0.2, 0.5, 20, false);
  const Graph heavy = random_graph(n, 0.2, 1, 1 << 17, true);  // 199 * 2^17 >= 2^24
  for (DType dtype : {DType::kF32, DType::kI32}) {
    EXPECT_FALSE(check_against_oracle(zero, dtype, true, 0)) << "zero-weight edge";
    EXPECT_FALSE(check_against_oracle(negative, dtype, true, 0)) << "negative edge";
  }
  EXPECT_FALSE(check_against_oracle(fractional, DType::kF32, true, 1e-5)) << "fractional f32";
  EXPECT_FALSE(check_against_oracle(heavy, DType::kF32, true, 0)) << "f32 sums beyond 2^24";
  EXPECT_TRUE(check_against_oracle(heavy, DType::kI32, true, 0)) << "i32 sums are exact";
  // Too many candidates for the row's capacity, and the pass turned off.
  const Graph dense = random_graph(n, 1.0, 1, 100, true);
  EXPECT_FALSE(check_against_oracle(dense, DType::kF32, true, 0, {.next_hop_candidates = 1}));
  EXPECT_FALSE(
      check_against_oracle(dense, DType::kI32, true, 0, {.next_hop_from_distances = false}));
  EXPECT_TRUE(check_against_oracle(dense, DType::kI32, true, 0));
}

TEST(CudaApsp, PlantedNegativeCycleIsDetected) {
  GC_REQUIRE_GPU();
  std::uniform_int_distribution<int> len(2, 6);
  for (std::int64_t n : {3, 70, 200, 300}) {
    for (DType dtype : {DType::kF32, DType::kI32}) {
      for (bool next_hop : {false, true}) {
        Graph g = random_graph(n, 0.1, 1, 100, true);
        std::vector<std::int64_t> perm(n);
        for (std::int64_t i = 0; i < n; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), rng());
        const int l = std::min<int>(len(rng()), static_cast<int>(n));
        for (int t = 0; t < l; ++t) g.at(perm[t], perm[(t + 1) % l]) = t == 0 ? -1000 : 10;
        const Oracle o = floyd_warshall(g);
        ASSERT_TRUE(o.negative_cycle);
        const GpuResult r = run_gpu(g, dtype, next_hop);
        ASSERT_TRUE(r.info.ok()) << r.info.status();
        ASSERT_TRUE(r.info->negative_cycle) << "n=" << n;
        const std::int64_t v = r.info->cycle_vertex;
        ASSERT_GE(v, 0);
        ASSERT_LT(v, n);
        // Every other weight is positive, so v lies on a negative closed walk exactly when it
        // reaches the planted cycle and is reached from it. (The oracle's own D[v][v] is no
        // test: which walks Floyd-Warshall finds through a negative cycle depends on its order.)
        const std::int64_t c = perm[0];
        EXPECT_TRUE(o.d[v * n + c] < kInf && o.d[c * n + v] < kInf)
            << "vertex " << v << " neither on nor strongly connected to the negative cycle";
        EXPECT_LT(r.d[v * n + v], 0);
      }
    }
  }
  // A negative self-loop is a negative cycle too.
  Graph g = random_graph(150, 0.1, 1, 100, true);
  g.at(140, 140) = -1;
  for (DType dtype : {DType::kF32, DType::kI32}) {
    const GpuResult r = run_gpu(g, dtype, false);
    ASSERT_TRUE(r.info.ok()) << r.info.status();
    EXPECT_TRUE(r.info->negative_cycle);
    EXPECT_EQ(r.info->cycle_vertex, 140);
  }
}

TEST(CudaApsp, LargerRaggedF32AndI32) {
  GC_REQUIRE_GPU();
  Graph g = random_graph(777, 0.02, 1, 1000, true);
  apply_potentials(g, 500);
  check_against_oracle(g, DType::kF32, false, 0);
  check_against_oracle(g, DType::kI32, true, 0);
}

TEST(CudaApsp, DeterministicAcrossRuns) {
  GC_REQUIRE_GPU();
  const Graph g = random_graph(300, 0.5, 0.5, 100, false);
  const GpuResult a = run_gpu(g, DType::kF32, true), b = run_gpu(g, DType::kF32, true);
  ASSERT_TRUE(a.info.ok() && b.info.ok());
  EXPECT_EQ(a.d, b.d);
  EXPECT_EQ(a.next, b.next);
}

TEST(CudaApsp, OneStreamAndLookAheadStreamsAgreeWithTheOracle) {
  GC_REQUIRE_GPU();
  // 1 to 7 pivot blocks, one- and two-block rounds (small graphs take one-block rounds by
  // default, so both are forced): rounds whose look-ahead has zero, one and several bulk
  // tiles, and an odd number of blocks that leaves a last one-block round.
  for (const int depth : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "ApspTuning::depth = " << depth);
    const ApspTuning forced{.depth = depth};
    for (std::int64_t n : {100, 129, 300, 640, 777}) {
      Graph g = random_graph(n, 0.3, 1, 50, true);
      apply_potentials(g, 40);  // negative edges, no negative cycle
      const Oracle o = floyd_warshall(g);
      ASSERT_FALSE(o.negative_cycle);
      const std::vector<double>& want = o.d;
      for (DType dtype : {DType::kF32, DType::kI32}) {
        const GpuResult one = run_gpu(g, dtype, false, {}, false, forced);
        const GpuResult two = run_gpu(g, dtype, false, {}, true, forced);
        ASSERT_TRUE(one.info.ok()) << n << ": " << one.info.status();
        ASSERT_TRUE(two.info.ok()) << n << ": " << two.info.status();
        expect_distances(g, want, one.d, 0, "one stream");
        expect_distances(g, want, two.d, 0, "two streams");
        const GpuResult hops = run_gpu(g, dtype, true, {}, true, forced);
        ASSERT_TRUE(hops.info.ok()) << n << ": " << hops.info.status();
        expect_distances(g, want, hops.d, 0, "two streams, next-hop");
        expect_paths(g, hops, 0);
      }
    }
  }
}

TEST(CudaApsp, RejectsInvalidInput) {
  GC_REQUIRE_GPU();
  Graph g = random_graph(70, 0.5, 1, 10, true);
  g.at(3, 4) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(run_gpu(g, DType::kF32, false).info.status().code(),
            absl::StatusCode::kInvalidArgument);
  g.at(3, 4) = -kInf;
  EXPECT_EQ(run_gpu(g, DType::kF32, false).info.status().code(),
            absl::StatusCode::kInvalidArgument);
  g.at(3, 4) = static_cast<double>(kI32MaxAbsWeight) + 1;
  EXPECT_EQ(run_gpu(g, DType::kI32, false).info.status().code(),
            absl::StatusCode::kInvalidArgument);
  g.at(3, 4) = -static_cast<double>(kI32MaxAbsWeight) - 1;
  EXPECT_EQ(run_gpu(g, DType::kI32, false).info.status().code(),
            absl::StatusCode::kInvalidArgument);

  absl::StatusOr<testing::TestDevice> device = testing::TestDevice::create(true, false);
  ASSERT_TRUE(device.ok()) << device.status();
  Context ctx = device->context();
  ApspShape shape{65, DType::kF32, false};
  const std::size_t need = apsp_workspace_bytes(shape);
  EXPECT_GT(need, 0u);
  DevBuf<float> buf(*device, 65 * 65);
  DevBuf<unsigned char> ws(*device, need);
  EXPECT_EQ(apsp(ctx, buf.p, buf.p, nullptr, shape, ws.p, need - 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  shape.next_hop = true;
  EXPECT_EQ(apsp(ctx, buf.p, buf.p, nullptr, shape, ws.p, need).status().code(),
            absl::StatusCode::kInvalidArgument);
  ApspShape f64{4, DType::kF64, false};
  EXPECT_EQ(apsp(ctx, buf.p, buf.p, nullptr, f64, ws.p, need).status().code(),
            absl::StatusCode::kInvalidArgument);
  ApspShape empty{0, DType::kF32, false};
  auto info = apsp(ctx, nullptr, nullptr, nullptr, empty, nullptr, 0);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->negative_cycle);
  shape.next_hop = false;
  EXPECT_EQ(apsp(ctx, buf.p, buf.p, nullptr, shape, ws.p, need, {}, ApspTuning{.depth = 3})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status too_many = apsp(ctx, buf.p, buf.p, nullptr, shape, ws.p, need, {},
                                     ApspTuning{.next_hop_candidates = 2049})
                                    .status();
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.message().find("next_hop_candidates"), std::string_view::npos) << too_many;
  // The events are the caller's: without them the call cannot run.
  Context no_events = ctx;
  no_events.events[2] = nullptr;
  EXPECT_EQ(apsp(no_events, buf.p, buf.p, nullptr, shape, ws.p, need).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(CudaApsp, StopTokenCancels) {
  GC_REQUIRE_GPU();
  std::atomic<bool> flag{true};
  const Graph g = random_graph(300, 0.5, 1, 10, true);
  EXPECT_EQ(run_gpu(g, DType::kF32, false, StopToken(&flag)).info.status().code(),
            absl::StatusCode::kCancelled);
  flag = false;
  EXPECT_TRUE(run_gpu(g, DType::kF32, false, StopToken(&flag)).info.ok());
}

}  // namespace
}  // namespace gcompute::kernels::cuda
