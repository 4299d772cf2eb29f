// SPDX-License-Identifier: Apache-2.0
// The graph store: named, versioned, directed weighted hypergraphs edited in atomic batches
// (gcompute.v1 graphs.proto), held in memory.
//
// Locking: one store-wide mutex guards the name -> graph map and is held only to look a
// graph up, add or remove it; each graph has its own reader/writer mutex. Reads (get, list,
// to_dense) of a graph share its lock, batches on one graph are serialised, and different
// graphs never wait on each other's edits. Lock order: store mutex, then a graph's mutex.
//
// Changes reach the rest of the server through graph_feed.hpp: the journal (the write-ahead
// log) before they become visible, subscribers (device mirror, APSP cache) after.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "gcompute/kernels/dtype.hpp"
#include "store/graphs/graph_feed.hpp"
#include "store/graphs/graph_model.hpp"
#include "store/graphs/graph_state.hpp"

namespace gcompute::server {

/// Thread-safe store of graphs. See the file comment for the locking scheme.
class GraphStore {
 public:
  struct Options {
    /// Live vertices and edges per graph.
    GraphLimits limits;
    /// Graphs in the store.
    std::uint64_t max_graphs = 1024;
    /// Not owned; must outlive the store. Null: no journal.
    GraphJournal* journal = nullptr;
    /// Told of every committed change, in this order. Not owned; must outlive the store.
    std::vector<GraphSubscriber*> subscribers;
  };

  GraphStore() : GraphStore(Options{}) {}
  explicit GraphStore(Options options);

  GraphStore(const GraphStore&) = delete;
  GraphStore& operator=(const GraphStore&) = delete;

  static constexpr std::uint64_t kUnlimited = ~std::uint64_t{0};

  /// Graphs live under keys "NAMESPACE/GRAPH_ID", or "GRAPH_ID" in the empty namespace: each
  /// tenant has a namespace of its own (the ops layer composes the keys), so ids of different
  /// tenants never collide and existence is never revealed across them. Keys are what the
  /// journal persists; messages show only the graph id.
  struct CreateOptions {
    std::string ns;  ///< the namespace the graph goes in (generated ids too)
    std::uint64_t max_graphs_in_ns = kUnlimited;
  };

  /// Creates a graph with vertices 0..num_vertices-1 and edges[i] as edge i (ids in `edges`
  /// are ignored). graph_id: a key in create.ns (its id part 1-128 characters of
  /// [A-Za-z0-9._-]), or empty for a generated "g-<32 hex digits>" (128 random bits).
  /// INVALID_ARGUMENT for a bad id or edge (naming field and value), ALREADY_EXISTS if the id
  /// is taken, RESOURCE_EXHAUSTED past a limit (the store's or the namespace's).
  absl::StatusOr<GraphInfo> create(std::string graph_id, std::uint64_t num_vertices,
                                   std::vector<Hyperedge> edges, const CreateOptions& create);
  /// create() in the empty namespace, without a namespace limit.
  absl::StatusOr<GraphInfo> create(std::string graph_id, std::uint64_t num_vertices,
                                   std::vector<Hyperedge> edges) {
    return create(std::move(graph_id), num_vertices, std::move(edges), CreateOptions{});
  }

  /// The key of `graph_id` in namespace `ns`, and back.
  static std::string key(const std::string& ns, const std::string& graph_id);
  static std::string graph_id_of(const std::string& key);
  /// OK for a key whose namespace (if any) and id are well formed, else INVALID_ARGUMENT.
  static absl::Status validate_key(const std::string& key);

  /// A consistent snapshot of the current version. NOT_FOUND naming the id.
  absl::StatusOr<GraphSnapshot> get(const std::string& graph_id) const;

  /// The current summary of one graph, without copying it. NOT_FOUND naming the id.
  absl::StatusOr<GraphInfo> info(const std::string& graph_id) const;

  /// The summaries of the graphs in namespace `ns`, sorted by key.
  std::vector<GraphInfo> list(const std::string& ns = "") const;

  /// Removes a graph. NOT_FOUND naming the id.
  absl::Status remove(const std::string& graph_id);

  /// Applies a batch atomically (see GraphState::apply for the per-edit errors). ABORTED
  /// ("graph g has version 5, expected 4") when expected_version is set and differs; the
  /// version is checked for empty batches too, which change nothing.
  absl::StatusOr<ApplyResult> apply(const std::string& graph_id,
                                    std::optional<std::uint64_t> expected_version,
                                    std::span<const Edit> edits);

  /// The graph as a dense f32 or i32 weight matrix (see DenseGraph, GraphState::to_dense).
  absl::StatusOr<DenseGraph> to_dense(const std::string& graph_id, kernels::DType dtype,
                                      std::uint64_t max_elements) const;

  /// The graph in CSR form (see CsrGraph, GraphState::to_csr).
  absl::StatusOr<CsrGraph> to_csr(const std::string& graph_id, std::uint64_t max_edges) const;

  /// Number of graphs.
  std::size_t size() const;

  // ---- persistence (graph_wal.hpp) ----------------------------------------------------
  /// Adds a graph exactly as `image` describes it (id counters and version included),
  /// without telling the journal or subscribers: recovery from a snapshot. INVALID_ARGUMENT for a
  /// bad id or an inconsistent image, ALREADY_EXISTS if the id is taken.
  absl::Status restore(const GraphImage& image);

  /// Every graph in a consistent cut: `fn` gets each graph's state while no change can start
  /// or be in progress (the store mutex and every graph's mutex are held shared: reads go
  /// on, create/apply/remove wait). The snapshot writer rotates its log inside `fn`, so the
  /// snapshot holds exactly the changes logged before the rotation.
  absl::Status checkpoint(
      absl::FunctionRef<absl::Status(const std::vector<std::pair<std::string, const GraphState*>>&)>
          fn) const;

  /// GraphState::check_invariants over every graph, naming the graph. For tests.
  absl::Status check_invariants() const;

  /// OK if `graph_id` is 1-128 characters of [A-Za-z0-9._-], else INVALID_ARGUMENT.
  static absl::Status validate_graph_id(const std::string& graph_id);

 private:
  struct Entry {
    mutable absl::Mutex mu;
    GraphState state ABSL_GUARDED_BY(mu);
    bool removed ABSL_GUARDED_BY(mu) = false;  // set under both locks by remove()
  };

  /// The entry, or NOT_FOUND. The caller locks it and checks `removed`.
  absl::StatusOr<std::shared_ptr<Entry>> find(const std::string& graph_id) const;
  /// read(state) of a graph that exists, under its reader lock; else NOT_FOUND.
  template <typename Result, typename Read>
  absl::StatusOr<Result> read_state(const std::string& graph_id, Read read) const;
  /// Tells every subscriber of a committed change.
  void publish(const GraphChange& change) const;

  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> graphs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gcompute::server
