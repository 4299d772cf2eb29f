// SPDX-License-Identifier: Apache-2.0
// CUDA streams as an owner and a view, after RMM's cuda_stream and cuda_stream_view: a Stream
// owns one stream and is move-only ("one stream, one owner"); a StreamView names a stream
// without owning it, is trivially copyable, and is what functions take.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/unique_handle.hpp"

namespace gcompute::kernels::cuda {

/// A non-owning view of a stream. Built only from a cudaStream_t: the literal 0 and nullptr do
/// not convert, so no call ends up on the legacy default stream by a slip. A default-built
/// view is the legacy default stream (what CUDA calls stream 0).
class StreamView {
 public:
  constexpr StreamView() noexcept = default;
  constexpr StreamView(cudaStream_t stream) noexcept : stream_(stream) {}  // NOLINT: implicit
  StreamView(int) = delete;
  StreamView(std::nullptr_t) = delete;

  constexpr cudaStream_t value() const noexcept { return stream_; }
  constexpr operator cudaStream_t() const noexcept { return stream_; }  // NOLINT: implicit
  /// True for the legacy default stream (also what a default-built view holds).
  constexpr bool is_default() const noexcept { return stream_ == nullptr; }

  /// Waits until everything enqueued on the stream so far has finished.
  absl::Status synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

/// How a Stream is created.
struct StreamOptions {
  /// A non-blocking stream does not synchronise with the legacy default stream. Blocking
  /// streams suit code that mixes them with synchronous calls such as cudaMemcpy (tests).
  bool non_blocking = true;
  /// Priority of the stream (lower numbers run first; cudaDeviceGetStreamPriorityRange gives
  /// the range); none: the device's default priority.
  std::optional<int> priority;
};

/// An owned stream on the device that was current when it was created. Destroying it does not
/// wait: work already enqueued still runs, and the stream's resources are released afterwards
/// (cudaStreamDestroy). Default-built and moved-from Streams own nothing.
class Stream {
 public:
  /// RESOURCE_EXHAUSTED or INTERNAL (naming the CUDA error) when the stream cannot be created.
  static absl::StatusOr<Stream> create(StreamOptions options = {});

  Stream() = default;

  StreamView view() const noexcept { return StreamView(stream_.value()); }
  cudaStream_t value() const noexcept { return stream_.value(); }
  explicit operator bool() const noexcept { return static_cast<bool>(stream_); }
  absl::Status synchronize() const { return view().synchronize(); }

 private:
  explicit Stream(cudaStream_t stream) : stream_(stream) {}
  UniqueHandle<cudaStream_t, cudaStreamDestroy> stream_;
};

}  // namespace gcompute::kernels::cuda
