// SPDX-License-Identifier: Apache-2.0
// The last APSP result of each stored graph (f32 distances, optionally next hops, on the
// host), reused when the graph is unchanged and updated in O(n^2) per new edge when the graph
// only gained edges, lowered weights or gained vertices (docs/graphs.md, "Incremental APSP").
//
// Validity is decided by comparing contents, not by replaying the edit history: the cache
// keeps the graph the matrix was computed from, and a later version qualifies for an
// incremental update when it is a superset of it: the same vertices (new ones may follow:
// ids only grow, so they come after the old ones), every old edge still there with the same
// tails and heads and an f32 weight no larger, and any number of new edges. Then
//   D[i][j] = min(D[i][j], D[i][u] + w + D[v][j])
// for every changed or new (tail u, head v, weight w) gives the new graph's distances (the
// old, higher weight of a lowered edge is dominated by the new one). Anything else is a miss
// and the caller recomputes. Next hops are updated with the distances (next[i][j] = next[i][u],
// or v when i = u, where D[i][j] strictly improves), which keeps every traced path a
// shortest path and loop-free (see the proof sketch in docs/graphs.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "store/graphs/graph_model.hpp"

namespace gcompute::server {

/// An APSP result of one version of a stored graph. Shared, immutable.
struct CachedApsp {
  std::uint64_t version = 0;
  std::vector<std::uint64_t> vertex_ids;  ///< ascending; row/column i is vertex_ids[i]
  std::vector<float> distances;           ///< n*n, row-major (kernels' semantics)
  std::vector<std::int32_t> next_hop;     ///< n*n or empty (not computed)
};

class ApspCache {
 public:
  struct Options {
    /// Entries (matrices and the graphs they came from) held at most; least recently used
    /// go first. 0 disables the cache.
    std::uint64_t max_bytes = 1ull << 30;
    /// Update incrementally only while (tail, head) pairs to relax <= this * n (each pair
    /// costs O(n^2); a recomputation O(n^3), usually on a GPU).
    double max_pairs_per_vertex = 0.125;
  };
  enum class Outcome { kMiss, kHit, kIncremental };
  struct Answer {
    Outcome outcome = Outcome::kMiss;
    std::shared_ptr<const CachedApsp> result;  ///< null on a miss
    std::string why;                           ///< on a miss: why not incremental
  };
  struct Stats {
    std::uint64_t hits = 0, incremental = 0, misses = 0, entries = 0, bytes = 0;
  };

  ApspCache() : ApspCache(Options{}) {}
  explicit ApspCache(Options options) : options_(options) {}

  /// The result for `current` (a snapshot of the graph now) from the cache, updated if
  /// needed. FAILED_PRECONDITION ("negative cycle through vertex X") when the new edges make
  /// a negative cycle. A miss when nothing usable is cached, or next hops are needed and not
  /// cached.
  absl::StatusOr<Answer> lookup(const GraphSnapshot& current, bool need_next_hop);

  /// Caches `result`, computed from `graph` (same version), replacing an older entry.
  void put(GraphSnapshot graph, CachedApsp result);

  void erase(const std::string& graph_id);
  Stats stats() const;

 private:
  struct Entry {
    GraphSnapshot graph;
    std::shared_ptr<const CachedApsp> result;
    std::uint64_t bytes = 0;
    std::uint64_t last_used = 0;
  };
  void evict_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::uint64_t> last_used_ ABSL_GUARDED_BY(mu_);
  std::uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  std::uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

/// The update above for one edge u -> v (row indices) of weight w, in place on n x n `dist`
/// and (if non-empty) `next`. Returns false, changing nothing, when the edge closes a
/// negative cycle (D[v][u] + w < 0). Exposed for tests.
bool relax_edge(std::vector<float>& dist, std::vector<std::int32_t>& next, std::size_t n,
                std::size_t u, std::size_t v, float w);

}  // namespace gcompute::server
