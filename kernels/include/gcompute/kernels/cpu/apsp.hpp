// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cpu {

/// Blocked, multithreaded Floyd-Warshall. `next` may be null unless shape.next_hop.
/// `threads` = 0 uses every hardware thread. Returns CANCELLED if `stop` fires between rounds.
/// i32 runs in saturating i32 arithmetic when i32_apsp_fits(weights, n), and otherwise
/// through apsp_i32_wide; either way the distances are exact or ApspInfo::out_of_range says
/// which pair left the i32 range.
absl::StatusOr<ApspInfo> apsp(const void* weights, void* dist, std::int32_t* next,
                              const ApspShape& shape, StopToken stop = {}, int threads = 0);

/// True when no i32 distance over `weights` (n x n, finite |w| <= kI32MaxAbsWeight, as apsp
/// validates) can leave [kI32MinDistance, kI32MaxDistance]:
///   (n - 1) * max{|W[i][j]| : i != j, W[i][j] != kI32NoEdge} <= kI32MaxDistance.
/// Then i32 Floyd-Warshall with sums saturating at +-kI32NoEdge is exact and its negative-cycle
/// test is exact (proof in apsp.cc). Reads W once (n^2); true for n <= 1.
bool i32_apsp_fits(const std::int32_t* weights, std::int64_t n);

/// i32 APSP with int64 sums, for inputs where i32_apsp_fits is false: the same blocked order,
/// next-hop rule and negative-cycle test as apsp, exact for every valid i32 input; distances
/// outside the i32 range are reported in ApspInfo (out_of_range, range_row/col/value).
/// shape.dtype must be kI32. Allocates 8 n^2 bytes besides what apsp uses.
absl::StatusOr<ApspInfo> apsp_i32_wide(const std::int32_t* weights, std::int32_t* dist,
                                       std::int32_t* next, const ApspShape& shape,
                                       StopToken stop = {}, int threads = 0);

/// Fills `weights` (n x n of shape.dtype) from an edge list: no-edge everywhere, then the
/// minimum weight of each (src, dst). INVALID_ARGUMENT names the first edge whose endpoint is
/// outside 0..n-1, or whose weight is NaN or (for i32) not an integer within range.
absl::Status edge_list_to_dense(const EdgeListView& edges, DType dtype, void* weights);

/// Brings an f32 APSP result up to date (ApspUpdateShape): copies dist_old/next_old (n_old^2)
/// into dist/next (n^2) with the new vertices isolated, then inserts each edge (src -> dst rows,
/// weight) in order by the O(n^2) update
///   D[i][j] = min(D[i][j], D[i][src] + weight + D[dst][j]),
/// next hops following the distances (next[i][j] = next[i][src], or dst when i = src, where
/// D[i][j] strictly improves). Stops at the first edge that closes a negative cycle
/// (D[dst][src] + weight < 0): ApspInfo::negative_cycle, cycle_vertex = that edge's src (dist
/// and next are then unspecified).
/// next_old and next may be null unless shape.next_hop.
absl::StatusOr<ApspInfo> apsp_add_edges(const float* dist_old, const std::int32_t* next_old,
                                        float* dist, std::int32_t* next,
                                        const ApspUpdateShape& shape,
                                        std::span<const GraphEdge> edges);

}  // namespace gcompute::kernels::cpu
