// SPDX-License-Identifier: Apache-2.0
// The backend-neutral part of the device graph mirror (ops/graph_mirror.hpp) on the host: the
// mirror fed by the store's change feed with random batches of every edit kind (some refused by
// the journal, some failing on the copy), its std::map copy compared after each batch with the
// pairwise least-weight edge set of GraphStore::get. The CUDA copies:
// tests/engine/test_cuda_graph_mirror.cc.
#include "ops/graph_mirror.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/graph_mirror_check.hpp"

namespace gcompute::server {
namespace {

using testing::expect_mirror_matches;
using testing::RandomEdits;
using testing::RefusingJournal;

// ---- the mirror with host copies ----------------------------------------------------------

/// A copy in a std::map, with failures on demand.
class MapTarget : public MirrorTarget {
 public:
  MapTarget(std::uint32_t n, int* fail_after) : n_(n), fail_after_(fail_after) {}
  absl::Status add_vertices(std::uint32_t count) override {
    if (absl::Status s = maybe_fail(); !s.ok()) return s;
    n_ += count;
    return absl::OkStatus();
  }
  absl::Status delete_edges(std::span<const kernels::GraphEdge> edges) override {
    if (absl::Status s = maybe_fail(); !s.ok()) return s;
    for (const auto& e : edges) edges_.erase({e.src, e.dst});
    return absl::OkStatus();
  }
  absl::Status upsert_edges(std::span<const kernels::GraphEdge> edges) override {
    if (absl::Status s = maybe_fail(); !s.ok()) return s;
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
    for (const auto& e : edges) {
      if (e.src >= n_ || e.dst >= n_) return absl::InvalidArgumentError("slot out of range");
      EXPECT_TRUE(seen.insert({e.src, e.dst}).second) << "duplicate in one upsert";
      edges_[{e.src, e.dst}] = e.weight;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<kernels::HostCsr> export_csr() override {
    kernels::HostCsr c;
    c.num_vertices = n_;
    c.row_offsets.assign(n_ + 1, 0);
    for (const auto& [k, w] : edges_) {
      ++c.row_offsets[k.first + 1];
      c.cols.push_back(k.second);
      c.weights.push_back(w);
    }
    for (std::uint32_t r = 0; r < n_; ++r) c.row_offsets[r + 1] += c.row_offsets[r];
    return c;
  }
  std::string where() const override { return "map"; }

 private:
  absl::Status maybe_fail() {
    if (*fail_after_ < 0) return absl::OkStatus();
    if ((*fail_after_)-- == 0) return absl::ResourceExhaustedError("out of device memory");
    return absl::OkStatus();
  }
  std::uint32_t n_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, float> edges_;
  int* fail_after_;
};

class MapTargets : public MirrorTargetFactory {
 public:
  absl::StatusOr<std::unique_ptr<MirrorTarget>> create(std::uint32_t n) override {
    ++created;
    return std::make_unique<MapTarget>(n, &fail_after);
  }
  int fail_after = -1;  ///< >= 0: that many more target calls succeed, then one fails
  int created = 0;
};

/// A store whose change feed drives a mirror with map copies, and optionally a journal.
struct MirroredStore {
  explicit MirroredStore(std::size_t min_device_batch, GraphJournal* journal = nullptr)
      : mirror(&targets, DeviceGraphMirror::Options{min_device_batch}),
        store(GraphStore::Options{.journal = journal, .subscribers = {&mirror}}) {
    mirror.attach(&store);
  }
  MapTargets targets;
  DeviceGraphMirror mirror;
  GraphStore store;
};

void run_random(std::size_t min_device_batch, std::uint64_t seed) {
  RefusingJournal wal;
  MirroredStore m(min_device_batch, &wal);

  std::mt19937_64 rng(seed);
  const std::uint64_t n = 12;
  auto edges = testing::random_hyperedges(rng, n, 20, 3);
  ASSERT_TRUE(m.store.create("g", n, edges).ok());
  RandomEdits gen(seed + 1, n, edges);
  expect_mirror_matches(m.mirror, m.store, "g", "after create");
  for (int b = 0; b < 150; ++b) {
    const std::string where = absl::StrCat("seed ", seed, " batch ", b);
    const int mode = std::uniform_int_distribution<int>(0, 9)(gen.rng());
    std::vector<Edit> batch = gen.batch(mode == 0 ? 40 : 1 + b % 6, mode == 0 ? 5 : 3);
    if (mode == 1) wal.refuse_next = true;    // the log fails: rolled back, never announced
    if (mode == 2) m.targets.fail_after = 0;  // the device fails: the edit still commits
    absl::StatusOr<ApplyResult> r = m.store.apply("g", std::nullopt, batch);
    if (mode == 1) {
      ASSERT_FALSE(r.ok()) << where;
    } else {
      ASSERT_TRUE(r.ok()) << where << ": " << r.status();
      gen.committed();
    }
    m.targets.fail_after = -1;
    if (b % 3 != 2) expect_mirror_matches(m.mirror, m.store, "g", where);  // else queued a while
  }
  if (min_device_batch == 0) {
    // Device failures at commit time dropped copies, and reads rebuilt them.
    EXPECT_GT(m.mirror.stats().failures, 0u);
    EXPECT_GT(m.mirror.stats().rebuilds, 0u);
  }
}

TEST(DeviceGraphMirrorTest, RandomBatchesEveryBatchToTheCopy) {
  run_random(0, 11);
}
TEST(DeviceGraphMirrorTest, RandomBatchesSmallOnesQueued) {
  run_random(320, 12);
}
TEST(DeviceGraphMirrorTest, RandomBatchesSomeQueued) {
  run_random(8, 13);
}

TEST(DeviceGraphMirrorTest, RemoveRecreateUnknownAndMissingGraphs) {
  MirroredStore m(0);

  EXPECT_EQ(m.mirror.export_csr("nope").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(m.store.create("g", 3, {Hyperedge{0, {0, 1}, {2}, 1.5}}).ok());
  expect_mirror_matches(m.mirror, m.store, "g", "created");
  ASSERT_TRUE(m.store.remove("g").ok());
  EXPECT_EQ(m.mirror.export_csr("g").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(m.store.create("g", 2, {Hyperedge{0, {1}, {0}, -2}}).ok());
  expect_mirror_matches(m.mirror, m.store, "g", "re-created");

  // A graph restored from a snapshot (the feed does not announce restores): first seen by an
  // apply, built on read.
  GraphImage image;
  image.graph.info = GraphInfo{"r", 7, 3, 1};
  image.graph.vertices = {0, 4, 9};
  image.graph.edges = {Hyperedge{5, {9}, {0, 4}, 3}};
  image.next_vertex_id = 10;
  image.next_edge_id = 6;
  ASSERT_TRUE(m.store.restore(image).ok());
  ASSERT_TRUE(m.store.apply("r", std::nullopt, std::vector<Edit>{SetWeight{5, 1}}).ok());
  expect_mirror_matches(m.mirror, m.store, "r", "restored");
  ASSERT_TRUE(m.store.apply("r", std::nullopt, std::vector<Edit>{DeleteVertex{4}}).ok());
  expect_mirror_matches(m.mirror, m.store, "r", "vertex deleted");
  EXPECT_EQ(m.mirror.stats().rebuilds, 1u);
}

TEST(DeviceGraphMirrorTest, ParallelEdgesKeepTheLeastWeight) {
  MirroredStore m(0);
  ASSERT_TRUE(
      m.store.create("g", 3, {Hyperedge{0, {0}, {1, 2}, 5}, Hyperedge{0, {0, 1}, {1}, 2}}).ok());
  auto weight = [&](std::uint64_t s, std::uint64_t d) -> std::optional<float> {
    auto pairs = testing::pairs_of(*m.mirror.export_csr("g"));
    auto it = pairs.find({s, d});
    if (it == pairs.end()) return std::nullopt;
    return it->second;
  };
  EXPECT_EQ(weight(0, 1), 2.0f);
  EXPECT_EQ(weight(0, 2), 5.0f);
  EXPECT_EQ(weight(1, 1), 2.0f);
  ASSERT_TRUE(m.store.apply("g", std::nullopt, std::vector<Edit>{SetWeight{1, 7}}).ok());
  EXPECT_EQ(weight(0, 1), 5.0f);  // raised: recomputed from the other edge
  ASSERT_TRUE(m.store.apply("g", std::nullopt, std::vector<Edit>{DeleteEdge{0}}).ok());
  EXPECT_EQ(weight(0, 1), 7.0f);
  EXPECT_EQ(weight(0, 2), std::nullopt);
  expect_mirror_matches(m.mirror, m.store, "g", "end");
}

}  // namespace
}  // namespace gcompute::server
