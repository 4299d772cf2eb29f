// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cuda/memory.hpp"

#include <limits>
#include <string>
#include <utility>

#include "gcompute/kernels/cuda/check.hpp"

namespace gcompute::kernels::cuda {

absl::StatusOr<MemoryResource> MemoryResource::device_default(int device) {
  cudaMemPool_t pool = nullptr;
  GC_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
  GC_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  return MemoryResource(pool, device);
}

std::uint64_t MemoryResource::used_bytes() const noexcept {
  std::uint64_t used = 0;
  if (pool_ == nullptr) return 0;
  const cudaError_t err = cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used);
  if (err != cudaSuccess) {
    drop_error(err);
    return 0;
  }
  return used;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::create(std::size_t bytes, StreamView stream,
                                                  const MemoryResource& memory) {
  if (bytes == 0) return DeviceBuffer(nullptr, 0, stream, memory);
  if (memory.pool() == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("DeviceBuffer: no memory pool to allocate ", bytes, " bytes from"));
  }
  void* ptr = nullptr;
  const cudaError_t err = cudaMallocFromPoolAsync(&ptr, bytes, memory.pool(), stream.value());
  if (err != cudaSuccess) {
    // The failure is reported here; it must not resurface at the next launch check.
    static_cast<void>(cudaGetLastError());
    const std::string call =
        absl::StrCat("cudaMallocFromPoolAsync of ", bytes, " bytes on GPU ", memory.device());
    return cuda_status(err, call.c_str(), __FILE__, __LINE__);
  }
  return DeviceBuffer(ptr, bytes, stream, memory);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      stream_(other.stream_),
      memory_(other.memory_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = other.stream_;
    memory_ = other.memory_;
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != nullptr) GC_CUDA_TRY_NO_THROW(cudaFreeAsync(ptr_, stream_.value()));
  ptr_ = nullptr;
  bytes_ = 0;
}

absl::StatusOr<PinnedBuffer> PinnedBuffer::create(std::size_t bytes, unsigned int flags) {
  if (bytes == 0) return PinnedBuffer();
  void* ptr = nullptr;
  const cudaError_t err = cudaHostAlloc(&ptr, bytes, flags);
  if (err != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    const std::string call = absl::StrCat("cudaHostAlloc of ", bytes, " pinned bytes");
    return cuda_status(err, call.c_str(), __FILE__, __LINE__);
  }
  return PinnedBuffer(ptr, bytes);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::reset() noexcept {
  if (ptr_ != nullptr) GC_CUDA_TRY_NO_THROW(cudaFreeHost(ptr_));
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace gcompute::kernels::cuda
