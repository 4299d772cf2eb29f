// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/lane.hpp"

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::server::cuda {

absl::StatusOr<std::unique_ptr<Lane>> Lane::create(int device, int index) {
  std::unique_ptr<Lane> lane(new Lane(device, index));
  GC_CUDA_TRY(cudaSetDevice(device));
  GC_CUDA_TRY(cudaStreamCreateWithFlags(&lane->stream_, cudaStreamNonBlocking));
  int least = 0, greatest = 0;
  GC_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  GC_CUDA_TRY(
      cudaStreamCreateWithPriority(&lane->priority_stream_, cudaStreamNonBlocking, greatest));
  for (auto& e : lane->staging_) GC_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  GC_CUBLAS_TRY(cublasCreate(&lane->cublas_));
  GC_CUBLAS_TRY(cublasSetStream(lane->cublas_, lane->stream_));
  GC_CUSOLVER_TRY(cusolverDnCreate(&lane->cusolver_));
  GC_CUSOLVER_TRY(cusolverDnSetStream(lane->cusolver_, lane->stream_));
  return lane;
}

Lane::~Lane() {
  // Destruction happens at shutdown; errors here cannot be acted on.
  cudaSetDevice(device_);
  if (cusolver_ != nullptr) cusolverDnDestroy(cusolver_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  for (auto& e : staging_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  if (priority_stream_ != nullptr) cudaStreamDestroy(priority_stream_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

}  // namespace gcompute::server::cuda
