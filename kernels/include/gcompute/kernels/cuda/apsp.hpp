// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/cuda/context.hpp"
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

}  // namespace gcompute::kernels::cuda
