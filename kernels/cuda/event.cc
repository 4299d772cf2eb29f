// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cuda/event.hpp"

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {

absl::StatusOr<Event> Event::create(EventTiming timing) {
  cudaEvent_t event = nullptr;
  GC_CUDA_TRY(cudaEventCreateWithFlags(
      &event, timing == EventTiming::kEnabled ? cudaEventDefault : cudaEventDisableTiming));
  return Event(event);
}

absl::Status Event::record(StreamView stream) const {
  GC_CUDA_TRY(cudaEventRecord(event_.value(), stream.value()));
  return absl::OkStatus();
}

absl::Status Event::synchronize() const {
  GC_CUDA_TRY(cudaEventSynchronize(event_.value()));
  return absl::OkStatus();
}

absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  GC_CUDA_TRY(cudaEventElapsedTime(&ms, start.value(), end.value()));
  return ms;
}

}  // namespace gcompute::kernels::cuda
