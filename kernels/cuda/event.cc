// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cuda/event.hpp"

#include <utility>

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {

absl::StatusOr<Event> Event::create(EventTiming timing) {
  cudaEvent_t event = nullptr;
  GC_CUDA_TRY(cudaEventCreateWithFlags(
      &event, timing == EventTiming::kEnabled ? cudaEventDefault : cudaEventDisableTiming));
  return Event(event);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) GC_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (event_ != nullptr) GC_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
}

absl::Status Event::record(StreamView stream) const {
  GC_CUDA_TRY(cudaEventRecord(event_, stream.value()));
  return absl::OkStatus();
}

absl::Status Event::synchronize() const {
  GC_CUDA_TRY(cudaEventSynchronize(event_));
  return absl::OkStatus();
}

absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  GC_CUDA_TRY(cudaEventElapsedTime(&ms, start.value(), end.value()));
  return ms;
}

}  // namespace gcompute::kernels::cuda
