// SPDX-License-Identifier: Apache-2.0
// cuda::sssp against plain Bellman-Ford in double (support/sssp_check.hpp) and against
// cpu::sssp on the same fresh random graphs, with poisoned outputs: non-negative and negative
// weights, zero-weight cycles, unreachable vertices, negative cycles reachable or not, a vertex
// of high degree, invalid arrays (the same messages as validate_sssp) and cancellation.
#include "gcompute/kernels/cuda/sssp.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gcompute/kernels/cpu/sssp.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/random.hpp"
#include "support/sssp_check.hpp"
#include "support/status_checks.hpp"

namespace gcompute::kernels::cuda {
namespace {

using testing::SsspGraph;

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

// Not a vertex and not -1, so an output left unwritten shows.
constexpr std::int32_t kParentPoison = 0x5a5a5a5a;

struct SsspRun {
  absl::StatusOr<SsspInfo> info = absl::UnknownError("not run");
  std::vector<float> dist;
  std::vector<std::int32_t> parent;
};

class CudaSssp : public testing::DeviceTest {
 protected:
  CudaSssp() : DeviceTest(/*priority_stream=*/false, /*libraries=*/false) {}

  /// Copies `g` to the device, poisons the outputs, runs cuda::sssp and copies them back.
  /// Edits of the device arrays (to make them invalid) go through `edit` before the run.
  template <typename Edit>
  SsspRun run(const SsspGraph& g, std::int64_t source, StopToken stop, Edit edit) {
    SsspRun r;
    const std::size_t n = static_cast<std::size_t>(g.n), m = g.cols.size();
    kernels::cuda::DeviceBuffer off = device_.buffer((n + 1) * 8);
    kernels::cuda::DeviceBuffer cols = device_.buffer(std::max<std::size_t>(m, 1) * 4);
    kernels::cuda::DeviceBuffer w = device_.buffer(std::max<std::size_t>(m, 1) * 4);
    kernels::cuda::DeviceBuffer dist = device_.buffer(n * 4);
    kernels::cuda::DeviceBuffer parent = device_.buffer(n * 4);
    const std::size_t ws_bytes = sssp_workspace_bytes(g.n, static_cast<std::int64_t>(m));
    kernels::cuda::DeviceBuffer ws = device_.buffer(ws_bytes);
    EXPECT_EQ(cudaMemcpy(off.data(), g.offsets.data(), (n + 1) * 8, cudaMemcpyHostToDevice),
              cudaSuccess);
    if (m > 0) {
      EXPECT_EQ(cudaMemcpy(cols.data(), g.cols.data(), m * 4, cudaMemcpyHostToDevice), cudaSuccess);
      EXPECT_EQ(cudaMemcpy(w.data(), g.weights.data(), m * 4, cudaMemcpyHostToDevice), cudaSuccess);
    }
    EXPECT_EQ(cudaMemset(dist.data(), 0xff, n * 4), cudaSuccess);  // NaN
    const std::vector<std::int32_t> poison(n, kParentPoison);
    EXPECT_EQ(cudaMemcpy(parent.data(), poison.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    CsrView view{g.n, static_cast<std::int64_t>(m), static_cast<const std::uint64_t*>(off.data()),
                 static_cast<const std::uint32_t*>(cols.data()),
                 static_cast<const float*>(w.data())};
    edit(view, off.data(), cols.data(), w.data());
    r.info = sssp(ctx_, view, source, static_cast<float*>(dist.data()),
                  static_cast<std::int32_t*>(parent.data()), ws.data(), ws_bytes, stop);
    r.dist.resize(n);
    r.parent.resize(n);
    EXPECT_EQ(cudaMemcpy(r.dist.data(), dist.data(), n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(r.parent.data(), parent.data(), n * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return r;
  }
  SsspRun run(const SsspGraph& g, std::int64_t source, StopToken stop = {}) {
    return run(g, source, stop, [](CsrView&, void*, void*, void*) {});
  }

  /// Checks against the reference and the CPU kernel (distances equal; both parent trees
  /// valid). `ref` may be null for graphs too large for Bellman-Ford in double: the CPU
  /// kernel's distances are the reference then.
  void check(const SsspGraph& g, std::int64_t source, bool with_reference = true) {
    SCOPED_TRACE(::testing::Message()
                 << "n=" << g.n << " m=" << g.cols.size() << " source=" << source);
    std::vector<float> cpu_dist(static_cast<std::size_t>(g.n));
    std::vector<std::int32_t> cpu_parent(static_cast<std::size_t>(g.n));
    const absl::StatusOr<SsspInfo> cpu_info =
        cpu::sssp(g.view(), source, cpu_dist.data(), cpu_parent.data());
    ASSERT_TRUE(cpu_info.ok()) << cpu_info.status();
    testing::SsspReference ref;
    if (with_reference) {
      ref = testing::bellman_ford(g, source);
    } else {
      ref.dist.assign(cpu_dist.begin(), cpu_dist.end());
    }
    const SsspRun r = run(g, source);
    ASSERT_TRUE(r.info.ok()) << r.info.status();
    testing::expect_shortest_paths(g, source, ref, *r.info, r.dist, r.parent);
    EXPECT_EQ(std::memcmp(r.dist.data(), cpu_dist.data(), cpu_dist.size() * 4), 0)
        << "GPU and CPU distances differ";
    EXPECT_GE(r.info->rounds, 1);
    EXPECT_GE(r.info->relaxations, 0);
  }
};

const std::int64_t kSizes[] = {1, 2, 3, 7, 31, 64, 97, 257, 1009};

TEST_F(CudaSssp, NonNegativeWeightsMatchBellmanFordAndTheCpu) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : kSizes) {
    for (double degree : {0.5, 2.0, 8.0, 40.0}) {
      const auto m = static_cast<std::int64_t>(degree * static_cast<double>(n)) + 1;
      SsspGraph g = testing::random_sssp_graph(rng, n, m, 0, 100);
      g.build_csr();
      check(g, rng.uniform_int(0, n - 1));
    }
  }
}

TEST_F(CudaSssp, NegativeWeightsWithoutNegativeCyclesMatchBellmanFordAndTheCpu) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : kSizes) {
    for (double degree : {1.0, 3.0, 12.0}) {
      const auto m = static_cast<std::int64_t>(degree * static_cast<double>(n)) + 1;
      SsspGraph g = testing::random_sssp_graph(rng, n, m, 0, 100);
      testing::apply_potentials(rng, g, 300);
      g.build_csr();
      check(g, rng.uniform_int(0, n - 1));
    }
  }
}

TEST_F(CudaSssp, ZeroWeightCyclesLeaveAParentTree) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {2, 5, 31, 97, 400}) {
    for (bool negative : {false, true}) {
      SsspGraph g = testing::random_sssp_graph(rng, n, 3 * n, 0, 5);
      for (int c = 0; c < 4; ++c) {
        testing::add_cycle(rng, g, 0, n, rng.uniform_int(1, std::min<std::int64_t>(n, 12)), 0, 0);
      }
      for (std::int64_t v = 0; v + 1 < n; v += 2) {
        g.edges.push_back({v, v + 1, 0});
        g.edges.push_back({v + 1, v, 0});
      }
      if (negative) testing::apply_potentials(rng, g, 50);
      g.build_csr();
      check(g, rng.uniform_int(0, n - 1));
    }
  }
}

// Many warps' worth of edges from one vertex, and larger graphs against the CPU kernel.
TEST_F(CudaSssp, HighDegreeAndLargerGraphsMatchTheCpu) {
  GC_SEEDED_RNG(rng);
  SsspGraph star = testing::random_sssp_graph(rng, 5000, 20000, 0, 1000);
  for (std::int64_t e = 0; e < 100000; ++e) {
    star.edges.push_back(
        {0, rng.uniform_int(0, 4999), static_cast<double>(rng.uniform_int(1, 1000))});
  }
  star.build_csr();
  check(star, 0, /*with_reference=*/false);
  for (bool negative : {false, true}) {
    SsspGraph g = testing::random_sssp_graph(rng, 30011, 8 * 30011, 1, 1000);
    if (negative) testing::apply_potentials(rng, g, 2000);
    g.build_csr();
    check(g, rng.uniform_int(0, g.n - 1), /*with_reference=*/false);
  }
}

TEST_F(CudaSssp, UnreachableVerticesGetInfinityAndNoParent) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {2, 9, 100, 333}) {
    std::int64_t k = 0;
    const SsspGraph g = testing::graph_with_unreachable_part(rng, n, k);
    const std::int64_t source = rng.uniform_int(0, k - 1);
    check(g, source);
    const SsspRun r = run(g, source);
    ASSERT_TRUE(r.info.ok()) << r.info.status();
    for (std::int64_t v = k; v < n; ++v) {
      EXPECT_EQ(r.dist[v], std::numeric_limits<float>::infinity()) << v;
      EXPECT_EQ(r.parent[v], -1) << v;
    }
  }
}

