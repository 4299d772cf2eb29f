// SPDX-License-Identifier: Apache-2.0
// Device and pinned host memory as move-only owners, after RMM's cuda_async_memory_resource,
// device_buffer, device_uvector and pinned_host_memory_resource.
//
// Device memory comes from a stream-ordered pool (cudaMallocFromPoolAsync): an allocation is
// ordered on a stream and usable by the work enqueued there after it; the free is ordered on
// the stream where the memory was last used (DeviceBuffer::set_stream), so it happens after
// that work without a synchronisation. Work on any other stream must be ordered before the
// free by its owner (an event the last-use stream waits on, or a synchronisation). The memory
// resource is passed explicitly to whoever allocates; nothing here has global state.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gcompute/kernels/cuda/stream.hpp"

namespace gcompute::kernels::cuda {

/// A device's stream-ordered memory pool (a non-owning handle: the pool belongs to the driver
/// and lives as long as the device's context). Cheap to copy; default-built: no pool.
class MemoryResource {
 public:
  /// The default pool of `device`, with its release threshold raised to the maximum so that
  /// memory freed to it stays reserved for the next allocation instead of going back to the
  /// driver at every synchronisation (RMM's cuda_async_memory_resource does the same).
  static absl::StatusOr<MemoryResource> device_default(int device);

  MemoryResource() = default;
  MemoryResource(cudaMemPool_t pool, int device) : pool_(pool), device_(device) {}

  cudaMemPool_t pool() const { return pool_; }
  int device() const { return device_; }
  /// Bytes currently allocated from the pool (cudaMemPoolAttrUsedMemCurrent); 0 if the query
  /// fails (statistics only).
  std::uint64_t used_bytes() const noexcept;

 private:
  cudaMemPool_t pool_ = nullptr;
  int device_ = 0;
};

/// Uninitialised device memory from a MemoryResource (rmm::device_buffer). Remembers its pool
/// and the stream it is freed on. Default-built, zero-byte and moved-from buffers own nothing.
class DeviceBuffer {
 public:
  /// `bytes` of uninitialised memory from `memory`'s pool, ordered on `stream`. Zero bytes give
  /// an empty buffer. RESOURCE_EXHAUSTED when the pool cannot supply them, FAILED_PRECONDITION
  /// without a pool, INTERNAL for other CUDA errors; the messages name the size and device.
  static absl::StatusOr<DeviceBuffer> create(std::size_t bytes, StreamView stream,
                                             const MemoryResource& memory);

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// Frees on stream() (see reset).
  ~DeviceBuffer() { reset(); }

  void* data() noexcept { return ptr_; }
  const void* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return bytes_; }
  bool empty() const noexcept { return bytes_ == 0; }
  const MemoryResource& memory_resource() const noexcept { return memory_; }

  /// The stream the free will be ordered on: the allocation's, until set_stream.
  StreamView stream() const noexcept { return stream_; }
  /// Declares `stream` the last one to use the memory: the free is ordered on it.
  void set_stream(StreamView stream) noexcept { stream_ = stream; }

  /// Frees the memory now, ordered on stream() (cudaFreeAsync; a failure is dropped, see
  /// drop_error); the buffer becomes empty.
  void reset() noexcept;

 private:
  DeviceBuffer(void* ptr, std::size_t bytes, StreamView stream, const MemoryResource& memory)
      : ptr_(ptr), bytes_(bytes), stream_(stream), memory_(memory) {}

  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  StreamView stream_;
  MemoryResource memory_;
};

/// A DeviceBuffer of `size()` uninitialised elements of T (rmm::device_uvector): for trivially
/// copyable T only, since no constructor or destructor ever runs on the device memory.
template <typename T>
class DeviceArray {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceArray holds trivially copyable types");

 public:
  /// `count` elements; INVALID_ARGUMENT if count * sizeof(T) overflows, else as
  /// DeviceBuffer::create.
  static absl::StatusOr<DeviceArray> create(std::size_t count, StreamView stream,
                                            const MemoryResource& memory) {
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
      return absl::InvalidArgumentError(
          absl::StrCat("DeviceArray: ", count, " elements of ", sizeof(T), " bytes overflow"));
    }
    absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::create(count * sizeof(T), stream, memory);
    if (!buffer.ok()) return buffer.status();
    return DeviceArray(*std::move(buffer), count);
  }

  DeviceArray() = default;

  T* data() noexcept { return static_cast<T*>(buffer_.data()); }
  const T* data() const noexcept { return static_cast<const T*>(buffer_.data()); }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return buffer_.size(); }
  bool empty() const noexcept { return size_ == 0; }
  StreamView stream() const noexcept { return buffer_.stream(); }
  void set_stream(StreamView stream) noexcept { buffer_.set_stream(stream); }
  void reset() noexcept {
    buffer_.reset();
    size_ = 0;
  }

 private:
  DeviceArray(DeviceBuffer buffer, std::size_t size) : buffer_(std::move(buffer)), size_(size) {}
  DeviceBuffer buffer_;
  std::size_t size_ = 0;
};

/// Page-locked host memory (cudaHostAlloc, freed with cudaFreeHost): reachable by the device,
/// the staging memory of asynchronous copies. Default-built, zero-byte and moved-from buffers
/// own nothing.
class PinnedBuffer {
 public:
  /// `bytes` with cudaHostAlloc `flags` (e.g. cudaHostAllocPortable: usable from every
  /// device). RESOURCE_EXHAUSTED when the host cannot pin them, INTERNAL for other errors.
  static absl::StatusOr<PinnedBuffer> create(std::size_t bytes,
                                             unsigned int flags = cudaHostAllocDefault);

  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { reset(); }

  void* data() noexcept { return ptr_; }
  const void* data() const noexcept { return ptr_; }
  template <typename T>
  T* data_as() noexcept {
    return static_cast<T*>(ptr_);
  }
  template <typename T>
  const T* data_as() const noexcept {
    return static_cast<const T*>(ptr_);
  }
  std::size_t size() const noexcept { return bytes_; }

  /// Frees the memory (cudaFreeHost; a failure is dropped, see drop_error).
  void reset() noexcept;

 private:
  PinnedBuffer(void* ptr, std::size_t bytes) : ptr_(ptr), bytes_(bytes) {}
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace gcompute::kernels::cuda
