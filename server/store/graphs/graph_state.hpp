// SPDX-License-Identifier: Apache-2.0
// One graph's contents and its edit machinery, without any locking (GraphStore locks).
//
// Vertices and edges live in hash maps keyed by id (O(1) per touched element; an ordered
// map of these large values was several times slower); readers that need id order sort
// the ids, which they pay for anyway by copying the graph out. Each vertex keeps the ids of the
// edges it is a tail of and a head of, so deleting or splitting a vertex touches only its incident
// edges. A batch is applied in place while an undo log records the inverse of every primitive
// change; a failing edit replays the log backwards, so a batch costs what it touches, never a copy
// of the graph.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcompute/kernels/dtype.hpp"
#include "store/graphs/graph_model.hpp"

namespace gcompute::server {

/// A weight as messages show it: the shortest text that reads back as the same double
/// ("2.5", "-1073741824", "1e+39", "nan", "inf").
std::string format_weight(double weight);

/// A graph's vertices, edges, id counters and version. Not thread-safe: the owner locks.
/// Movable, not copyable (copies would be accidental whole-graph copies).
class GraphState {
 public:
  /// Called once a batch has been applied, before it is committed (the version bumped): a
  /// write-ahead log appends the batch here, a device mirror queues it. A non-OK status rolls
  /// the batch back and is returned from apply().
  using BeforeCommit = absl::FunctionRef<absl::Status(const ApplyResult&)>;

  GraphState() = default;
  GraphState(GraphState&&) = default;
  GraphState& operator=(GraphState&&) = default;
  GraphState(const GraphState&) = delete;
  GraphState& operator=(const GraphState&) = delete;

  /// Validates and builds version 1: vertices 0..num_vertices-1, edges[i] gets id i.
  /// INVALID_ARGUMENT names the field and value ("edges[2].heads[0] = 7 but the graph has 5
  /// vertices"); RESOURCE_EXHAUSTED past the limits.
  static absl::StatusOr<GraphState> create(std::uint64_t num_vertices, std::vector<Hyperedge> edges,
                                           const GraphLimits& limits);

  /// Rebuilds a graph exactly as image describes it (persistence: snapshot recovery).
  /// INVALID_ARGUMENT (naming the element) if the image is inconsistent: ids not ascending
  /// or not below the counters, an edge naming a missing vertex, repeated or empty
  /// tails/heads, a non-finite weight, version 0; RESOURCE_EXHAUSTED past the limits.
  static absl::StatusOr<GraphState> restore(const GraphImage& image, const GraphLimits& limits);

  /// snapshot() plus the id counters.
  GraphImage image(const std::string& graph_id) const;

  std::uint64_t version() const { return version_; }
  std::uint64_t num_vertices() const { return vertices_.size(); }
  std::uint64_t num_edges() const { return edges_.size(); }

  /// The summary under the given id.
  GraphInfo info(const std::string& graph_id) const;
  /// Every vertex (ascending) and edge (ascending id).
  GraphSnapshot snapshot(const std::string& graph_id) const;

  /// Applies the edits in order, all or none (see graphs.proto). On any error the graph is
  /// left exactly as it was: NOT_FOUND for a missing vertex or edge, INVALID_ARGUMENT for a
  /// malformed edit, RESOURCE_EXHAUSTED past the limits, each naming the edit index and
  /// field ("edits[3].delete_edge.edge_id = 9: no such edge"), or before_commit's status.
  /// An empty batch changes nothing and does not call before_commit.
  /// With `delta`, also reports the batch's net effect there once it has committed.
  absl::StatusOr<ApplyResult> apply(std::span<const Edit> edits, const GraphLimits& limits,
                                    BeforeCommit before_commit, GraphDelta* delta = nullptr);
  /// apply() with nothing to call before committing.
  absl::StatusOr<ApplyResult> apply(std::span<const Edit> edits, const GraphLimits& limits);

  /// The dense weight matrix of DenseGraph (f32 or i32). RESOURCE_EXHAUSTED when n*n exceeds
  /// max_elements; INVALID_ARGUMENT for another dtype, or a weight the dtype cannot hold
  /// (f32: beyond its range; i32: not an integer or |w| > kernels::kI32MaxAbsWeight).
  absl::StatusOr<DenseGraph> to_dense(kernels::DType dtype, std::uint64_t max_elements) const;