TEST_F(CudaSssp, ReachableNegativeCycleIsReported) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {1, 2, 3, 17, 97, 500, 20000}) {
    for (int trial = 0; trial < 3; ++trial) {
      std::int64_t source = 0;
      const SsspGraph g = testing::graph_with_reachable_negative_cycle(rng, n, source);
      SCOPED_TRACE(::testing::Message() << "n=" << n << " trial " << trial);
      const SsspRun r = run(g, source);
      ASSERT_TRUE(r.info.ok()) << r.info.status();
      if (n <= 500) {
        ASSERT_TRUE(testing::bellman_ford(g, source).negative_cycle);
        testing::expect_negative_cycle(g, source, *r.info);
      } else {  // too large for the O(n m) checks: the cycle vertex must lie on a parent cycle
        ASSERT_TRUE(r.info->negative_cycle);
        std::int64_t at = r.info->cycle_vertex;
        for (std::int64_t step = 0; step < n && at >= 0; ++step) at = r.parent[at];
        ASSERT_GE(at, 0) << "the parent walk from cycle_vertex ends";
        std::int64_t walk = at, steps = 0;
        do {
          walk = r.parent[walk];
          ++steps;
        } while (walk != at && walk >= 0 && steps <= n);
        EXPECT_EQ(walk, at) << "no parent cycle above cycle_vertex " << r.info->cycle_vertex;
      }
      // The CPU kernel agrees that there is one.
      std::vector<float> d(static_cast<std::size_t>(n));
      std::vector<std::int32_t> p(static_cast<std::size_t>(n));
      const absl::StatusOr<SsspInfo> cpu_info = cpu::sssp(g.view(), source, d.data(), p.data());
      ASSERT_TRUE(cpu_info.ok()) << cpu_info.status();
      EXPECT_TRUE(cpu_info->negative_cycle);
    }
  }
}

