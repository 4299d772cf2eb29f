// SPDX-License-Identifier: Apache-2.0
// Stored graphs kept on the GPU (ops/graph_mirror.hpp, engine/cuda/graph_mirror_cuda.hpp):
// random batches of every edit kind through a GraphStore whose change feed the mirror
// subscribes to (with a journal that sometimes refuses); after each batch the
// cuda::DeviceGraph's exported CSR must equal the pairwise least-weight edge set of
// GraphStore::get (and, for finite f32 weights, GraphStore::to_dense).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <thread>

#include "engine/backend_factory.hpp"
#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/graph_mirror_cuda.hpp"
#include "gcompute/kernels/cpu/sssp.hpp"
#include "server.hpp"
#include "support/gpu.hpp"
#include "support/graph_mirror_check.hpp"

namespace gcompute::server {
namespace {

using testing::expect_mirror_matches;
using testing::RandomEdits;

struct Fixture {
  std::unique_ptr<cuda::CudaBackend> backend;
  std::unique_ptr<MirrorTargetFactory> targets;
  std::unique_ptr<DeviceGraphMirror> mirror;
  testing::RefusingJournal log;
  std::unique_ptr<GraphStore> store;

  explicit Fixture(std::size_t min_device_batch) {
    BackendOptions bo;
    bo.device = "cuda";
    bo.lanes_per_device = 1;
    bo.pinned_pool_bytes = 16ull << 20;
    auto b = cuda::CudaBackend::create(bo);
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok()) return;
    backend = *std::move(b);
    auto t = cuda::make_cuda_mirror_targets(*backend);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return;
    targets = *std::move(t);
    mirror = std::make_unique<DeviceGraphMirror>(targets.get(),
                                                 DeviceGraphMirror::Options{min_device_batch});
    GraphStore::Options options;
    options.journal = &log;
    options.subscribers.push_back(mirror.get());
    store = std::make_unique<GraphStore>(options);
    mirror->attach(store.get());
  }
  ~Fixture() {
    store.reset();  // before the mirror it calls, and the copies before their devices
    mirror.reset();
    targets.reset();
  }
};

/// `batches` random batches on graph `id`, most compared with the store right after; with
/// `refusals`, the log refuses one in ten (the batch is rolled back).
void run_random(Fixture& f, const std::string& id, std::uint64_t seed, int batches, std::uint64_t n,
                std::size_t m, bool refusals = true) {
  std::mt19937_64 rng(seed);
  auto edges = testing::random_hyperedges(rng, n, m, 4);
  ASSERT_TRUE(f.store->create(id, n, edges).ok());
  RandomEdits gen(seed + 1, n, edges);
  expect_mirror_matches(*f.mirror, *f.store, id, id + " after create");
  for (int b = 0; b < batches; ++b) {
    const std::string where = absl::StrCat(id, " seed ", seed, " batch ", b);
    int mode = std::uniform_int_distribution<int>(0, 9)(gen.rng());
    if (!refusals && mode == 9) mode = 8;
    // Large batches of fat hyperedges (thousands of pairs, table growth on the device) and
    // small ones (a few pairs: queued on the host below the threshold).
    std::vector<Edit> batch = mode <= 2 ? gen.batch(400, 6) : gen.batch(1 + b % 5, 3);
    if (mode == 9) f.log.refuse_next = true;  // the log fails: rolled back, never announced
    absl::StatusOr<ApplyResult> r = f.store->apply(id, std::nullopt, batch);
    if (mode == 9) {
      ASSERT_FALSE(r.ok()) << where;
    } else {
      ASSERT_TRUE(r.ok()) << where << ": " << r.status();
      gen.committed();
    }
    if (b % 4 != 3) expect_mirror_matches(*f.mirror, *f.store, id, where);
  }
  expect_mirror_matches(*f.mirror, *f.store, id, id + " end");
}

TEST(CudaGraphMirrorTest, RandomBatchesEveryBatchOnTheDevice) {
  GC_REQUIRE_GPU();
  Fixture f(0);
  ASSERT_NE(f.store, nullptr);
  run_random(f, "g", 101, 60, 500, 3000);
  auto csr = f.mirror->export_csr("g");
  ASSERT_TRUE(csr.ok()) << csr.status();
  EXPECT_EQ(csr->where.rfind("cuda:", 0), 0u) << csr->where;
  const auto stats = f.mirror->stats();
  EXPECT_GT(stats.pairs_flushed, 10000u);
  EXPECT_EQ(stats.rebuilds, 0u);  // refused batches are never announced: nothing to rebuild
  std::printf("flushes %llu, pairs %llu, rebuilds %llu, failures %llu\n",
              static_cast<unsigned long long>(stats.flushes),
              static_cast<unsigned long long>(stats.pairs_flushed),
              static_cast<unsigned long long>(stats.rebuilds),
              static_cast<unsigned long long>(stats.failures));
}

TEST(CudaGraphMirrorTest, RandomBatchesSmallOnesQueuedOnTheHost) {
  GC_REQUIRE_GPU();
  Fixture f(DeviceGraphMirror::Options{}.min_device_batch);
  ASSERT_NE(f.store, nullptr);
  run_random(f, "g", 202, 60, 300, 1000);
  ASSERT_TRUE(f.store->remove("g").ok());
  EXPECT_EQ(f.mirror->export_csr("g").status().code(), absl::StatusCode::kNotFound);
}

TEST(CudaGraphMirrorTest, ConcurrentGraphs) {
  GC_REQUIRE_GPU();
  Fixture f(0);
  ASSERT_NE(f.store, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back(
        [&f, t] { run_random(f, absl::StrCat("c", t), 300 + t, 25, 200, 800, false); });
  }
  for (auto& th : threads) th.join();
}

TEST(CudaGraphMirrorTest, DeviceCopyEqualsToDense) {
  GC_REQUIRE_GPU();
  Fixture f(0);
  ASSERT_NE(f.store, nullptr);
  std::mt19937_64 rng(404);
  const std::uint64_t n = 257;  // prime, not a multiple of anything
  auto edges = testing::random_hyperedges(rng, n, 2000, 3);
  ASSERT_TRUE(f.store->create("d", n, edges).ok());
  // Finite f32 weights only, so that to_dense accepts them.
  std::vector<Edit> batch = {DeleteEdge{0}, SetWeight{5, -7.5}, DecomposeVertex{10, {}, 0.25},
                             DeleteVertex{3}, AddVertex{}};
  ASSERT_TRUE(f.store->apply("d", std::nullopt, batch).ok());
  auto dense = f.store->to_dense("d", kernels::DType::kF32, 1ull << 24);
  ASSERT_TRUE(dense.ok()) << dense.status();
  auto csr = f.mirror->export_csr("d");
  ASSERT_TRUE(csr.ok()) << csr.status();
  const std::size_t k = dense->vertex_ids.size();
  std::vector<float> want(k * k);
  std::memcpy(want.data(), dense->weights.data(), want.size() * sizeof(float));
  std::vector<float> got(k * k, std::numeric_limits<float>::infinity());
  std::map<std::uint64_t, std::size_t> row_of;
  for (std::size_t i = 0; i < k; ++i) row_of[dense->vertex_ids[i]] = i;
  for (const auto& [pair, w] : testing::pairs_of(*csr)) {
    ASSERT_TRUE(row_of.contains(pair.first) && row_of.contains(pair.second));
    got[row_of[pair.first] * k + row_of[pair.second]] = w;
  }
  std::size_t finite = 0;
  for (std::size_t i = 0; i < k * k; ++i) {
    ASSERT_EQ(got[i], want[i]) << "W[" << i / k << "][" << i % k << "]";
    finite += std::isfinite(want[i]) ? 1 : 0;
  }
  EXPECT_GT(finite, 1000u);
}

/// DeviceGraphMirror::dense_weights (built on the device) equals GraphStore::to_dense bit for
/// bit, with the same rows.
void expect_dense_matches(Fixture& f, const std::string& id, const std::string& where) {
  SCOPED_TRACE(where);
  auto want = f.store->to_dense(id, kernels::DType::kF32, 1ull << 26);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = f.mirror->dense_weights(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->version, want->version);
  ASSERT_EQ(got->vertex_ids, want->vertex_ids);
  const auto k = static_cast<std::int64_t>(want->vertex_ids.size());
  ASSERT_EQ(got->weights.desc.rows, k);
  ASSERT_EQ(got->weights.desc.cols, k);
  ASSERT_FALSE(got->weights.on_host()) << "the dense matrix should stay on the device";
  Matrix m = got->weights;
  ASSERT_TRUE(f.backend->ensure_on_host(m).ok());
  ASSERT_EQ(m.data->size(), want->weights.size());
  const std::size_t cells = want->weights.size() / sizeof(float);
  std::vector<float> a(cells), b(cells);
  std::memcpy(a.data(), m.data->data(), want->weights.size());
  std::memcpy(b.data(), want->weights.data(), want->weights.size());
  for (std::size_t i = 0; i < cells; ++i) {
    // == on f32: +0 and -0 tie and either may be the least (as for APSP)
    ASSERT_EQ(a[i], b[i]) << "W[" << i / static_cast<std::size_t>(k) << "]["
                          << i % static_cast<std::size_t>(k) << "]";
  }
}

/// Brings the batch's weights within +-1e6, so that the device copy can serve reads.
void keep_weights_within_f32(std::vector<Edit>& batch) {
  for (Edit& e : batch) {
    if (auto* add = std::get_if<AddEdge>(&e)) add->weight = std::fmod(add->weight, 1e6);
    if (auto* set = std::get_if<SetWeight>(&e)) set->weight = std::fmod(set->weight, 1e6);
    if (auto* dv = std::get_if<DecomposeVertex>(&e)) {
      dv->joining_weight = std::fmod(dv->joining_weight, 1e6);
    }
  }
}

TEST(CudaGraphMirrorTest, DenseWeightsAreBuiltOnTheDevice) {
  GC_REQUIRE_GPU();
  Fixture f(0);
  ASSERT_NE(f.store, nullptr);
  std::mt19937_64 rng(505);
  const std::uint64_t n = 131;
  auto edges = testing::random_hyperedges(rng, n, 900, 3);
  ASSERT_TRUE(f.store->create("w", n, edges).ok());
  expect_dense_matches(f, "w", "after create");
  RandomEdits gen(506, n, edges);
  for (int b = 0; b < 12; ++b) {
    std::vector<Edit> batch = b % 3 == 0 ? gen.batch(200, 4) : gen.batch(1 + b % 4, 3);
    keep_weights_within_f32(batch);  // an edge beyond f32 is checked below
    absl::StatusOr<ApplyResult> r = f.store->apply("w", std::nullopt, batch);
    ASSERT_TRUE(r.ok()) << r.status();
    gen.committed();
    expect_dense_matches(f, "w", absl::StrCat("batch ", b));
  }
  // An empty graph and a graph with an edge f32 cannot hold: no dense matrix from the device
  // (the host path names the edge).
  ASSERT_TRUE(f.store->create("e", 0, {}).ok());
  auto empty = f.mirror->dense_weights("e");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->weights.desc.rows, 0);
  ASSERT_TRUE(f.store->create("big", 3, {Hyperedge{0, {0}, {1}, 1e300}}).ok());
  EXPECT_EQ(f.mirror->dense_weights("big").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.mirror->dense_weights("absent").status().code(), absl::StatusCode::kNotFound);
}