  /// The graph in CSR form (CsrGraph). RESOURCE_EXHAUSTED when it has more than max_edges
  /// (tail, head) pairs; INVALID_ARGUMENT for a weight beyond the range of f32 (as to_dense).
  absl::StatusOr<CsrGraph> to_csr(std::uint64_t max_edges) const;

  /// INTERNAL if the incidence sets do not mirror the edges exactly, or an edge names a
  /// missing vertex, or a counter is behind an id in use. For tests and debug checks.
  absl::Status check_invariants() const;

 private:
  struct Edge {
    std::vector<std::uint64_t> tails;
    std::vector<std::uint64_t> heads;
    double weight = 0.0;
  };
  struct Vertex {
    absl::flat_hash_set<std::uint64_t> tail_of;  ///< edges with this vertex among the tails
    absl::flat_hash_set<std::uint64_t> head_of;  ///< edges with this vertex among the heads
  };

  // Undo records: each is the inverse of one primitive change made during a batch.
  struct UndoAddVertex {
    std::uint64_t id;
  };
  struct UndoEraseVertex {
    std::uint64_t id;
  };
  struct UndoAddEdge {
    std::uint64_t id;
  };
  struct UndoEraseEdge {
    std::uint64_t id;
    Edge edge;
  };
  struct UndoSetWeight {
    std::uint64_t id;
    double weight;
  };
  using Undo =
      std::variant<UndoAddVertex, UndoEraseVertex, UndoAddEdge, UndoEraseEdge, UndoSetWeight>;

  /// A batch in progress: its undo log and the counters to restore.
  struct Batch {
    std::vector<Undo> undo;
    std::uint64_t next_vertex_id = 0;
    std::uint64_t next_edge_id = 0;
  };

  // Primitive changes, each logged in the batch. They keep the incidence sets in step.
  void add_vertex(Batch& batch, std::uint64_t id);
  void erase_vertex(Batch& batch, std::uint64_t id);  // requires no incident edges
  void add_edge(Batch& batch, std::uint64_t id, Edge edge);
  void erase_edge(Batch& batch, std::uint64_t id);
  void set_weight(Batch& batch, std::uint64_t id, double weight);

  // The same changes without logging, used to build graphs and to undo.
  void attach(std::uint64_t id, const Edge& edge);
  void detach(std::uint64_t id, const Edge& edge);
  void rollback(Batch& batch);
  /// The net effect of `batch`, read from its undo log and the graph as the batch left it.
  GraphDelta describe(const Batch& batch) const;

  /// NOT_FOUND naming `field` and the id unless the edge exists.
  absl::Status require_edge(std::uint64_t edge_id, const std::string& field) const;
  /// RESOURCE_EXHAUSTED naming `field` unless `new_vertices` more vertices and `new_edges` more
  /// edges stay within `limits`.
  absl::Status require_room(const std::string& field, std::size_t new_vertices,
                            std::size_t new_edges, const GraphLimits& limits) const;

  /// Where one edit applies: its batch, its position in the batch (for messages), the limits it
  /// must keep and the result it fills.
  struct EditContext {
    Batch& batch;
    std::size_t index;
    const GraphLimits& limits;
    EditResult& result;
    /// The edit's field `name` as messages name it: "edits[INDEX].name".
    std::string field(const char* name) const;
  };
  absl::Status apply_edit(const EditContext& at, const AddVertex& edit);
  absl::Status apply_edit(const EditContext& at, const DeleteVertex& edit);
  absl::Status apply_edit(const EditContext& at, const AddEdge& edit);
  absl::Status apply_edit(const EditContext& at, const DeleteEdge& edit);
  absl::Status apply_edit(const EditContext& at, const SetWeight& edit);
  absl::Status apply_edit(const EditContext& at, const DecomposeVertex& edit);

  /// Vertex ids, ascending.
  std::vector<std::uint64_t> sorted_vertex_ids() const;
  /// OK when every edge weight fits `dtype` (to_dense's and to_csr's check), else
  /// INVALID_ARGUMENT naming the first such edge.
  absl::Status check_export_weights(kernels::DType dtype) const;

  absl::flat_hash_map<std::uint64_t, Vertex> vertices_;
  absl::flat_hash_map<std::uint64_t, Edge> edges_;
  std::uint64_t next_vertex_id_ = 0;  // ids are never reused: counters only grow
  std::uint64_t next_edge_id_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace gcompute::server
