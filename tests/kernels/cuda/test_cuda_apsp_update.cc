// SPDX-License-Identifier: Apache-2.0
// cuda::apsp_add_edges (the batched update of an APSP result after edge insertions) against
// the per-edge host update cpu::apsp_add_edges and a plain Floyd-Warshall of the new graph in
// double: fresh random graphs of ragged sizes (1, primes, non-multiples of the tiles), growth
// by new vertices, batches that repeat pairs, lower weights and close negative cycles; outputs
// poisoned before each run. Integer weights keep every sum exact, so distances must agree bit
// for bit; next hops must trace shortest, loop-free paths of the new graph and equal the CPU's.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gcompute/kernels/cpu/apsp.hpp"
#include "gcompute/kernels/cuda/apsp.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/random.hpp"

namespace gcompute::kernels::cuda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

class CudaApspUpdateTest : public testing::DeviceTest {
 protected:
  CudaApspUpdateTest() : DeviceTest(/*priority_stream=*/true, /*libraries=*/false) {}
};

struct HostApsp {
  std::vector<float> d;
  std::vector<std::int32_t> next;
  ApspInfo info;
};

/// Random integer weights in [lo, hi] on a fraction `density` of the off-diagonal pairs.
std::vector<float> random_weights(std::mt19937_64& rng, std::int64_t n, double density, int lo,
                                  int hi) {
  std::vector<float> w(static_cast<std::size_t>(n * n), kInf);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> x(lo, hi);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i != j && u(rng) < density) w[i * n + j] = static_cast<float>(x(rng));
    }
  }
  return w;
}

HostApsp host_apsp(const std::vector<float>& w, std::int64_t n) {
  HostApsp r{std::vector<float>(w.size()), std::vector<std::int32_t>(w.size()), {}};
  absl::StatusOr<ApspInfo> info =
      cpu::apsp(w.data(), r.d.data(), r.next.data(), ApspShape{n, DType::kF32, true});
  EXPECT_TRUE(info.ok()) << info.status();
  if (info.ok()) r.info = *info;
  return r;
}

/// The new graph's weights: old ones grown to n, lowered by the edges.
std::vector<float> grown_weights(const std::vector<float>& w, std::int64_t n_old, std::int64_t n,
                                 const std::vector<GraphEdge>& edges) {
  std::vector<float> out(static_cast<std::size_t>(n * n), kInf);
  for (std::int64_t i = 0; i < n_old; ++i) {
    std::copy_n(&w[i * n_old], n_old, &out[i * n]);
  }
  for (const GraphEdge& e : edges) {
    float& x = out[e.src * n + e.dst];
    x = std::min(x, e.weight);
  }
  return out;
}

