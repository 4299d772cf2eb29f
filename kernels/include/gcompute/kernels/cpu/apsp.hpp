// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cpu {

/// Blocked, multithreaded Floyd-Warshall. `next` may be null unless shape.next_hop.
/// `threads` = 0 uses every hardware thread. Returns CANCELLED if `stop` fires between rounds.
absl::StatusOr<ApspInfo> apsp(const void* weights, void* dist, std::int32_t* next,
                              const ApspShape& shape, StopToken stop = {}, int threads = 0);

/// Fills `weights` (n x n of shape.dtype) from an edge list: no-edge everywhere, then the
/// minimum weight of each (src, dst). INVALID_ARGUMENT names the first edge whose endpoint is
/// outside 0..n-1, or whose weight is NaN or (for i32) not an integer within range.
absl::Status edge_list_to_dense(const EdgeListView& edges, DType dtype, void* weights);

}  // namespace gcompute::kernels::cpu