/// The mirror's search on the device against cpu::sssp over GraphStore::to_csr of the same
/// version: the same negative-cycle verdict, else the same distances bit for bit (both are the
/// least f32 sum from the source) and parents that are tight edges of the host's CSR.
void expect_sssp_matches(Fixture& f, const std::string& id, std::uint64_t source,
                         const std::string& where) {
  SCOPED_TRACE(where);
  absl::StatusOr<CsrGraph> csr = f.store->to_csr(id, 1ull << 40);
  ASSERT_TRUE(csr.ok()) << csr.status();
  const auto n = static_cast<std::int64_t>(csr->vertex_ids.size());
  const auto row = std::lower_bound(csr->vertex_ids.begin(), csr->vertex_ids.end(), source) -
                   csr->vertex_ids.begin();
  ASSERT_LT(row, n);
  std::vector<float> dist(n);
  std::vector<std::int32_t> parent(n);
  const kernels::CsrView view{n, static_cast<std::int64_t>(csr->cols.size()),
                              csr->row_offsets.data(), csr->cols.data(), csr->weights.data()};
  absl::StatusOr<kernels::SsspInfo> host =
      kernels::cpu::sssp(view, row, dist.data(), parent.data());
  ASSERT_TRUE(host.ok()) << host.status();
  std::vector<std::uint64_t> checked_ids;
  absl::StatusOr<MirrorSssp> dev =
      f.mirror->sssp(id, source, {}, [&](const std::vector<std::uint64_t>& ids) {
        checked_ids = ids;
        return absl::OkStatus();
      });
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ(checked_ids, csr->vertex_ids);
  EXPECT_EQ(dev->vertex_ids, csr->vertex_ids);
  ASSERT_EQ(dev->info.negative_cycle, host->negative_cycle);
  if (host->negative_cycle) {
    EXPECT_TRUE(std::binary_search(csr->vertex_ids.begin(), csr->vertex_ids.end(),
                                   static_cast<std::uint64_t>(dev->info.cycle_vertex)));
    return;
  }
  ASSERT_EQ(dev->dist.size(), static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v) {
    ASSERT_EQ(std::memcmp(&dev->dist[v], &dist[v], sizeof(float)), 0)
        << "row " << v << ": device " << dev->dist[v] << ", host " << dist[v];
    const std::int32_t p = dev->parent[v];
    if (std::isinf(dist[v])) {
      EXPECT_EQ(p, -1) << "row " << v;
    } else if (v == row) {
      EXPECT_EQ(p, row);
    } else {
      ASSERT_GE(p, 0) << "row " << v;
      bool tight = false;
      for (std::uint64_t e = csr->row_offsets[p]; e < csr->row_offsets[p + 1]; ++e) {
        tight |= csr->cols[e] == static_cast<std::uint32_t>(v) &&
                 dev->dist[p] + csr->weights[e] == dev->dist[v];
      }
      EXPECT_TRUE(tight) << "row " << v << " has parent row " << p << " without a tight edge";
    }
  }
}

