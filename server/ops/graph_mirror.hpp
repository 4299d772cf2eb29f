// SPDX-License-Identifier: Apache-2.0
// Device copies of stored graphs (docs/graphs.md, "GPU-resident graphs").
//
// DeviceGraphMirror subscribes to the graph store's change feed and keeps, per stored graph, a
// copy made by the backend (engine/graph_copies.hpp; on the CUDA backend a cuda::DeviceGraph)
// equal to the graph's pairwise edge set: slot(t) -> slot(h) for every hyperedge with tail t
// and head h, weighted by the least weight over those hyperedges (as f32, as
// GraphStore::to_dense reports it).
//
// How a batch reaches the copy: the mirror applies the batch's net effect (GraphDelta: edges
// before and after, vertices added and removed) to its host index (vertex id -> slot, and per
// pair the hyperedges that induce it), collects the pairs whose least weight changed, and
// queues them as upserts or deletions. Queued changes go to the device once they reach
// `min_device_batch` pairs (the measured GPU/CPU crossover is about 320 edges per batch,
// docs/performance.md "Graph edits") or when the copy is read; smaller batches stay on the host
// until then, so single-edit batches never pay a ~45 us launch.
//
// Failure policy: the mirror never fails a change. If the index or the device fails (device
// out of memory, an id it does not know), the graph's copy is marked stale and dropped; the
// next read rebuilds it from GraphStore::get. A device problem never refuses an edit, and a
// copy is never left half-applied.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "engine/graph_copies.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "store/graphs/graph_store.hpp"

namespace gcompute::server {

/// The device graph of one stored graph as exported by DeviceGraphMirror::export_csr.
struct MirrorCsr {
  /// Vertex id of each slot (row/column index of csr); kNoVertex for slots of deleted vertices.
  std::vector<std::uint64_t> slot_vertex;
  kernels::HostCsr csr;
  std::uint64_t version = 0;  ///< the graph version the copy holds
  std::string where;          ///< MirrorTarget::where()
};

/// A stored graph's dense weight matrix (GraphStore::to_dense's, f32) built where its copy
/// lives, as DeviceGraphMirror::dense_weights returns it.
struct MirrorDense {
  Matrix weights;                         ///< n x n f32; on the CUDA backend device memory only
  std::vector<std::uint64_t> vertex_ids;  ///< ascending; row i is vertex vertex_ids[i]
  std::uint64_t version = 0;              ///< the graph version the copy holds
};

/// Shortest paths from one vertex of a stored graph, searched where its copy lives, as
/// DeviceGraphMirror::sssp returns them.
struct MirrorSssp {
  std::vector<float> dist;                ///< row i is vertex vertex_ids[i]
  std::vector<std::int32_t> parent;       ///< rows; -1 where unreachable
  kernels::SsspInfo info;                 ///< a negative cycle's vertex as a vertex id
  std::vector<std::uint64_t> vertex_ids;  ///< ascending
  std::uint64_t version = 0;              ///< the graph version the copy holds
  double seconds = 0;                     ///< building the CSR and the search, on the device
  std::string where;                      ///< MirrorTarget::where()
};

/// Looks at a graph's vertex ids before a search (e.g. that a target exists). It runs under
/// the mirror's lock of that graph, so it must not call into the graph store.
using MirrorVertexCheck = std::function<absl::Status(const std::vector<std::uint64_t>& vertex_ids)>;

class DeviceGraphMirror final : public GraphSubscriber {
 public:
  static constexpr std::uint64_t kNoVertex = ~std::uint64_t{0};

  struct Options {
    /// Queued pair changes of a graph go to its copy once there are at least this many (and
    /// always when the copy is read). 0 or 1: after every batch.
    std::size_t min_device_batch = 320;
  };

  /// `targets` is not owned and must outlive the mirror.
  DeviceGraphMirror(MirrorTargetFactory* targets, Options options);
  ~DeviceGraphMirror() override;

  /// The store the mirror rebuilds stale copies from (the store it subscribes to). Set before
  /// the first read.
  void attach(const GraphStore* store) { store_ = store; }

  void on_change(const GraphChange& change) override;

  /// Brings the graph's copy up to date (sends queued changes; rebuilds it from the store if it
  /// is stale or unknown) and exports it. NOT_FOUND for a graph the store does not have;
  /// the target's error (e.g. RESOURCE_EXHAUSTED) if the copy cannot be built.
  absl::StatusOr<MirrorCsr> export_csr(const std::string& graph_id);

  /// The graph's dense weight matrix, built from its copy where the copy lives (no host round
  /// trip), after bringing the copy up to date as export_csr does. UNIMPLEMENTED where copies
  /// have no dense form; NOT_FOUND for a graph the store does not have; RESOURCE_EXHAUSTED when
  /// the matrix does not fit (the copy stays usable).
  absl::StatusOr<MirrorDense> dense_weights(const std::string& graph_id);

  /// Shortest paths from vertex id `source`, searched on the graph's up-to-date copy with its
  /// CSR built where the copy lives (no host round trip but the results). NOT_FOUND for a
  /// graph the store does not have or a source that is not a vertex; `check`'s error; CANCELLED
  /// when `stop` fires; UNIMPLEMENTED where copies cannot search; FAILED_PRECONDITION for a
  /// weight beyond f32 (the host path names it).
  absl::StatusOr<MirrorSssp> sssp(const std::string& graph_id, std::uint64_t source,
                                  kernels::StopToken stop, const MirrorVertexCheck& check);

  /// Counters, for tests and logs.
  struct Stats {
    std::uint64_t flushes = 0;        ///< batches of pair changes sent to copies
    std::uint64_t pairs_flushed = 0;  ///< pair changes sent
    std::uint64_t rebuilds = 0;       ///< copies rebuilt from a store snapshot
    std::uint64_t failures = 0;       ///< copies marked stale after an error
  };
  Stats stats() const;

  /// The host-side model of one graph's copy (defined in graph_mirror.cc).
  class Graph;

 private:
  struct Entry {
    absl::Mutex mu;
    std::unique_ptr<Graph> graph ABSL_GUARDED_BY(mu);  // null: stale, rebuilt on read
    std::uint64_t changes ABSL_GUARDED_BY(mu) = 0;     // listener calls seen, for rebuilds
    std::uint64_t version ABSL_GUARDED_BY(mu) = 0;
  };

  std::shared_ptr<Entry> entry(const std::string& graph_id, bool create);
  /// Drops the copy after `status` (counted, remembered for the next read).
  void mark_stale(Entry& e, const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  /// Runs `read` on the graph's up-to-date copy (rebuilt from the store if stale or unknown)
  /// with the version it holds; a failure of `read` marks the copy stale if `stale_on_failure`.
  absl::Status read_copy(const std::string& graph_id, bool stale_on_failure,
                         absl::FunctionRef<absl::Status(Graph&, std::uint64_t)> read);
  /// Sends queued changes if there are at least `min_pairs`; marks the copy stale on failure.
  void flush(Entry& e, std::size_t min_pairs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);

  MirrorTargetFactory* const targets_;
  const Options options_;
  const GraphStore* store_ = nullptr;

  mutable absl::Mutex mu_;  // the map and the stats; taken before no Entry::mu
  std::map<std::string, std::shared_ptr<Entry>> graphs_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  absl::Status last_failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gcompute::server
