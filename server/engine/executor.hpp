// SPDX-License-Identifier: Apache-2.0
// A small pool of threads with a bounded queue, for work that must not run on gRPC's callback
// threads but is not compute either: graph store changes (a log append and fsync each), store
// reads that copy whole graphs. Compute goes through the Engine.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"

namespace gcompute::server {

class Executor {
 public:
  /// `threads` workers; at most `queue_depth` tasks wait beyond those running. `name` appears
  /// in the RESOURCE_EXHAUSTED message.
  Executor(std::string name, int threads, int queue_depth);
  /// Runs what is queued, then joins the threads.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Queues `task`; RESOURCE_EXHAUSTED (task not queued) when the queue is full.
  absl::Status post(absl::AnyInvocable<void()> task);

 private:
  void loop();

  const std::string name_;
  const std::size_t queue_depth_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gcompute::server
