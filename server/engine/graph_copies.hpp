// SPDX-License-Identifier: Apache-2.0
// Device copies of stored graphs, as a backend offers them (Backend::make_graph_copies): each
// copy is a dynamic edge store over dense 32-bit vertex slots, edited in batches of
// (src, dst, weight) pairs. The ops layer's DeviceGraphMirror keeps them equal to the stored
// graphs; the CUDA backend implements them with kernels::cuda::DeviceGraph.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/matrix.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "gcompute/kernels/sssp_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::server {

/// Shortest paths over a copy's slots (kernels' SsspInfo contract; parents are slots).
struct SlotSssp {
  std::vector<float> dist;
  std::vector<std::int32_t> parent;
  kernels::SsspInfo info;
  double seconds = 0;  ///< the search, with building the CSR where the copy lives
};

/// One graph's copy (a device graph). Called by one thread at a time.
class MirrorTarget {
 public:
  virtual ~MirrorTarget() = default;
  /// Appends `count` isolated vertices (slots).
  virtual absl::Status add_vertices(std::uint32_t count) = 0;
  /// Deletes the listed (src, dst) pairs; absent ones are ignored.
  virtual absl::Status delete_edges(std::span<const kernels::GraphEdge> edges) = 0;
  /// Inserts or overwrites the listed pairs (no duplicates within a call).
  virtual absl::Status upsert_edges(std::span<const kernels::GraphEdge> edges) = 0;
  /// The live edges as CSR over the slots, rows sorted by dst.
  virtual absl::StatusOr<kernels::HostCsr> export_csr() = 0;
  /// The live edges as a dense rows x rows f32 weight matrix where the copy lives (+inf: no
  /// edge), slot s at row slot_rows[s] (-1: left out). UNIMPLEMENTED where the copy cannot.
  virtual absl::StatusOr<Matrix> dense_weights(std::span<const std::int32_t> slot_rows,
                                               std::int64_t rows) {
    static_cast<void>(slot_rows);
    static_cast<void>(rows);
    return absl::UnimplementedError("this graph copy has no dense export");
  }
  /// Shortest paths from slot `source` over the live edges, where the copy lives. CANCELLED
  /// when `stop` fires; UNIMPLEMENTED where the copy cannot.
  virtual absl::StatusOr<SlotSssp> sssp(std::uint32_t source, kernels::StopToken stop) {
    static_cast<void>(source);
    static_cast<void>(stop);
    return absl::UnimplementedError("this graph copy has no shortest-path search");
  }
  /// Where the copy lives, e.g. "cuda:0".
  virtual std::string where() const = 0;
};

/// Makes copies. Thread-safe.
class MirrorTargetFactory {
 public:
  virtual ~MirrorTargetFactory() = default;
  /// An edgeless copy of num_vertices slots.
  virtual absl::StatusOr<std::unique_ptr<MirrorTarget>> create(std::uint32_t num_vertices) = 0;
};

}  // namespace gcompute::server
