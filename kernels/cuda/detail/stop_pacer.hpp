// SPDX-License-Identifier: Apache-2.0
// Cancellation points for kernels whose host loop enqueues work far ahead of the GPU (Jacobi
// rounds, MatMul panels). Polling the token as the host enqueues would see a cancel only after
// everything already queued had run, so the pacer keeps the queue short: every `per_check`
// steps it waits on an event recorded at the previous check, then polls. The GPU still has the
// steps since that check queued while the host enqueues the next ones (no bubble as long as a
// check's worth of work outlasts enqueuing it), and a cancel stops it within about two checks'
// worth of work.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/check.hpp"
#include "gcompute/kernels/stop_token.hpp"

namespace gcompute::kernels::cuda::detail {

class StopPacer {
 public:
  /// `mark` is an event the caller lends for the call (one of a Context's); with a null event
  /// the pacer only polls, which stops no sooner than the queue drains.
  StopPacer(cudaStream_t stream, cudaEvent_t mark, std::int64_t per_check, const StopToken& stop)
      : stream_(stream), mark_(mark), per_check_(per_check < 1 ? 1 : per_check), stop_(stop) {}

  /// Call after enqueuing each step. True once the token asks to stop; the stream has then
  /// drained, so the caller's buffers are free when it returns CANCELLED.
  absl::StatusOr<bool> stop_after_step() {
    if (++steps_ % per_check_ != 0) return false;
    if (pending_) GC_CUDA_TRY(cudaEventSynchronize(mark_));
    pending_ = false;
    if (stop_.stop_requested()) {
      GC_CUDA_TRY(cudaStreamSynchronize(stream_));
      return true;
    }
    if (mark_ != nullptr) {
      GC_CUDA_TRY(cudaEventRecord(mark_, stream_));
      pending_ = true;
    }
    return false;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t mark_;
  std::int64_t per_check_;
  StopToken stop_;
  std::int64_t steps_ = 0;
  bool pending_ = false;  ///< mark_ was recorded at the previous check
};

}  // namespace gcompute::kernels::cuda::detail
