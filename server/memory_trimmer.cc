// SPDX-License-Identifier: Apache-2.0
#include "memory_trimmer.hpp"

#include <malloc.h>

#include <chrono>

namespace gcompute::server {

MemoryTrimmer::MemoryTrimmer(absl::Duration period) {
  if (period <= absl::ZeroDuration()) return;
  thread_ = std::thread([this, wait = absl::ToChronoMilliseconds(period)] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, wait, [this] { return stopping_; })) {
      lock.unlock();
      malloc_trim(0);  // free pages inside the arenas too, not only at their tops
      lock.lock();
    }
  });
}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gcompute::server