TEST_F(CudaSssp, UnreachableNegativeCycleIsNotReported) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {4, 10, 97, 300}) {
    std::int64_t k = 0;
    const SsspGraph g = testing::graph_with_unreachable_negative_cycle(rng, n, k);
    check(g, rng.uniform_int(0, k - 1));
  }
}

TEST_F(CudaSssp, NegativeSelfLoopIsANegativeCycle) {
  testing::expect_negative_self_loops_found(
      [this](const SsspGraph& g, std::int64_t source) { return run(g, source).info; });
}

TEST_F(CudaSssp, RejectsInvalidArraysAsValidateSsspDoes) {
  SsspGraph g;
  g.n = 4;
  g.edges = {{0, 1, 1}, {1, 2, 2}, {2, 3, -1}, {3, 0, 5}};
  g.build_csr();
  ASSERT_TRUE(run(g, 0).info.ok());
  // Each defect, made on a host copy: the GPU must refuse it with validate_sssp's status.
  auto expect_same = [&](const SsspGraph& bad, std::int64_t source) {
    const absl::Status expected = validate_sssp(bad.view(), source);
    ASSERT_EQ(expected.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(run(bad, source).info.status(), expected);
  };
  expect_same(g, 4);
  expect_same(g, -1);
  SsspGraph bad = g;
  bad.offsets[0] = 1;
  expect_same(bad, 0);
  bad = g;
  bad.offsets[2] = 5;
  expect_same(bad, 0);
  bad = g;
  bad.offsets[4] = 3;
  expect_same(bad, 0);
  bad = g;
  bad.cols[2] = 4;
  expect_same(bad, 0);
  bad = g;
  bad.cols[1] = 0xFFFFFFFFu;
  bad.cols[3] = 9;
  expect_same(bad, 0);
  bad = g;
  bad.weights[1] = std::numeric_limits<float>::quiet_NaN();
  expect_same(bad, 0);
  bad = g;
  bad.weights[3] = -std::numeric_limits<float>::infinity();
  expect_same(bad, 0);
  // A view whose m disagrees with row_offsets[n].
  const SsspRun r = run(g, 0, {}, [](CsrView& v, void*, void*, void*) { v.m = 3; });
  testing::expect_status(r.info.status(), absl::StatusCode::kInvalidArgument,
                         "row_offsets[n = 4] = 4, must equal m = 3");
  const SsspRun no_ws = run(g, 0, {}, [](CsrView& v, void*, void*, void*) { v.n = 5; });
  EXPECT_EQ(no_ws.info.status().code(), absl::StatusCode::kInvalidArgument) << no_ws.info.status();
}

TEST_F(CudaSssp, StopsWhenCancelled) {
  for (double w : {1.0, -1.0}) {
    SsspGraph g;
    g.n = 5000;  // a chain: one round per vertex
    for (std::int64_t v = 0; v + 1 < g.n; ++v) g.edges.push_back({v, v + 1, w});
    g.build_csr();
    const std::atomic<bool> flag{true};
    const SsspRun r = run(g, 0, StopToken(&flag));
    testing::expect_status(r.info.status(), absl::StatusCode::kCancelled, "sssp cancelled");
    const SsspRun full = run(g, 0);
    ASSERT_TRUE(full.info.ok()) << full.info.status();
    EXPECT_EQ(full.dist[g.n - 1], static_cast<float>(w * static_cast<double>(g.n - 1)));
    EXPECT_EQ(full.info->rounds, g.n);
  }
}

}  // namespace
}  // namespace gcompute::kernels::cuda
