// SPDX-License-Identifier: Apache-2.0
// ApspCache, fed by a GraphStore's change feed, with its updates applied by the host kernel
// (cpu::apsp_add_edges, what the CPU backend runs): incremental updates (new edges and
// hyperedges, lowered weights, new vertices) against a full recomputation (plain
// Floyd-Warshall in double) on random graphs and random edit sequences; misses for deletions
// and raised weights; negative cycles made by an edit; next hops that trace shortest, loop-free
// paths; hits; stale results refused; LRU eviction.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gcompute/kernels/cpu/apsp.hpp"
#include "ops/apsp_cache.hpp"
#include "store/graphs/graph_store.hpp"

namespace gcompute::server {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Store options with `cache` subscribed to the change feed.
GraphStore::Options fed(ApspCache& cache) {
  GraphStore::Options o;
  o.subscribers.push_back(&cache);
  return o;
}

std::vector<float> dense_f32(GraphStore& store, const std::string& id) {
  DenseGraph d = *store.to_dense(id, kernels::DType::kF32, 1u << 30);
  std::vector<float> w(d.weights.size() / 4);
  std::memcpy(w.data(), d.weights.data(), d.weights.size());
  return w;
}

/// The oracle: Floyd-Warshall in double on the f32 weights. Returns false on a negative cycle.
bool oracle(const std::vector<float>& w, std::size_t n, std::vector<double>& d) {
  d.assign(n * n, kInf);
  for (std::size_t i = 0; i < n * n; ++i) d[i] = w[i];
  for (std::size_t i = 0; i < n; ++i) d[i * n + i] = std::min(0.0, d[i * n + i]);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (d[i * n + k] + d[k * n + j] < d[i * n + j]) d[i * n + j] = d[i * n + k] + d[k * n + j];
  for (std::size_t i = 0; i < n; ++i)
    if (d[i * n + i] < 0) return false;
  return true;
}

template <typename T>
Matrix host_matrix(const std::vector<T>& v, std::int64_t n, DType dtype) {
  return Matrix{
      MatrixDesc{dtype, 1, n, n},
      std::make_shared<std::string>(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)),
      nullptr};
}

template <typename T>
std::vector<T> host_vector(const Matrix& m) {
  std::vector<T> v(m.desc.elements());
  std::memcpy(v.data(), m.data->data(), v.size() * sizeof(T));
  return v;
}

/// A full f32 result with next hops, as the kernels define them (the cache's seed).
CachedApsp full_result(GraphStore& store, const GraphSnapshot& snap) {
  const std::size_t n = snap.vertices.size();
  std::vector<float> w = dense_f32(store, snap.info.graph_id);
  std::vector<float> d = w;
  std::vector<std::int32_t> next(n * n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (std::isfinite(w[i * n + j])) next[i * n + j] = static_cast<std::int32_t>(j);
    }
    d[i * n + i] = std::min(0.0f, d[i * n + i]);
    next[i * n + i] = static_cast<std::int32_t>(i);
  }
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        const float c = d[i * n + k] + d[k * n + j];
        if (c < d[i * n + j]) {
          d[i * n + j] = c;
          next[i * n + j] = next[i * n + k];
        }
      }
  CachedApsp r;
  r.version = snap.info.version;
  r.vertex_ids = snap.vertices;
  r.distances = host_matrix(d, static_cast<std::int64_t>(n), DType::kF32);
  r.next_hop = host_matrix(next, static_cast<std::int64_t>(n), DType::kI32);
  return r;
}

/// What the CPU backend does with a kUpdate answer: the host kernel, then the new result
/// (returned; the caller puts it).
absl::StatusOr<std::pair<CachedApsp, kernels::ApspInfo>> apply_update(const ApspCache::Answer& a,
                                                                      std::uint64_t version) {
  const CachedApsp& base = *a.result;
  const auto n = static_cast<std::int64_t>(a.vertex_ids.size());
  const kernels::ApspUpdateShape shape{static_cast<std::int64_t>(base.vertex_ids.size()), n,
                                       base.next_hop.has_value()};
  std::vector<float> d(static_cast<std::size_t>(n * n));
  std::vector<std::int32_t> next(shape.next_hop ? d.size() : 0);
  absl::StatusOr<kernels::ApspInfo> info = kernels::cpu::apsp_add_edges(
      base.distances.as<float>(), shape.next_hop ? base.next_hop->as<std::int32_t>() : nullptr,
      d.data(), shape.next_hop ? next.data() : nullptr, shape, a.edges);
  if (!info.ok()) return info.status();
  CachedApsp r;
  r.version = version;
  r.vertex_ids = a.vertex_ids;
  r.distances = host_matrix(d, n, DType::kF32);
  if (shape.next_hop) r.next_hop = host_matrix(next, n, DType::kI32);
  return std::make_pair(std::move(r), *info);
}