TEST(CudaGraphMirrorTest, SsspOnTheCopyEqualsTheHostSearch) {
  GC_REQUIRE_GPU();
  Fixture f(0);
  ASSERT_NE(f.store, nullptr);
  std::mt19937_64 rng(707);
  const std::uint64_t n = 300;
  auto edges = testing::random_hyperedges(rng, n, 1500, 3);
  for (Hyperedge& e : edges) e.weight = std::abs(e.weight);  // no negative cycle at first
  ASSERT_TRUE(f.store->create("s", n, edges).ok());
  expect_sssp_matches(f, "s", 0, "after create");
  expect_sssp_matches(f, "s", 123, "after create, another source");
  // Batches of every kind (vertex deletions among them, so slots and rows part ways; negative
  // weights, so negative cycles may appear).
  RandomEdits gen(708, n, edges);
  for (int b = 0; b < 8; ++b) {
    std::vector<Edit> batch = gen.batch(b % 2 == 0 ? 60 : 3, 3);
    keep_weights_within_f32(batch);
    absl::StatusOr<ApplyResult> r = f.store->apply("s", std::nullopt, batch);
    ASSERT_TRUE(r.ok()) << r.status();
    gen.committed();
    absl::StatusOr<GraphSnapshot> snap = f.store->get("s");
    ASSERT_TRUE(snap.ok());
    const std::uint64_t source = snap->vertices[snap->vertices.size() / 2];
    expect_sssp_matches(f, "s", source, absl::StrCat("batch ", b));
  }
  // A check's refusal stops the search; an absent source is NOT_FOUND.
  auto refused = f.mirror->sssp("s", 0, {}, [](const std::vector<std::uint64_t>&) {
    return absl::InvalidArgumentError("refused by the check");
  });
  EXPECT_EQ(refused.status().message(), "refused by the check");
  auto absent = f.mirror->sssp("s", 1ull << 40, {}, [](const auto&) { return absl::OkStatus(); });
  EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound);
  // A weight f32 cannot hold: the copy does not serve (the host path names the edge).
  ASSERT_TRUE(f.store->create("big", 3, {Hyperedge{0, {0}, {1}, 1e300}}).ok());
  EXPECT_EQ(
      f.mirror->sssp("big", 0, {}, [](const auto&) { return absl::OkStatus(); }).status().code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST(CudaGraphMirrorTest, ServerWiresTheMirrorOnTheCudaBackend) {
  GC_REQUIRE_GPU();
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("gc-mirror-", std::random_device{}()))
          .string();
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "";
  o.device = "cuda";
  o.lanes_per_device = 1;
  o.pinned_pool_bytes = 16ull << 20;
  o.graph_data_dir = dir;  // the log as the journal, the mirror as a subscriber
  auto server = Server::create(o);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->backend_name(), "cuda");
  ASSERT_NE((*server)->graph_mirror(), nullptr);
  EXPECT_EQ((*server)->graph_mirror()->export_csr("absent").status().code(),
            absl::StatusCode::kNotFound);
  server->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gcompute::server
