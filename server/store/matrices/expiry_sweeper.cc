// SPDX-License-Identifier: Apache-2.0
#include "store/matrices/expiry_sweeper.hpp"

namespace gcompute::server {

ExpirySweeper::ExpirySweeper(MatrixStore& store, absl::Duration interval,
                             std::function<void()> on_evicted, std::function<void()> each_interval)
    : store_(store),
      interval_(interval),
      on_evicted_(std::move(on_evicted)),
      each_interval_(std::move(each_interval)) {
  thread_ = std::thread([this] { run(); });
}

ExpirySweeper::~ExpirySweeper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void ExpirySweeper::run() {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, absl::ToChronoNanoseconds(interval_), [this] { return stop_; })) {
    lock.unlock();
    if (store_.evict_expired() > 0 && on_evicted_) on_evicted_();
    if (each_interval_) each_interval_();
    lock.lock();
  }
}

}  // namespace gcompute::server