/// Distances match the oracle, and every next-hop path is a loop-free shortest path.
void check(const CachedApsp& r, const std::vector<float>& w, const std::vector<double>& want,
           std::size_t n) {
  ASSERT_EQ(r.distances.desc.elements(), n * n);
  const std::vector<float> dist = host_vector<float>(r.distances);
  const std::vector<std::int32_t> next =
      r.next_hop ? host_vector<std::int32_t>(*r.next_hop) : std::vector<std::int32_t>{};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double got = dist[i * n + j], exp = want[i * n + j];
      if (std::isinf(exp)) {
        ASSERT_TRUE(std::isinf(got)) << i << "," << j << ": " << got;
        if (!next.empty()) {
          ASSERT_EQ(next[i * n + j], -1);
        }
        continue;
      }
      ASSERT_NEAR(got, exp, 1e-4 * (1 + std::abs(exp))) << i << "," << j;
      if (next.empty() || i == j) continue;
      double length = 0;
      std::size_t at = i, steps = 0;
      while (at != j) {
        const std::int32_t nx = next[at * n + j];
        ASSERT_GE(nx, 0) << "path " << i << "->" << j << " breaks at " << at;
        ASSERT_LT(steps++, n) << "path " << i << "->" << j << " loops";
        length += w[at * n + static_cast<std::size_t>(nx)];
        at = static_cast<std::size_t>(nx);
      }
      ASSERT_NEAR(length, exp, 1e-4 * (1 + std::abs(exp))) << "path " << i << "->" << j;
    }
  }
}

