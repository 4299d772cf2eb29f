// SPDX-License-Identifier: Apache-2.0
// An owned CUDA event (move-only): a marker recorded on a stream that other streams and the
// host can wait on, and, with timing, the two ends of a measured interval.
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/stream.hpp"
#include "gcompute/kernels/cuda/unique_handle.hpp"

namespace gcompute::kernels::cuda {

/// Whether an event records a timestamp. Without one it is cheaper to record and to wait on.
enum class EventTiming { kDisabled, kEnabled };

/// An event on the device that was current when it was created. Default-built and moved-from
/// Events own nothing.
class Event {
 public:
  /// RESOURCE_EXHAUSTED or INTERNAL (naming the CUDA error) when the event cannot be created.
  static absl::StatusOr<Event> create(EventTiming timing = EventTiming::kDisabled);

  Event() = default;

  cudaEvent_t value() const noexcept { return event_.value(); }
  explicit operator bool() const noexcept { return static_cast<bool>(event_); }

  /// Captures the work enqueued on `stream` so far.
  absl::Status record(StreamView stream) const;
  /// Waits on the host until the captured work has finished.
  absl::Status synchronize() const;

 private:
  explicit Event(cudaEvent_t event) : event_(event) {}
  UniqueHandle<cudaEvent_t, cudaEventDestroy> event_;
};

/// Milliseconds from `start` to `end`: both created with EventTiming::kEnabled, recorded, and
/// `end` completed (cudaEventElapsedTime).
absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end);

}  // namespace gcompute::kernels::cuda
