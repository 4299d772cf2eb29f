// SPDX-License-Identifier: Apache-2.0
// Single-source shortest paths over a graph in CSR form, negative weights allowed.
#pragma once

#include <cstdint>
#include <limits>

#include "absl/status/status.h"

namespace gcompute::kernels {

/// The most vertices an SSSP graph may have: parents are int32 and -1 means "none".
inline constexpr std::int64_t kSsspMaxVertices = std::numeric_limits<std::int32_t>::max();

/// A directed graph in CSR form (host or device memory, as the kernel says). The out-edges of
/// v are e in [row_offsets[v], row_offsets[v + 1]): v -> cols[e] with weight weights[e].
/// row_offsets has n + 1 entries, starts at 0, never decreases and ends at m. Weights are f32,
/// neither NaN nor -inf; +inf is allowed and acts as no edge. Parallel edges and self-loops are
/// allowed.
struct CsrView {
  std::int64_t n = 0;
  std::int64_t m = 0;
  const std::uint64_t* row_offsets = nullptr;  ///< n + 1
  const std::uint32_t* cols = nullptr;         ///< m
  const float* weights = nullptr;              ///< m
};

/// Outcome of an SSSP run.
///
/// Without a negative cycle reachable from the source, dist[v] is the length of a shortest
/// path (sums in f32, dist[u] + w as the APSP kernels add), +inf where v is unreachable, and
/// parent[v] is the vertex before v on such a path (parent[source] = source, -1 where
/// unreachable). Parents change only on a strictly shorter distance, so they form a tree rooted
/// at the source even through zero-weight cycles.
///
/// With one (negative_cycle), cycle_vertex is a vertex reachable from the source that lies on a
/// cycle of negative length (found as a cycle of the parent pointers); dist and parent then
/// hold the state when it was found, not shortest paths. "Negative" is judged in f32: with
/// non-integer weights, rounding can make a cycle of exactly zero length look negative.
struct SsspInfo {
  bool negative_cycle = false;
  std::int64_t cycle_vertex = -1;
  /// GPU: frontier rounds run. CPU: vertices scanned (heap or queue pops).
  std::int64_t rounds = 0;
  /// Strict improvements of a distance (each one an edge relaxation that changed dist).
  std::int64_t relaxations = 0;
};

/// INVALID_ARGUMENT, naming the field and the values, unless: 0 <= m, 0 < n <=
/// kSsspMaxVertices, the arrays are present (cols and weights may be null when m = 0) and
/// 0 <= source < n. Reads none of the arrays (the GPU kernel checks them on the device).
absl::Status validate_sssp_shape(const CsrView& graph, std::int64_t source);

/// A defect in a CSR graph's arrays, as validate_sssp and the GPU kernel find them (the first
/// of these kinds in this order, and within a kind the smallest index).
struct CsrDefect {
  enum class Kind {
    kFirstOffset,  ///< row_offsets[0] != 0; value = row_offsets[0]
    kOffsetOrder,  ///< row_offsets[index] = value > next = row_offsets[index + 1]
    kLastOffset,   ///< row_offsets[n] = value != m
    kColumn,       ///< cols[index] = value >= n
    kWeight,       ///< weights[index] = weight is NaN or -inf
  };
  Kind kind = Kind::kFirstOffset;
  std::int64_t index = 0;
  std::uint64_t value = 0;
  std::uint64_t next = 0;
  float weight = 0.0f;
};

/// The INVALID_ARGUMENT status that names `defect` of `graph`.
absl::Status csr_defect_status(const CsrDefect& defect, const CsrView& graph);

/// validate_sssp_shape, then the arrays (host memory): the first CsrDefect as
/// csr_defect_status words it.
absl::Status validate_sssp(const CsrView& graph, std::int64_t source);

}  // namespace gcompute::kernels
