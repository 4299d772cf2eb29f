// SPDX-License-Identifier: Apache-2.0
// The engine: a bounded queue in front of a backend's workers. Handlers submit tasks; a
// worker runs each one exactly once, passing OK, or the reason it may not start (deadline
// passed or call cancelled while queued). The task owns completing its RPC. The queue serves
// HIGH before NORMAL and takes turns between tenants (fair_queue.hpp).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/backend.hpp"

namespace gcompute::server {

struct EngineOptions {
  /// Tasks waiting beyond those running; past it submit() is RESOURCE_EXHAUSTED.
  int queue_depth = 64;
  /// Called with (queued, running) whenever either changes (for gauges).
  std::function<void(int queued, int running)> on_load_change;
  /// Called with the method and the seconds a task waited before it started.
  std::function<void(const std::string& method, double seconds)> on_queue_time;
};

class Engine {
 public:
  /// Runs on a worker thread (or the submitting one: Dispatch). `start` is OK when the task
  /// should do its work now.
  using Task = absl::AnyInvocable<void(absl::Status start)>;

  /// Whether --queue-depth bounds a submission. Jobs (ops::JobManager) are bounded by their
  /// own per-tenant limit instead, so that a backlog waits here rather than being refused.
  enum class Admission { kBounded, kUnbounded };

  /// Where a task runs. kInlineIfIdle: on the submitting thread when nothing is queued and a
  /// worker is free (a tiny operation then skips the hand-off to a worker and back, which cost
  /// more than its work: docs/performance.md, "Where a small call's time goes"), else queued.
  enum class Dispatch { kQueued, kInlineIfIdle };

  Engine(std::unique_ptr<Backend> backend, EngineOptions options);
  ~Engine();  ///< drains (waits for queued and running tasks)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Queues `task` (or, with kInlineIfIdle on an idle engine, runs it before returning). On
  /// error the task is not queued and the caller completes its RPC:
  /// UNAVAILABLE while draining, DEADLINE_EXCEEDED if ctx's deadline passed,
  /// CANCELLED if it was cancelled, RESOURCE_EXHAUSTED if the queue is full (kBounded only).
  /// Its place in the queue follows ctx->priority and ctx->tenant.
  absl::Status submit(const std::string& method, std::shared_ptr<JobContext> ctx, Task task,
                      Admission admission = Admission::kBounded,
                      Dispatch dispatch = Dispatch::kQueued);

  /// Stops accepting work and waits until every queued and running task has finished, or
  /// until `deadline`; true when idle.
  bool drain(absl::Time deadline = absl::InfiniteFuture());

  /// Marks every queued and running job shut down and cancelled: running kernels stop at
  /// their next cancellation point, queued tasks start with CANCELLED.
  void cancel_all();

  Backend& backend() { return *backend_; }
  int queue_depth_limit() const { return options_.queue_depth; }

 private:
  struct Item {
    std::string method;
    std::shared_ptr<JobContext> ctx;
    Task task;
    std::chrono::steady_clock::time_point enqueued;
  };
  void worker_loop();
  /// Runs an item already counted as running (start status, task, bookkeeping after it).
  void run_item(Item& item);
  void report_load_locked();

  std::unique_ptr<Backend> backend_;
  EngineOptions options_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  FairQueue<Item> queue_;
  int running_ = 0;
  std::set<std::shared_ptr<JobContext>> running_jobs_;
  bool draining_ = false;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gcompute::server
