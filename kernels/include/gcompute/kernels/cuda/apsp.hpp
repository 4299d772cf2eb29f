// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cuda {

/// Device scratch memory apsp needs for this shape (padding to the tile size, flags).
std::size_t apsp_workspace_bytes(const ApspShape& shape);

/// Blocked Floyd-Warshall on the GPU; same contract as cpu::apsp. weights, dist, next and
/// workspace are device pointers (next may be null unless shape.next_hop); nothing is
/// allocated. Runs on ctx.stream, with the next round's pivot work on ctx.priority_stream when
/// there is one, and borrows ctx.events (FAILED_PRECONDITION when they are null). Checks `stop`
/// between rounds and has finished when it returns.
absl::StatusOr<ApspInfo> apsp(const Context& ctx, const void* weights, void* dist,
                              std::int32_t* next, const ApspShape& shape, void* workspace,
                              std::size_t workspace_bytes, StopToken stop = {},
                              const ApspTuning& tuning = {});

/// Device scratch memory apsp_add_edges needs for this shape and these edges.
std::size_t apsp_add_edges_workspace_bytes(const ApspUpdateShape& shape,
                                           std::span<const GraphEdge> edges);

/// cpu::apsp_add_edges on the GPU. Distances only: the batch at once. The distances among the
/// batch's endpoints S are closed first (old distances plus the new edges, by apsp on |S|
/// vertices), then every pair takes D[i][j] = min(D[i][j], min over tails t and heads h of
/// D[i][t] + C[t][h] + D[h][j]), one pass over the matrix of depth |heads|: the per-edge
/// update's distances (bit for bit where sums are exact). With next hops: one O(n^2) pass per
/// edge, exactly the per-edge update, so next hops equal the CPU's. A negative cycle through
/// the new edges is reported with cycle_vertex on it (dist and next are then unspecified).
/// dist_old, next_old, dist, next and workspace are device memory; `edges` is host memory (src/dst
/// are rows < shape.n). Runs on ctx.stream (borrowing ctx.events for the closure) and has finished
/// when it returns.
absl::StatusOr<ApspInfo> apsp_add_edges(const Context& ctx, const float* dist_old,
                                        const std::int32_t* next_old, float* dist,
                                        std::int32_t* next, const ApspUpdateShape& shape,
                                        std::span<const GraphEdge> edges, void* workspace,
                                        std::size_t workspace_bytes);

}  // namespace gcompute::kernels::cuda
