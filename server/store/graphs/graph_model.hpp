// SPDX-License-Identifier: Apache-2.0
// Proto-free domain types of the graph store (gcompute.v1 graphs.proto). The gRPC layer
// converts between these and the messages; the store never sees protobuf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gcompute::server {

/// A directed hyperedge: from every tail to every head, with one weight. Tails and heads are
/// non-empty sets (no repeats) of existing vertex ids; a vertex may be both a tail and a head.
struct Hyperedge {
  std::uint64_t id = 0;  ///< assigned by the store; ignored on input
  std::vector<std::uint64_t> tails;
  std::vector<std::uint64_t> heads;
  double weight = 0.0;

  friend bool operator==(const Hyperedge&, const Hyperedge&) = default;
};

/// Summary of one stored graph.
struct GraphInfo {
  std::string graph_id;
  std::uint64_t version = 0;  ///< 1 after creation, +1 per applied non-empty batch
  std::uint64_t num_vertices = 0;
  std::uint64_t num_edges = 0;

  friend bool operator==(const GraphInfo&, const GraphInfo&) = default;
};

/// One consistent version of a graph.
struct GraphSnapshot {
  GraphInfo info;
  std::vector<std::uint64_t> vertices;  ///< ascending
  std::vector<Hyperedge> edges;         ///< ascending by id

  friend bool operator==(const GraphSnapshot&, const GraphSnapshot&) = default;
};

/// A graph with everything needed to continue it exactly (persistence, graph_wal.hpp): its
/// contents and version, and the id counters (ids are never reused, so after deletions the
/// counters are not derivable from the contents).
struct GraphImage {
  GraphSnapshot graph;
  std::uint64_t next_vertex_id = 0;  ///< the id the next add_vertex gets
  std::uint64_t next_edge_id = 0;    ///< the id the next add_edge gets

  friend bool operator==(const GraphImage&, const GraphImage&) = default;
};

/// Adds a vertex; its id is returned in EditResult::vertex_id.
struct AddVertex {};
/// Removes the vertex from every incident edge; edges left without tails or without heads
/// are deleted too (their ids are returned in EditResult::deleted_edge_ids, ascending).
struct DeleteVertex {
  std::uint64_t vertex_id = 0;
};
/// Adds a hyperedge; its id is returned in EditResult::edge_id.
struct AddEdge {
  std::vector<std::uint64_t> tails;
  std::vector<std::uint64_t> heads;
  double weight = 0.0;
};
/// Deletes one edge.
struct DeleteEdge {
  std::uint64_t edge_id = 0;
};
/// Replaces an edge's weight.
struct SetWeight {
  std::uint64_t edge_id = 0;
  double weight = 0.0;
};
/// Splits vertex v into v and a new vertex w joined by a new edge v -> w of joining_weight.
/// Each edge in move_edge_ids (each must be incident to v) has v replaced by w in its tails
/// and heads; the other edges stay on v. EditResult gets w (vertex_id) and the new edge.
struct DecomposeVertex {
  std::uint64_t vertex_id = 0;
  std::vector<std::uint64_t> move_edge_ids;
  double joining_weight = 0.0;
};

/// One edit of a batch. Ids refer to the graph as left by the edits before it in the batch.
using Edit = std::variant<AddVertex, DeleteVertex, AddEdge, DeleteEdge, SetWeight, DecomposeVertex>;

/// What one edit created or removed.
struct EditResult {
  std::uint64_t vertex_id = 0;                  ///< add_vertex, decompose_vertex (the new vertex)
  std::uint64_t edge_id = 0;                    ///< add_edge, decompose_vertex (the joining edge)
  std::vector<std::uint64_t> deleted_edge_ids;  ///< delete_vertex, ascending

  friend bool operator==(const EditResult&, const EditResult&) = default;
};

/// Outcome of an applied batch.
struct ApplyResult {
  std::uint64_t version = 0;        ///< the graph's version after the batch
  std::vector<EditResult> results;  ///< one per edit, in order

  friend bool operator==(const ApplyResult&, const ApplyResult&) = default;
};

/// What a committed batch changed in one edge, net over the batch (an edge deleted and re-added
/// under the same id, as decompose_vertex does, is one change from its old to its new form).
struct EdgeDelta {
  std::uint64_t id = 0;
  std::optional<Hyperedge> before;  ///< absent: the batch created the edge
  std::optional<Hyperedge> after;   ///< absent: the batch deleted the edge

  friend bool operator==(const EdgeDelta&, const EdgeDelta&) = default;
};

/// The net effect of a committed batch: what subscribers of the store's change feed apply
/// instead of interpreting the edits again.
struct GraphDelta {
  std::vector<std::uint64_t> added_vertices;    ///< ascending
  std::vector<std::uint64_t> removed_vertices;  ///< ascending
  std::vector<EdgeDelta> edges;                 ///< ascending by id; only edges that differ

  friend bool operator==(const GraphDelta&, const GraphDelta&) = default;
};

/// A graph as a dense weight matrix (the APSP input).
/// A graph as the SSSP kernels take it (kernels::CsrView): rows are vertices in ascending id
/// order; every (tail, head) pair of every hyperedge is an edge of the hyperedge's weight as f32
/// (parallel edges kept: the kernels take the least).
struct CsrGraph {
  std::vector<std::uint64_t> vertex_ids;   ///< ascending; row i is vertex_ids[i]
  std::vector<std::uint64_t> row_offsets;  ///< n + 1
  std::vector<std::uint32_t> cols;         ///< m
  std::vector<float> weights;              ///< m
  std::uint64_t version = 0;               ///< the version it was built from
};

struct DenseGraph {
  std::vector<std::uint64_t> vertex_ids;  ///< ascending; row/column i is vertex_ids[i]
  /// n*n elements of the requested dtype, little-endian, row-major. W[i][j] is the least
  /// weight over the hyperedges with vertex_ids[i] as a tail and vertex_ids[j] as a head;
  /// +inf (f32) or kernels::kI32NoEdge (i32) where there is none.
  std::string weights;
  std::uint64_t version = 0;  ///< the version the matrix was built from
};

/// Per-graph and store-wide size limits (RESOURCE_EXHAUSTED past them).
struct GraphLimits {
  std::uint64_t max_vertices = std::uint64_t{1} << 26;  ///< live vertices in one graph
  std::uint64_t max_edges = std::uint64_t{1} << 26;     ///< live edges in one graph
};

}  // namespace gcompute::server
