// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/sssp_types.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cuda {

/// Device scratch memory sssp needs for a graph of n vertices and m edges (24 n bytes and a
/// few hundred more; m does not change it today). 0 for n <= 0.
std::size_t sssp_workspace_bytes(std::int64_t n, std::int64_t m);

/// Shortest paths from `source` with the contract of cpu::sssp (SsspInfo), on device memory:
/// the CSR arrays of `graph`, dist[n], parent[n] and the workspace are device pointers; nothing
/// is allocated. The arrays are validated on the device first (INVALID_ARGUMENT worded as
/// validate_sssp words it). Then a frontier Bellman-Ford: a warp per frontier vertex relaxes
/// its out-edges, a vertex whose distance strictly shrank joins the next frontier once, and
/// the frontier's size is read back once per round. Negative cycles are searched for as cycles
/// of the parent pointers after rounds 8, 16, 32, ... (and after every round past n, when one
/// must exist). Runs on ctx.stream, checks `stop` between rounds (CANCELLED) and has finished
/// when it returns.
absl::StatusOr<SsspInfo> sssp(const Context& ctx, const CsrView& graph, std::int64_t source,
                              float* dist, std::int32_t* parent, void* workspace,
                              std::size_t workspace_bytes, StopToken stop = {});

}  // namespace gcompute::kernels::cuda
