// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cuda/stream.hpp"

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {

absl::Status StreamView::synchronize() const {
  GC_CUDA_TRY(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::StatusOr<Stream> Stream::create(StreamOptions options) {
  const unsigned int flags = options.non_blocking ? cudaStreamNonBlocking : cudaStreamDefault;
  cudaStream_t stream = nullptr;
  if (options.priority.has_value()) {
    GC_CUDA_TRY(cudaStreamCreateWithPriority(&stream, flags, *options.priority));
  } else {
    GC_CUDA_TRY(cudaStreamCreateWithFlags(&stream, flags));
  }
  return Stream(stream);
}

}  // namespace gcompute::kernels::cuda
