// SPDX-License-Identifier: Apache-2.0
// All-pairs shortest paths (Floyd-Warshall) over a dense weight matrix.
#pragma once

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "gcompute/kernels/dtype.hpp"

namespace gcompute::kernels {

/// i32 weights: this value means "no edge" on input and "unreachable" on output.
constexpr std::int32_t kI32NoEdge = std::numeric_limits<std::int32_t>::max();
/// Largest |finite i32 weight| accepted, so that the sum of two never overflows.
constexpr std::int32_t kI32MaxAbsWeight = (1 << 30) - 1;
/// The i32 distances an answer can hold: [kI32MinDistance, kI32MaxDistance], 2^31 - 1 being
/// "unreachable". With n vertices a shortest path has up to n - 1 edges, so true distances
/// reach (n - 1) * kI32MaxAbsWeight and may lie outside: ApspInfo::out_of_range reports them.
constexpr std::int32_t kI32MaxDistance = kI32NoEdge - 1;  ///< 2^31 - 2
constexpr std::int32_t kI32MinDistance = -kI32NoEdge;     ///< -(2^31 - 1)

/// Problem description. The input W is n x n, row-major; W[i][j] is the weight of the edge
/// i -> j: +inf (f32) or kI32NoEdge (i32) where there is none. Negative weights are allowed.
/// Output D is n x n: D[i][j] is the length of a shortest path i -> j (+inf / kI32NoEdge if
/// none); D[i][i] = min(0, shortest cycle through i). With next_hop, N is n x n int32:
/// N[i][j] is the vertex after i on a shortest path to j, N[i][i] = i, -1 when unreachable.
struct ApspShape {
  std::int64_t n = 0;
  DType dtype = DType::kF32;  ///< kF32 or kI32
  bool next_hop = false;
};

/// Outcome. With a negative cycle the outputs are unspecified and cycle_vertex is a vertex
/// on (or reaching into) a negative cycle: D[v][v] < 0; out_of_range is then false.
/// Without one, i32 distances are exact; out_of_range says that at least one lies outside
/// [kI32MinDistance, kI32MaxDistance] and names the first such pair (smallest row, then
/// column) with its true distance. D then holds the nearest end of that range at those pairs
/// (not a distance: the result must not be returned as is); other entries and N stay exact.
/// Next hops from the distances, the rule of both backends where the weights allow it (every
/// sum exact: integers, for f32 also below 2^24 with (n - 1) * max w < 2^24, for i32 (n - 1) *
/// max w < 2^30 - 1; every weight between distinct vertices > 0 and no negative self-loop; the
/// weights not overwritten by the distances). After a distance-only Floyd-Warshall, N[i][j] = j
/// when W[i][j] = D[i][j], else the first k != i in ascending (W[i][k], k) order with W[i][k] +
/// D[k][j] = D[i][j]. Only out-edges lighter than row i's largest finite distance can qualify;
/// a row with more than kApspNextHopCandidates of them sends the whole call to the fused
/// (distance, hop count) next-hop Floyd-Warshall instead. So both backends return the same
/// next hops for the same such input.
constexpr int kApspNextHopCandidates = 2048;

struct ApspInfo {
  bool negative_cycle = false;
  std::int64_t cycle_vertex = -1;
  bool out_of_range = false;    ///< i32 only
  std::int64_t range_row = -1;  ///< the first pair whose distance is outside the i32 range
  std::int64_t range_col = -1;
  std::int64_t range_value = 0;  ///< its true distance
  /// The next hops were derived from the distances (kApspNextHopCandidates' rule).
  bool next_hop_from_distances = false;
};

/// INVALID_ARGUMENT for n < 0 or a dtype other than f32/i32.
absl::Status validate(const ApspShape& shape);

/// How the GPU APSP goes about it (the CPU ignores it). Speed only, except that the next-hop
/// fields can also change which of several equally short paths a next hop starts (the
/// defaults give the CPU's). The server reads it once at start-up
/// (cuda::tuning_from_environment, docs/dev/knobs.md).
struct ApspTuning {
  /// Pivot blocks (of 128 vertices) a round of the distance-only kernel takes: 1 or 2; 0 picks
  /// by size (2 from 48 blocks on, 1 below). The next-hop kernel always takes 1.
  int depth = 0;
  /// Next hops from the distances (distance-only rounds, then one pass over the matrix) where
  /// the weights allow it: every sum exact and every edge between distinct vertices > 0. false
  /// always runs the fused (distance, hop count, next hop) kernel.
  bool next_hop_from_distances = true;
  /// Candidate first hops kept per row by that pass, 1..2048; 0 means 2048. A row with more
  /// falls back to the fused kernel (tests make it small to exercise that).
  int next_hop_candidates = 0;
};

/// An f32 APSP result of n_old vertices brought up to date after the graph grew to n >= n_old
/// vertices (the new ones isolated and last) and gained edges that only add or lower weights
/// (cpu::apsp_add_edges, cuda::apsp_add_edges; docs/graphs.md, "Incremental APSP"). With
/// next_hop both the old and the new next-hop matrices are given.
struct ApspUpdateShape {
  std::int64_t n_old = 0;
  std::int64_t n = 0;
  bool next_hop = false;
};

/// INVALID_ARGUMENT unless 0 <= n_old <= n.
absl::Status validate(const ApspUpdateShape& shape);

/// INVALID_ARGUMENT unless depth is 0, 1 or 2 and next_hop_candidates is within 0..2048.
absl::Status validate(const ApspTuning& tuning);

/// An edge list to be turned into a dense weight matrix: edge e goes src[e] -> dst[e] with
/// weight[e]. Parallel edges keep the minimum weight. Vertices are 0..n-1.
struct EdgeListView {
  std::int64_t n = 0;
  std::int64_t edges = 0;
  const std::int64_t* src = nullptr;
  const std::int64_t* dst = nullptr;
  const double* weight = nullptr;
};

}  // namespace gcompute::kernels