/// Runs the GPU update on `base` (uploaded) with poisoned outputs.
void run_gpu(const testing::TestDevice& device, const Context& ctx, const HostApsp& base,
             const ApspUpdateShape& shape, const std::vector<GraphEdge>& edges, HostApsp& out) {
  const std::size_t old_cells = static_cast<std::size_t>(shape.n_old * shape.n_old);
  const std::size_t cells = static_cast<std::size_t>(shape.n * shape.n);
  DeviceBuffer d_old = device.buffer(std::max<std::size_t>(old_cells, 1) * 4);
  DeviceBuffer nx_old = device.buffer(std::max<std::size_t>(old_cells, 1) * 4);
  DeviceBuffer d = device.buffer(std::max<std::size_t>(cells, 1) * 4);
  DeviceBuffer nx = device.buffer(std::max<std::size_t>(cells, 1) * 4);
  const std::size_t ws_bytes = apsp_add_edges_workspace_bytes(shape, edges);
  DeviceBuffer ws = device.buffer(std::max<std::size_t>(ws_bytes, 1));
  ASSERT_CUDA(cudaMemcpy(d_old.data(), base.d.data(), old_cells * 4, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(nx_old.data(), base.next.data(), old_cells * 4, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(d.data(), 0x7f, cells * 4));   // poison: large finite floats
  ASSERT_CUDA(cudaMemset(nx.data(), 0x55, cells * 4));  // poison: no valid vertex
  absl::StatusOr<ApspInfo> info =
      apsp_add_edges(ctx, static_cast<const float*>(d_old.data()),
                     shape.next_hop ? static_cast<const std::int32_t*>(nx_old.data()) : nullptr,
                     static_cast<float*>(d.data()),
                     shape.next_hop ? static_cast<std::int32_t*>(nx.data()) : nullptr, shape, edges,
                     ws.data(), ws_bytes);
  ASSERT_TRUE(info.ok()) << info.status();
  out.info = *info;
  out.d.resize(cells);
  out.next.resize(cells);
  ASSERT_CUDA(cudaMemcpy(out.d.data(), d.data(), cells * 4, cudaMemcpyDeviceToHost));
  ASSERT_CUDA(cudaMemcpy(out.next.data(), nx.data(), cells * 4, cudaMemcpyDeviceToHost));
}

/// Every next-hop path of `r` over weights `w` is loop-free and as long as its distance.
void expect_paths(const HostApsp& r, const std::vector<float>& w, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const float want = r.d[i * n + j];
      if (want == kInf) {
        ASSERT_EQ(r.next[i * n + j], -1) << i << "->" << j;
        continue;
      }
      if (i == j) continue;
      double length = 0;
      std::int64_t at = i, steps = 0;
      while (at != j) {
        const std::int32_t hop = r.next[at * n + j];
        ASSERT_TRUE(hop >= 0 && hop < n) << "path " << i << "->" << j << " breaks at " << at;
        ASSERT_LT(steps++, n) << "path " << i << "->" << j << " loops";
        length += w[at * n + hop];
        at = hop;
      }
      ASSERT_EQ(length, want) << "path " << i << "->" << j;
    }
  }
}

TEST_F(CudaApspUpdateTest, MatchesThePerEdgeHostUpdateAndAFullRecomputation) {
  GC_SEEDED_RNG(seeded);
  std::mt19937_64& rng = seeded.engine();
  int cycles = 0, updates = 0;
  for (std::int64_t n_old : {1, 2, 7, 31, 130, 257}) {
    for (std::int64_t grow : {0, 3}) {
      for (int count : {1, 5, 40}) {
        for (bool next_hop : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "n_old=" << n_old << " grow=" << grow
                                            << " edges=" << count << " next_hop=" << next_hop);
          const std::int64_t n = n_old + grow;
          const std::vector<float> w = random_weights(rng, n_old, n_old > 100 ? 0.03 : 0.2, 1, 20);
          const HostApsp base = host_apsp(w, n_old);
          ASSERT_FALSE(base.info.negative_cycle);
          std::vector<GraphEdge> edges;
          std::uniform_int_distribution<std::uint32_t> v(0, static_cast<std::uint32_t>(n - 1));
          std::uniform_int_distribution<int> weight(-4, 20);
          for (int e = 0; e < count; ++e) {
            edges.push_back(GraphEdge{v(rng), v(rng), static_cast<float>(weight(rng))});
            if (e % 7 == 3) {  // a repeated pair, of another weight: the lighter one counts
              GraphEdge again = edges.back();
              again.weight = static_cast<float>(weight(rng));
              edges.push_back(again);
            }
          }
          const ApspUpdateShape shape{n_old, n, next_hop};
          HostApsp want{std::vector<float>(static_cast<std::size_t>(n * n)),
                        std::vector<std::int32_t>(static_cast<std::size_t>(n * n)),
                        {}};
          absl::StatusOr<ApspInfo> host =
              cpu::apsp_add_edges(base.d.data(), base.next.data(), want.d.data(), want.next.data(),
                                  ApspUpdateShape{n_old, n, true}, edges);
          ASSERT_TRUE(host.ok()) << host.status();
          HostApsp got;
          run_gpu(device_, ctx_, base, shape, edges, got);
          if (HasFatalFailure()) return;
          // The full recomputation decides whether the new graph has a negative cycle.
          const std::vector<float> new_w = grown_weights(w, n_old, n, edges);
          const HostApsp full = host_apsp(new_w, n);
          ASSERT_EQ(host->negative_cycle, full.info.negative_cycle);
          ASSERT_EQ(got.info.negative_cycle, full.info.negative_cycle);
          if (full.info.negative_cycle) {
            ++cycles;
            ASSERT_GE(got.info.cycle_vertex, 0);
            ASSERT_LT(got.info.cycle_vertex, n);
            continue;
          }
          ++updates;
          for (std::size_t c = 0; c < got.d.size(); ++c) {
            ASSERT_EQ(got.d[c], want.d[c]) << "cell " << c / n << "," << c % n;
            ASSERT_EQ(got.d[c], full.d[c]) << "cell " << c / n << "," << c % n;
          }
          if (next_hop) {
            expect_paths(got, new_w, n);
            // With next hops the GPU runs the per-edge update itself: the CPU's next hops.
            ASSERT_EQ(got.next, want.next);
          }
        }
      }
    }
  }
  EXPECT_GT(cycles, 0) << "no batch closed a negative cycle: the detection went untested";
  EXPECT_GT(updates, 20);
}

