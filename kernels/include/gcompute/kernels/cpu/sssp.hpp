// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/sssp_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cpu {

/// Shortest paths from `source` over `graph` (host memory) into dist[n] and parent[n], with the
/// contract of SsspInfo. Dijkstra with a binary heap when no weight is negative; otherwise a
/// FIFO label-correcting Bellman-Ford (SPFA) that counts the edges of each distance's path: one
/// of n edges or more means a negative cycle, which is then located as a cycle of the parent
/// pointers. INVALID_ARGUMENT as validate_sssp; CANCELLED if `stop` fires (polled every few
/// thousand scanned vertices). Single-threaded.
absl::StatusOr<SsspInfo> sssp(const CsrView& graph, std::int64_t source, float* dist,
                              std::int32_t* parent, StopToken stop = {});

}  // namespace gcompute::kernels::cpu
