// SPDX-License-Identifier: Apache-2.0
// Host buffers for the chunks that downloads of device-resident matrices send. A buffer comes
// back when gRPC lets go of the slice that refers to it and stays faulted in for the next
// download: a fresh 4 MiB buffer per chunk would cost a thousand page faults each time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace gcompute::server {

class ChunkBufferPool : public std::enable_shared_from_this<ChunkBufferPool> {
 public:
  /// Chunks up to this size (the default chunk) share pooled buffers; a client asking for
  /// larger chunks gets buffers of their own.
  static constexpr std::uint64_t kPooledBytes = 4ull << 20;
  /// Idle buffers kept at most (64 MiB).
  static constexpr std::size_t kMaxIdle = 16;

  struct Buffer {
    char* data = nullptr;
    std::uint64_t capacity = 0;
  };

  /// A buffer of at least `bytes`; hand it back through returner().
  Buffer take(std::uint64_t bytes) {
    if (bytes <= kPooledBytes) {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        char* data = idle_.back().release();
        idle_.pop_back();
        return {data, kPooledBytes};
      }
    }
    const std::uint64_t capacity = bytes <= kPooledBytes ? kPooledBytes : bytes;
    return {std::make_unique_for_overwrite<char[]>(capacity).release(), capacity};
  }

  /// Gives `buffer` back when called (once): kept if pooled and room is left, else freed.
  std::function<void()> returner(Buffer buffer) {
    return [self = shared_from_this(), buffer] {
      std::unique_ptr<char[]> owned(buffer.data);
      if (buffer.capacity != kPooledBytes) return;
      std::lock_guard lock(self->mu_);
      if (self->idle_.size() < kMaxIdle) self->idle_.push_back(std::move(owned));
    };
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<char[]>> idle_;
};

}  // namespace gcompute::server
