// SPDX-License-Identifier: Apache-2.0
// What kernels need from their caller on one device, as owners (raft::resources): a stream,
// an optional second stream of the device's greatest priority, cuBLAS and cuSOLVER handles
// bound to the stream, and the events kernels borrow for one call. Created once and reused
// (the server's lanes hold one each; tests and benchmarks make their own); context() is the
// non-owning view kernels take. Kernels never create any of these themselves.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <array>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/context.hpp"
#include "gcompute/kernels/cuda/event.hpp"
#include "gcompute/kernels/cuda/stream.hpp"
#include "gcompute/kernels/cuda/unique_handle.hpp"

namespace gcompute::kernels::cuda {

/// An owned cuBLAS handle (cublasCreate / cublasDestroy), move-only.
using CublasHandle = UniqueHandle<cublasHandle_t, cublasDestroy>;
/// An owned cuSOLVER dense handle (cusolverDnCreate / cusolverDnDestroy), move-only.
using CusolverHandle = UniqueHandle<cusolverDnHandle_t, cusolverDnDestroy>;

/// Which of the resources to create.
struct ResourcesOptions {
  /// Non-blocking streams (the server's); blocking ones for callers that mix in synchronous
  /// legacy-stream calls such as cudaMemcpy and cudaMemset (tests).
  bool non_blocking = true;
  /// Context::priority_stream, at the device's greatest priority.
  bool priority_stream = true;
  bool cublas = true;
  bool cusolver = true;
};

/// The owned resources behind a Context, on one device. Move-only; destroying it releases the
/// handles before the streams they are bound to. Not thread-safe: one caller at a time.
class Resources {
 public:
  /// Makes `device` current and creates the resources there; the first failure is returned
  /// (RESOURCE_EXHAUSTED or INTERNAL) and whatever was created is released.
  static absl::StatusOr<Resources> create(int device, ResourcesOptions options = {});

  Resources() = default;

  int device() const noexcept { return device_; }
  StreamView stream() const noexcept { return stream_.view(); }
  /// The view kernels take: the streams, the handles and the events.
  Context context() const noexcept;

 private:
  int device_ = 0;
  Stream stream_;
  Stream priority_stream_;
  CublasHandle cublas_;
  CusolverHandle cusolver_;
  std::array<Event, kContextEvents> events_;
};

}  // namespace gcompute::kernels::cuda
