// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cuda/resources.hpp"

#include <optional>
#include <utility>

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {

absl::StatusOr<Resources> Resources::create(int device, ResourcesOptions options) {
  GC_CUDA_TRY(cudaSetDevice(device));
  Resources r;
  r.device_ = device;
  absl::StatusOr<Stream> stream = Stream::create({options.non_blocking, std::nullopt});
  if (!stream.ok()) return stream.status();
  r.stream_ = *std::move(stream);
  if (options.priority_stream) {
    int least = 0, greatest = 0;
    GC_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    absl::StatusOr<Stream> priority = Stream::create({options.non_blocking, greatest});
    if (!priority.ok()) return priority.status();
    r.priority_stream_ = *std::move(priority);
  }
  for (Event& e : r.events_) {
    absl::StatusOr<Event> event = Event::create(EventTiming::kDisabled);
    if (!event.ok()) return event.status();
    e = *std::move(event);
  }
  if (options.cublas) {
    cublasHandle_t cublas = nullptr;
    GC_CUBLAS_TRY(cublasCreate(&cublas));
    r.cublas_ = CublasHandle(cublas);
    GC_CUBLAS_TRY(cublasSetStream(r.cublas_.value(), r.stream_.value()));
  }
  if (options.cusolver) {
    cusolverDnHandle_t cusolver = nullptr;
    GC_CUSOLVER_TRY(cusolverDnCreate(&cusolver));
    r.cusolver_ = CusolverHandle(cusolver);
    GC_CUSOLVER_TRY(cusolverDnSetStream(r.cusolver_.value(), r.stream_.value()));
  }
  return r;
}

Context Resources::context() const noexcept {
  Context c;
  c.stream = stream_.view();
  c.cublas = cublas_.value();
  c.cusolver = cusolver_.value();
  c.device = device_;
  c.priority_stream = priority_stream_.view();
  for (std::size_t i = 0; i < events_.size(); ++i) c.events[i] = events_[i].value();
  return c;
}

}  // namespace gcompute::kernels::cuda
