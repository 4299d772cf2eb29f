// SPDX-License-Identifier: Apache-2.0
#include "engine/cuda/pinned_pool.hpp"

#include <cuda_runtime_api.h>

#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gcompute::server::cuda {

absl::StatusOr<std::unique_ptr<PinnedPool>> PinnedPool::create(std::uint64_t bytes,
                                                               std::uint64_t max_block) {
  if (bytes < 2 * kMinBlock) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pinned-pool-bytes must be at least ", 2 * kMinBlock, ", got ", bytes));
  }
  max_block = std::bit_floor(std::max(kMinBlock, std::min(max_block, bytes / 2)));
  absl::StatusOr<kernels::cuda::PinnedBuffer> region =
      kernels::cuda::PinnedBuffer::create(bytes, cudaHostAllocPortable);
  if (!region.ok()) return region.status();
  return std::unique_ptr<PinnedPool>(new PinnedPool(*std::move(region), max_block));
}

PinnedPool::PinnedPool(kernels::cuda::PinnedBuffer region, std::uint64_t max_block)
    : region_(std::move(region)),
      base_(region_.data_as<char>()),
      capacity_(region_.size()),
      max_block_(max_block) {
  free_.resize(static_cast<std::size_t>(size_class(max_block)) + 1);
}

int PinnedPool::size_class(std::uint64_t bytes) const {
  const std::uint64_t size = std::bit_ceil(std::max(bytes, kMinBlock));
  return std::countr_zero(size) - std::countr_zero(kMinBlock);
}

PinnedPool::Block PinnedPool::acquire(std::uint64_t bytes) {
  const std::uint64_t want = std::min(bytes, max_block_);
  const int cls = size_class(want);
  const std::uint64_t size = kMinBlock << cls;
  std::unique_lock lock(mu_);
  bool waited = false;
  for (;;) {
    // Reuse a block of this class, or of any larger one.
    for (std::size_t c = static_cast<std::size_t>(cls); c < free_.size(); ++c) {
      if (!free_[c].empty()) {
        char* p = free_[c].back();
        free_[c].pop_back();
        used_ += kMinBlock << c;
        return Block{p, kMinBlock << c};
      }
    }
    if (capacity_ - carved_ >= size) {
      char* p = base_ + carved_;
      carved_ += size;
      used_ += size;
      return Block{p, size};
    }
    if (used_ == 0) {
      // Everything is free but carved into classes too small: start the region afresh.
      for (auto& list : free_) list.clear();
      carved_ = 0;
      continue;
    }
    if (!waited) {
      ++misses_;
      waited = true;
    }
    freed_.wait(lock);
  }
}

void PinnedPool::release(Block block) {
  if (block.ptr == nullptr) return;
  {
    std::lock_guard lock(mu_);
    free_[static_cast<std::size_t>(size_class(block.size))].push_back(block.ptr);
    used_ -= block.size;
  }
  freed_.notify_all();
}

std::uint64_t PinnedPool::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_;
}

std::uint64_t PinnedPool::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

}  // namespace gcompute::server::cuda
