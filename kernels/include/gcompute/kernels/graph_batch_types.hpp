// SPDX-License-Identifier: Apache-2.0
// Backend-neutral contract of the dynamic edge store behind the graph store's device mirror:
// a directed weighted graph over dense vertex indices 0..n-1 to which whole batches of edge
// insertions, deletions and weight updates are applied at once. cpu::DynamicGraph and
// cuda::DeviceGraph implement the same semantics; tests hold them to a std::map model.
//
// Vertex indices are dense 32-bit slots, not the store's stable 64-bit ids: the mirror keeps
// the id <-> slot map on the host (the store caps a graph at 2^26 vertices). A hyperedge with
// tails T and heads H is mirrored as the |T| x |H| ordinary edges it induces, or as incidences
// (edge row -> vertex) in a second instance whose "vertices" are the hyperedges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace gcompute::kernels {

/// Largest vertex count; indices 0xFFFFFFFE and 0xFFFFFFFF are the empty and deleted slot marks.
inline constexpr std::uint32_t kMaxGraphVertices = 0xFFFFFFFEu;

/// One edge of a batch: src -> dst with a weight (ignored by deletions). 12 bytes, so a batch
/// is one contiguous array and one host-to-device copy.
struct GraphEdge {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  float weight = 0.0f;
};

/// What happened to one element of a batch (optional per-element output, in input order).
enum class EdgeStatus : std::uint8_t {
  kInserted = 0,    ///< insert: (src, dst) was absent and now exists with this weight
  kUpdated = 1,     ///< insert or update_weights: (src, dst) existed; its weight is now this one
  kSuperseded = 2,  ///< a later element of the same batch has the same (src, dst): this one is
                    ///< ignored (the last occurrence in the batch wins)
  kRemoved = 3,     ///< delete: (src, dst) existed and is gone
  kMissing = 4,     ///< delete or update_weights: (src, dst) did not exist; nothing changed
  kInvalid = 5,     ///< src or dst >= num_vertices (the whole batch is rejected)
};

/// Semantics shared by both backends:
///  * A batch is atomic with respect to validation: if any element has src or dst out of
///    range, the call returns INVALID_ARGUMENT and the graph is unchanged.
///  * Duplicates inside a batch: only the last occurrence of each (src, dst) takes effect; the
///    earlier ones are reported kSuperseded and counted in `superseded`.
///  * Insert of an existing (src, dst) overwrites its weight (kUpdated, counted in `updated`),
///    so an insert batch is an upsert. update_weights never inserts (absent ones: kMissing).
///  * Self-loops are ordinary edges. There are no parallel edges: (src, dst) is the key.
struct GraphBatchResult {
  std::uint64_t inserted = 0;
  std::uint64_t updated = 0;
  std::uint64_t removed = 0;
  std::uint64_t missing = 0;
  std::uint64_t superseded = 0;
  /// Diagnostics, backend-specific: adjacency tables enlarged (rehashed) by this batch (the
  /// device enlarges each vertex at most once per batch, the CPU twin may do it repeatedly),
  /// and whether the device repacked its whole slot pool into a new allocation.
  std::uint64_t grown_vertices = 0;
  bool rebuilt = false;
};

/// Sizing policy of the per-vertex adjacency hash tables (capacities are powers of two).
struct GraphOptions {
  std::uint32_t min_capacity = 4;  ///< smallest non-empty table
  /// A table is enlarged before a batch would push (live + deleted marks + new) past this
  /// fraction of its capacity. Keeps linear probes short and guarantees a free slot.
  float max_load = 0.75f;
  /// An enlarged table is sized so that its live edges plus the batch fill at most this.
  float grow_load = 0.5f;
  /// Device only: spare slot-pool capacity allocated on a rebuild, as a fraction of what is
  /// needed, so that later enlargements append instead of repacking everything.
  float pool_slack = 0.25f;
};

/// INVALID_ARGUMENT unless min_capacity >= 1, 0 < grow_load <= max_load < 1 and
/// pool_slack >= 0.
absl::Status validate(const GraphOptions& options);

#if defined(__CUDACC__)
#define GC_GRAPH_HD __host__ __device__
#else
#define GC_GRAPH_HD
#endif

/// Most (live + deleted-mark) slots a table of `capacity` may hold before it must be enlarged.
GC_GRAPH_HD inline std::uint32_t graph_table_threshold(std::uint64_t capacity, float max_load) {
  return static_cast<std::uint32_t>(static_cast<double>(capacity) * static_cast<double>(max_load));
}

/// Where a destination vertex's probe starts (masked to the table): murmur3's 32-bit finaliser.
/// The device and its CPU twin share it, so that both lay out a table alike.
GC_GRAPH_HD inline std::uint32_t graph_slot_hash(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

/// Capacity (a power of two) of an enlarged table that must hold `need` live edges.
GC_GRAPH_HD inline std::uint64_t graph_table_size_for(std::uint64_t need, const GraphOptions& o) {
  std::uint64_t cap = 1;
  while (cap < o.min_capacity) cap <<= 1;
  while (static_cast<double>(cap) * static_cast<double>(o.grow_load) < static_cast<double>(need) ||
         graph_table_threshold(cap, o.max_load) < need)
    cap <<= 1;
  return cap;
}

/// Host CSR export: row v is out-edges of v, sorted by dst.
struct HostCsr {
  std::uint32_t num_vertices = 0;
  std::vector<std::uint64_t> row_offsets;  ///< num_vertices + 1 entries
  std::vector<std::uint32_t> cols;
  std::vector<float> weights;
};

}  // namespace gcompute::kernels