TEST(ApspCache, IncrementalUpdatesMatchFullRecomputation) {
  std::mt19937_64 rng(2024);
  int incremental = 0, misses = 0, hits = 0, cycles = 0;
  for (int trial = 0; trial < 12; ++trial) {
    ApspCache::Options o;
    o.max_pairs_per_vertex = 1e9;  // always incremental when allowed: exercise it
    ApspCache cache(o);
    GraphStore store(fed(cache));
    const std::uint64_t n0 = 1 + rng() % 23;  // 1x1 .. primes and ragged sizes
    std::vector<Hyperedge> edges;
    for (std::uint64_t e = 0; e < n0 * 2; ++e) {
      edges.push_back(
          Hyperedge{0, {rng() % n0}, {rng() % n0}, 1.0 + static_cast<double>(rng() % 90) / 7});
    }
    ASSERT_TRUE(store.create("g", n0, edges).ok());
    GraphSnapshot snap = *store.get("g");
    cache.put("g", full_result(store, snap));
    for (int step = 0; step < 25; ++step) {
      std::vector<std::uint64_t> vs = snap.vertices;
      std::vector<Edit> batch;
      bool monotone = true;  // only adds edges/vertices or lowers weights
      const int kind = static_cast<int>(rng() % 10);
      auto v = [&] { return vs[rng() % vs.size()]; };
      const double w = static_cast<double>(static_cast<int>(rng() % 120) - 15) / 8;  // some < 0
      if (kind < 4) {
        batch.push_back(AddEdge{{v()}, {v()}, w});
      } else if (kind < 5) {  // a hyperedge: every tail -> every head
        std::vector<std::uint64_t> t{v()}, h{v()};
        if (vs.size() > 1) {
          for (std::uint64_t x : vs) {
            if (x != t[0] && t.size() < 2) t.push_back(x);
          }
          for (std::uint64_t x : vs) {
            if (x != h[0] && h.size() < 2) h.push_back(x);
          }
        }
        batch.push_back(AddEdge{t, h, std::abs(w) + 0.5});
      } else if (kind < 7 && !snap.edges.empty()) {  // lower a weight
        const Hyperedge& e = snap.edges[rng() % snap.edges.size()];
        batch.push_back(SetWeight{e.id, e.weight - 1 - static_cast<double>(rng() % 4)});
      } else if (kind < 8) {  // a new vertex with an edge into the graph
        batch.push_back(AddVertex{});
        batch.push_back(AddEdge{{snap.vertices.empty() ? 0 : v()}, {v()}, 3});
      } else if (kind < 9 && !snap.edges.empty()) {  // raise a weight: not incremental
        const Hyperedge& e = snap.edges[rng() % snap.edges.size()];
        batch.push_back(SetWeight{e.id, e.weight + 5});
        monotone = false;
      } else if (!snap.edges.empty()) {  // delete an edge: not incremental
        batch.push_back(DeleteEdge{snap.edges[rng() % snap.edges.size()].id});
        monotone = false;
      } else {
        batch.push_back(AddVertex{});
      }
      ASSERT_TRUE(store.apply("g", std::nullopt, batch).ok());
      snap = *store.get("g");
      const std::size_t n = snap.vertices.size();
      const std::vector<float> weights = dense_f32(store, "g");
      std::vector<double> want;
      const bool acyclic = oracle(weights, n, want);

      const ApspCache::Answer a = cache.lookup("g", snap.info.version, /*need_next_hop=*/true);
      if (a.outcome == ApspCache::Outcome::kMiss) {
        if (!acyclic) {  // a recomputation reports it
          ++cycles;
          break;  // the graph has a negative cycle from now on: next trial
        }
        ++misses;
        EXPECT_FALSE(monotone) << "step " << step << ": " << a.why;
        cache.put("g", full_result(store, snap));
        continue;
      }
      ASSERT_EQ(a.outcome, ApspCache::Outcome::kUpdate) << "the graph changed since the last put";
      EXPECT_TRUE(monotone) << "a deletion or a raised weight cannot be incremental";
      EXPECT_EQ(a.vertex_ids, snap.vertices);
      absl::StatusOr<std::pair<CachedApsp, kernels::ApspInfo>> updated =
          apply_update(a, snap.info.version);
      ASSERT_TRUE(updated.ok()) << updated.status();
      EXPECT_EQ(updated->second.negative_cycle, !acyclic);
      if (!acyclic) {
        ++cycles;
        break;
      }
      ++incremental;
      check(updated->first, weights, want, n);
      cache.put("g", std::move(updated->first));
      // The updated result is cached: asking again is a hit.
      const ApspCache::Answer again = cache.lookup("g", snap.info.version, true);
      ASSERT_EQ(again.outcome, ApspCache::Outcome::kHit);
      EXPECT_EQ(again.result->version, snap.info.version);
      ++hits;
    }
  }
  EXPECT_GT(incremental, 50);
  EXPECT_GT(misses, 5);
  EXPECT_GT(hits, 50);
  EXPECT_GT(cycles, 0) << "no trial made a negative cycle: the detection went untested";
}

TEST(ApspCache, MissesWithoutNextHopsAndForDeletedVertices) {
  ApspCache cache;
  GraphStore store(fed(cache));
  ASSERT_TRUE(store.create("g", 3, {Hyperedge{0, {0}, {1}, 1}}).ok());
  GraphSnapshot snap = *store.get("g");
  CachedApsp r = full_result(store, snap);
  r.next_hop.reset();
  cache.put("g", r);
  EXPECT_EQ(cache.lookup("g", 1, true).outcome, ApspCache::Outcome::kMiss);
  EXPECT_EQ(cache.lookup("g", 1, false).outcome, ApspCache::Outcome::kHit);
  std::vector<Edit> del{DeleteVertex{2}};
  ASSERT_TRUE(store.apply("g", std::nullopt, del).ok());
  const ApspCache::Answer a = cache.lookup("g", 2, false);
  EXPECT_EQ(a.outcome, ApspCache::Outcome::kMiss);
  EXPECT_EQ(a.why, "vertices were deleted");
}

