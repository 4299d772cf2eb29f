// SPDX-License-Identifier: Apache-2.0
// A lane: what one request needs to run on a GPU, created once at start-up and reused, like a
// raft::resources handle: a non-blocking stream, the library handles bound to it, and a
// higher-priority stream for kernels that split off a critical path.
// "A stream per request" means a lane per request, never a stream created per request.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <memory>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"

namespace gcompute::server::cuda {

class Lane {
 public:
  static absl::StatusOr<std::unique_ptr<Lane>> create(int device, int index);
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  int device() const { return device_; }
  int index() const { return index_; }
  cudaStream_t stream() const { return stream_; }
  /// Two events for double-buffered staging.
  cudaEvent_t staging_event(int i) const { return staging_[i]; }
  kernels::cuda::Context context() const {
    return kernels::cuda::Context{stream_, cublas_, cusolver_, device_, priority_stream_};
  }

 private:
  Lane(int device, int index) : device_(device), index_(index) {}
  int device_;
  int index_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t priority_stream_ = nullptr;  ///< Context::priority_stream
  cublasHandle_t cublas_ = nullptr;
  cusolverDnHandle_t cusolver_ = nullptr;
  cudaEvent_t staging_[2] = {nullptr, nullptr};
};

}  // namespace gcompute::server::cuda
