// SPDX-License-Identifier: Apache-2.0
// Pinned (page-locked) host staging memory: one cudaHostAlloc region, created at start-up,
// handed out in power-of-two size classes and reused across requests. Transfers stream
// through at most two blocks per lane, so a request of any size needs bounded pinned memory.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "gcompute/kernels/cuda/memory.hpp"

namespace gcompute::server::cuda {

class PinnedPool {
 public:
  static constexpr std::uint64_t kMinBlock = 64ull << 10;

  /// Allocates the region (portable across devices). `max_block` is the largest block handed
  /// out (a power of two <= bytes / 2).
  static absl::StatusOr<std::unique_ptr<PinnedPool>> create(std::uint64_t bytes,
                                                            std::uint64_t max_block);

  struct Block {
    char* ptr = nullptr;
    std::uint64_t size = 0;
  };
  /// A block of at least min(bytes, max_block()) bytes. Waits when none is free (counted as
  /// a miss): blocks are held only for the length of one transfer.
  Block acquire(std::uint64_t bytes);
  void release(Block block);

  std::uint64_t max_block() const { return max_block_; }
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t used_bytes() const;
  std::uint64_t misses() const;

 private:
  PinnedPool(kernels::cuda::PinnedBuffer region, std::uint64_t max_block);
  int size_class(std::uint64_t bytes) const;

  kernels::cuda::PinnedBuffer region_;
  char* base_;
  std::uint64_t capacity_;
  std::uint64_t max_block_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::vector<char*>> free_;  ///< per size class
  std::uint64_t carved_ = 0;              ///< bytes of the region handed to classes so far
  std::uint64_t used_ = 0;
  std::uint64_t misses_ = 0;
};

}  // namespace gcompute::server::cuda