TEST_F(CudaApspUpdateTest, GrowthAloneAndLargeBatches) {
  GC_SEEDED_RNG(seeded);
  std::mt19937_64& rng = seeded.engine();
  // Growth without edges; then a batch with many distinct endpoints (|S| > 128: the closure
  // runs blocked with padding), on a graph wider than one column tile.
  const std::int64_t n_old = 300;
  const std::vector<float> w = random_weights(rng, n_old, 0.02, 1, 50);
  const HostApsp base = host_apsp(w, n_old);
  HostApsp got;
  run_gpu(device_, ctx_, base, ApspUpdateShape{n_old, n_old + 5, true}, {}, got);
  if (HasFatalFailure()) return;
  const std::vector<float> grown = grown_weights(w, n_old, n_old + 5, {});
  const HostApsp full = host_apsp(grown, n_old + 5);
  EXPECT_EQ(got.d, full.d);
  expect_paths(got, grown, n_old + 5);

  std::vector<GraphEdge> edges;
  std::uniform_int_distribution<std::uint32_t> v(0, static_cast<std::uint32_t>(n_old - 1));
  std::uniform_int_distribution<int> weight(1, 30);
  for (int e = 0; e < 150; ++e) {
    edges.push_back(GraphEdge{v(rng), v(rng), static_cast<float>(weight(rng))});
  }
  for (bool next_hop : {false, true}) {
    run_gpu(device_, ctx_, base, ApspUpdateShape{n_old, n_old, next_hop}, edges, got);
    if (HasFatalFailure()) return;
    const std::vector<float> new_w = grown_weights(w, n_old, n_old, edges);
    const HostApsp want = host_apsp(new_w, n_old);
    ASSERT_FALSE(got.info.negative_cycle);
    EXPECT_EQ(got.d, want.d);
    if (next_hop) expect_paths(got, new_w, n_old);
  }
}

TEST_F(CudaApspUpdateTest, RefusesBadArguments) {
  const std::vector<GraphEdge> edges = {GraphEdge{0, 5, 1.0f}};
  float dummy = 0;
  absl::StatusOr<ApspInfo> r = apsp_add_edges(ctx_, &dummy, nullptr, &dummy, nullptr,
                                              ApspUpdateShape{2, 3, false}, edges, nullptr, 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  r = apsp_add_edges(ctx_, &dummy, nullptr, &dummy, nullptr, ApspUpdateShape{4, 3, false}, {},
                     nullptr, 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
}

}  // namespace
}  // namespace gcompute::kernels::cuda
