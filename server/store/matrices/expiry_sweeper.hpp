// SPDX-License-Identifier: Apache-2.0
// Frees expired server-resident matrices on a timer. Without it an expired matrix (host or GPU
// memory) would stay allocated until the next reservation happened to evict it.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/time/time.h"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server {

class ExpirySweeper {
 public:
  /// Every `interval`, evicts the store's expired entries and, when any went, calls
  /// `on_evicted` (the server updates its stored-bytes gauge there); then calls `each_interval`
  /// (other expiries that share the timer: idle shared-memory regions).
  ExpirySweeper(MatrixStore& store, absl::Duration interval, std::function<void()> on_evicted,
                std::function<void()> each_interval = {});
  /// Stops the timer thread and waits for it.
  ~ExpirySweeper();
  ExpirySweeper(const ExpirySweeper&) = delete;
  ExpirySweeper& operator=(const ExpirySweeper&) = delete;

 private:
  void run();

  MatrixStore& store_;
  const absl::Duration interval_;
  const std::function<void()> on_evicted_;
  const std::function<void()> each_interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gcompute::server
