// SPDX-License-Identifier: Apache-2.0
// Aborts streams that have been idle too long. One thread looks at the registered streams a
// few times per idle period and calls on_idle() of those that saw no activity for the whole
// period; a stream closes its registration before it is deleted, and on_idle() runs under
// the registration's lock, so it never runs for a deleted stream.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace gcompute::server {

class IdleWatch {
 public:
  using Clock = std::chrono::steady_clock;

  /// One watched stream.
  class Registration {
   public:
    /// The stream is active: its idle time starts again.
    void touch() { last_ = Clock::now().time_since_epoch().count(); }
    /// No on_idle() after this returns (it waits for one in progress on another thread).
    void close();

   private:
    friend class IdleWatch;
    std::recursive_mutex mu_;  // on_idle() may finish the stream and so close it, inline
    std::function<bool()> on_idle_;
    std::atomic<Clock::rep> last_{0};
  };

  explicit IdleWatch(absl::Duration idle);
  ~IdleWatch();
  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;

  /// Watches a stream: `on_idle` runs on the watch's thread when the stream saw no touch()
  /// for the idle period, and returns true when it ended the stream (false: the stream is
  /// busy after all, and its period starts again).
  std::shared_ptr<Registration> watch(std::function<bool()> on_idle);

  absl::Duration idle() const { return idle_; }

 private:
  void loop();

  const absl::Duration idle_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<std::shared_ptr<Registration>> watched_;
  std::thread thread_;
};

}  // namespace gcompute::server
