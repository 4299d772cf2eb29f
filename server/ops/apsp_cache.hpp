// SPDX-License-Identifier: Apache-2.0
// The last APSP result of each stored graph (f32 distances, optionally next hops), kept where
// the backend computed it (host memory on the CPU backend, device memory on the CUDA backend)
// and current from the graph store's change feed (docs/graphs.md, "Incremental APSP").
//
// An entry answers for one graph version. When a committed batch only adds edges, lowers
// weights or adds vertices, the entry moves to the new version with the batch's (tail u, head
// v, weight w) pairs queued; the next lookup hands the old result and the queued pairs (as rows
// of the new version, new vertices last since ids only grow) to the caller, which brings it up
// to date on the backend (Backend::apsp_add_edges: O(n^2) per pair on the CPU, one batched pass
// on the GPU) and puts it back. Any other change (a deletion, a raised weight, a moved edge)
// drops the entry and the next request recomputes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/matrix.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "store/graphs/graph_feed.hpp"

namespace gcompute::server {

/// An APSP result of one version of a stored graph. Shared, immutable: its matrices are
/// handed out as handles and never written (callers copy host bytes before moving them on).
struct CachedApsp {
  std::uint64_t version = 0;
  std::vector<std::uint64_t> vertex_ids;  ///< ascending; row/column i is vertex_ids[i]
  Matrix distances;                       ///< n x n f32 (kernels' semantics), host or device
  std::optional<Matrix> next_hop;         ///< n x n i32, or none (not computed)
};

class ApspCache final : public GraphSubscriber {
 public:
  struct Options {
    /// Bytes of entries (matrices and queued updates) held at most; least recently used go
    /// first. 0 disables the cache.
    std::uint64_t max_bytes = 1ull << 30;
    /// Update incrementally only while the queued (tail, head) pairs <= this * n (each pair
    /// costs O(n^2); a recomputation O(n^3), usually on a GPU).
    double max_pairs_per_vertex = 0.125;
  };
  enum class Outcome { kMiss, kHit, kUpdate };
  struct Answer {
    Outcome outcome = Outcome::kMiss;
    /// kHit: the result; kUpdate: the result to update (of an older version). Null on a miss.
    std::shared_ptr<const CachedApsp> result;
    /// kUpdate: the vertex ids of the requested version and the pairs to insert, as rows of
    /// it, in commit order.
    std::vector<std::uint64_t> vertex_ids;
    std::vector<kernels::GraphEdge> edges;
    std::string why;  ///< on a miss: why
  };
  struct Stats {
    std::uint64_t hits = 0, incremental = 0, misses = 0, entries = 0, bytes = 0;
  };

  ApspCache() : ApspCache(Options{}) {}
  explicit ApspCache(Options options) : options_(options) {}

  /// The result for version `version` of the graph, or an older one and what to insert into
  /// it. A miss when nothing usable is cached, or next hops are needed and not cached.
  Answer lookup(const std::string& graph_id, std::uint64_t version, bool need_next_hop);

  /// Caches `result`, computed for result.version. Ignored when the feed has announced a later
  /// version of the graph since (the result would be stale).
  void put(const std::string& graph_id, CachedApsp result);

  void on_change(const GraphChange& change) override;
  Stats stats() const;

  /// Drops the entries held in device memory (for a request that ran out of it); returns
  /// their bytes. Memory a request still holds a handle to is freed when it lets go.
  std::uint64_t release_device_memory();

 private:
  /// A (tail, head) pair to relax, by vertex id.
  struct Relax {
    std::uint64_t tail, head;
    float weight;
  };
  struct Entry {
    std::uint64_t version = 0;  ///< the graph version this entry answers for
    std::shared_ptr<const CachedApsp> result;
    std::vector<std::uint64_t> added_vertices;  ///< since result, ascending
    std::vector<Relax> pending;                 ///< since result, in commit order
    std::uint64_t bytes = 0;
    std::uint64_t last_used = 0;
  };
  void install(const std::string& graph_id, std::shared_ptr<const CachedApsp> result);
  /// Queues `delta` on `e` if it only adds; otherwise why the entry must go.
  std::string queue(Entry& e, const GraphDelta& delta) const;
  void erase_locked(const std::string& graph_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void evict_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  /// The latest version the feed announced per graph (for graphs created or changed since
  /// start-up); results of older versions are not cached.
  std::map<std::string, std::uint64_t> announced_ ABSL_GUARDED_BY(mu_);
  /// Why a graph's entry was last dropped by the feed, for the next miss.
  std::map<std::string, std::string> dropped_ ABSL_GUARDED_BY(mu_);
  std::uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  std::uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gcompute::server
