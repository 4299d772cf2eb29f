// SPDX-License-Identifier: Apache-2.0
#include "engine/executor.hpp"

#include "absl/strings/str_cat.h"

namespace gcompute::server {

Executor::Executor(std::string name, int threads, int queue_depth)
    : name_(std::move(name)), queue_depth_(static_cast<std::size_t>(std::max(queue_depth, 1))) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { loop(); });
}

Executor::~Executor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

absl::Status Executor::post(absl::AnyInvocable<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= queue_depth_) {
      return absl::ResourceExhaustedError(
          absl::StrCat(name_, " queue full: ", queue_.size(), " requests waiting; retry later"));
    }
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return absl::OkStatus();
}

void Executor::loop() {
  for (;;) {
    absl::AnyInvocable<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace gcompute::server
