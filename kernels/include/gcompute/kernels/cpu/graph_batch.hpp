// SPDX-License-Identifier: Apache-2.0
// CPU twin of cuda::DeviceGraph: the same batch-edit contract (graph_batch_types.hpp) on the
// host. It is the baseline the device version is measured against and the fallback for batches
// too small to pay for a launch. Each vertex owns an open-addressing table of packed
// (dst, weight) slots; a batch is validated, sorted by (src, dst), deduplicated (last one
// wins) and applied, with large batches split by src over threads (no locks: a vertex's table
// is touched by one thread only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcompute/kernels/graph_batch_types.hpp"

namespace gcompute::kernels::cpu {

/// A dynamic directed weighted graph over vertices 0..num_vertices()-1.
class DynamicGraph {
 public:
  /// INVALID_ARGUMENT for num_vertices > kMaxGraphVertices or inconsistent options
  /// (need 0 < grow_load <= max_load < 1, min_capacity >= 1).
  static absl::StatusOr<DynamicGraph> create(std::uint32_t num_vertices, GraphOptions options = {});

  /// Upserts the batch (see GraphBatchResult for the semantics). `status`, if not empty, must
  /// have edges.size() entries and receives one EdgeStatus per element. `threads` = 0 picks
  /// the hardware concurrency for large batches and 1 thread for small ones.
  absl::StatusOr<GraphBatchResult> insert_edges(std::span<const GraphEdge> edges,
                                                std::span<EdgeStatus> status = {}, int threads = 0);
  /// Deletes the listed (src, dst) pairs (weights ignored); absent ones are kMissing.
  absl::StatusOr<GraphBatchResult> delete_edges(std::span<const GraphEdge> edges,
                                                std::span<EdgeStatus> status = {}, int threads = 0);
  /// Sets the weight of existing edges; absent ones are kMissing and not inserted.
  absl::StatusOr<GraphBatchResult> update_weights(std::span<const GraphEdge> edges,
                                                  std::span<EdgeStatus> status = {},
                                                  int threads = 0);

  /// Appends `count` isolated vertices; returns the first new index.
  absl::StatusOr<std::uint32_t> add_vertices(std::uint32_t count);

  /// Live edges as CSR, rows sorted by dst.
  HostCsr export_csr() const;

  std::uint32_t num_vertices() const { return static_cast<std::uint32_t>(rows_.size()); }
  std::uint64_t num_edges() const { return num_edges_; }
  const GraphOptions& options() const { return options_; }

  enum class Op : std::uint8_t { kInsert, kDelete, kUpdate };

 private:
  struct Row {
    std::vector<std::uint64_t> slots;  ///< capacity = slots.size(), a power of two or 0
    std::uint32_t live = 0;            ///< edges present
    std::uint32_t used = 0;            ///< live + deleted marks
  };

  DynamicGraph(std::uint32_t num_vertices, GraphOptions options);
  absl::StatusOr<GraphBatchResult> apply(Op op, std::span<const GraphEdge> edges,
                                         std::span<EdgeStatus> status, int threads);
  /// Applies sorted (key, index) items whose src values all belong to this call.
  void apply_sorted(Op op, std::span<const std::uint64_t> items_key,
                    std::span<const std::uint32_t> items_idx, std::span<const GraphEdge> edges,
                    std::span<EdgeStatus> status, GraphBatchResult& out);
  void grow(Row& row, std::uint32_t need);

  GraphOptions options_;
  std::vector<Row> rows_;
  std::uint64_t num_edges_ = 0;
};

}  // namespace gcompute::kernels::cpu
