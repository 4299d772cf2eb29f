// SPDX-License-Identifier: Apache-2.0
// Pipelined host <-> device copies through pinned staging blocks: the host copy of one piece
// overlaps the DMA of the other. Synchronous: both have finished when they return.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "common/byte_pieces.hpp"
#include "engine/cuda/lane.hpp"
#include "engine/cuda/pinned_pool.hpp"
#include "gcompute/kernels/cuda/stream.hpp"

namespace gcompute::server::cuda {

/// Copies `bytes` from host `src` to device `dst` on `stream`, alternating between `events`
/// (the caller's; one copy at a time per pair).
absl::Status copy_to_device(PinnedPool& pool, kernels::cuda::StreamView stream,
                            const StagingEvents& events, void* dst, const char* src,
                            std::uint64_t bytes);
/// The same for bytes in pieces (their total is `bytes`): each is copied once, into staging.
absl::Status copy_to_device(PinnedPool& pool, kernels::cuda::StreamView stream,
                            const StagingEvents& events, void* dst, BytePieces src,
                            std::uint64_t bytes);
/// Work queued on the stream before a copy, which the caller times apart from the copy: `done`
/// is recorded after it, and `finished` runs once it has finished, before the copy is waited for.
struct QueuedBefore {
  cudaEvent_t done = nullptr;
  std::function<void()> finished;
};

/// Copies `bytes` from device `src` to host `dst` on `stream`, alternating between `events`.
/// With `before`, the copy is queued behind that work without waiting for it first.
absl::Status copy_to_host(PinnedPool& pool, kernels::cuda::StreamView stream,
                          const StagingEvents& events, char* dst, const void* src,
                          std::uint64_t bytes, const QueuedBefore* before = nullptr);

}  // namespace gcompute::server::cuda