TEST(ApspCache, RefusesResultsOfVersionsTheFeedHasPassed) {
  ApspCache cache;
  GraphStore store(fed(cache));
  ASSERT_TRUE(store.create("g", 3, {Hyperedge{0, {0}, {1}, 1}}).ok());
  const CachedApsp v1 = full_result(store, *store.get("g"));
  ASSERT_TRUE(store.apply("g", std::nullopt, std::vector<Edit>{AddVertex{}}).ok());
  cache.put("g", v1);  // computed before the batch, arriving after it: stale
  EXPECT_EQ(cache.lookup("g", 1, false).outcome, ApspCache::Outcome::kMiss);
  EXPECT_EQ(cache.lookup("g", 2, false).outcome, ApspCache::Outcome::kMiss);
  EXPECT_EQ(cache.stats().entries, 0u);
  // Removing the graph forgets it; a new graph of the same name starts afresh.
  ASSERT_TRUE(store.remove("g").ok());
  ASSERT_TRUE(store.create("g", 3, {}).ok());
  cache.put("g", full_result(store, *store.get("g")));
  EXPECT_EQ(cache.lookup("g", 1, false).outcome, ApspCache::Outcome::kHit);
}

TEST(ApspCache, NegativeSelfLoopIsANegativeCycle) {
  ApspCache cache;
  GraphStore store(fed(cache));
  ASSERT_TRUE(store.create("g", 4, {Hyperedge{0, {0}, {1}, 1}}).ok());
  cache.put("g", full_result(store, *store.get("g")));
  std::vector<Edit> loop{AddEdge{{3}, {3}, -0.5}};
  ASSERT_TRUE(store.apply("g", std::nullopt, loop).ok());
  const ApspCache::Answer a = cache.lookup("g", 2, false);
  ASSERT_EQ(a.outcome, ApspCache::Outcome::kUpdate);
  absl::StatusOr<std::pair<CachedApsp, kernels::ApspInfo>> updated = apply_update(a, 2);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_TRUE(updated->second.negative_cycle);
  EXPECT_EQ(a.vertex_ids.at(static_cast<std::size_t>(updated->second.cycle_vertex)), 3u);
}

TEST(ApspCache, EvictsLeastRecentlyUsed) {
  ApspCache::Options o;
  o.max_bytes = 2500;  // room for two 10-vertex results (960 bytes each), not three
  ApspCache cache(o);
  GraphStore store(fed(cache));
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_TRUE(store.create(id, 10, {}).ok());
    cache.put(id, full_result(store, *store.get(id)));
    if (std::string(id) == "b") {
      EXPECT_EQ(cache.lookup("a", 1, true).outcome, ApspCache::Outcome::kHit);
    }
  }
  EXPECT_EQ(cache.stats().entries, 2u);
  EXPECT_LE(cache.stats().bytes, 2500u);
  EXPECT_EQ(cache.lookup("a", 1, true).outcome, ApspCache::Outcome::kHit);
  EXPECT_EQ(cache.lookup("b", 1, true).outcome, ApspCache::Outcome::kMiss);
}

// A request short of device memory makes the cache drop the results it holds there (the
// CUDA backend then tries once more); results in host memory stay.
TEST(ApspCache, ReleasesDeviceMemoryOnRequest) {
  ApspCache cache;
  GraphStore store(fed(cache));
  for (const char* id : {"on_host", "on_device", "next_hops_on_device"}) {
    ASSERT_TRUE(store.create(id, 10, {}).ok());
    CachedApsp r = full_result(store, *store.get(id));
    const std::string name = id;
    // A device copy standing for device memory (the cache only looks at whether there is one).
    if (name == "on_device") r.distances.device = std::make_shared<DeviceCopy>();
    if (name == "next_hops_on_device") r.next_hop->device = std::make_shared<DeviceCopy>();
    cache.put(id, std::move(r));
  }
  const std::uint64_t before = cache.stats().bytes;
  ASSERT_EQ(cache.stats().entries, 3u);
  const std::uint64_t released = cache.release_device_memory();
  EXPECT_GT(released, 0u);
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().bytes, before - released);
  EXPECT_EQ(cache.lookup("on_host", 1, true).outcome, ApspCache::Outcome::kHit);
  for (const char* id : {"on_device", "next_hops_on_device"}) {
    const ApspCache::Answer miss = cache.lookup(id, 1, true);
    EXPECT_EQ(miss.outcome, ApspCache::Outcome::kMiss) << id;
    EXPECT_THAT(miss.why, ::testing::HasSubstr("device memory")) << id;
  }
  EXPECT_EQ(cache.release_device_memory(), 0u);  // nothing left there
}

}  // namespace
}  // namespace gcompute::server
