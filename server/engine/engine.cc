// SPDX-License-Identifier: Apache-2.0
#include "engine/engine.hpp"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gcompute::server {

Engine::Engine(std::unique_ptr<Backend> backend, EngineOptions options)
    : backend_(std::move(backend)), options_(std::move(options)) {
  const int n = backend_->concurrency();
  workers_.reserve(n);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
}

Engine::~Engine() {
  drain();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

absl::Status Engine::submit(const std::string& method, std::shared_ptr<JobContext> ctx, Task task,
                            Admission admission, Dispatch dispatch) {
  if (ctx->deadline <= absl::Now()) {
    return absl::DeadlineExceededError(absl::StrCat(method, ": deadline passed before queueing"));
  }
  if (ctx->cancelled.load()) return absl::CancelledError(absl::StrCat(method, ": call cancelled"));
  std::vector<Item> abandoned;  // completed outside the lock
  std::optional<Item> inline_item;
  absl::Status result = absl::OkStatus();
  {
    std::lock_guard lock(mu_);
    if (draining_) return absl::UnavailableError("server is draining; retry on another replica");
    if (dispatch == Dispatch::kInlineIfIdle && queue_.empty() &&
        running_ < backend_->concurrency()) {
      ++running_;
      running_jobs_.insert(ctx);
      inline_item.emplace(
          Item{method, std::move(ctx), std::move(task), std::chrono::steady_clock::now()});
    } else {
      const bool bounded = admission == Admission::kBounded;
      if (bounded && static_cast<int>(queue_.size()) >= options_.queue_depth) {
        // Calls cancelled while waiting give their slots back before we refuse anyone.
        abandoned = queue_.extract_if([](const Item& item) { return item.ctx->cancelled.load(); });
      }
      if (bounded && static_cast<int>(queue_.size()) >= options_.queue_depth &&
          running_ + static_cast<int>(queue_.size()) >= backend_->concurrency()) {
        result = absl::ResourceExhaustedError(
            absl::StrCat("queue full: ", queue_.size(),
                         " requests waiting (--queue-depth=", options_.queue_depth, ")"));
      } else {
        const std::string tenant = ctx->tenant;
        const Priority priority = ctx->priority;
        queue_.push(
            tenant, priority,
            Item{method, std::move(ctx), std::move(task), std::chrono::steady_clock::now()});
      }
    }
    report_load_locked();
  }
  if (inline_item) {
    run_item(*inline_item);
    return absl::OkStatus();
  }
  for (Item& item : abandoned) {
    item.task(absl::CancelledError(absl::StrCat(item.method, ": cancelled while queued")));
  }
  if (result.ok()) work_cv_.notify_one();
  return result;
}

bool Engine::drain(absl::Time deadline) {
  std::unique_lock lock(mu_);
  draining_ = true;
  const auto idle = [this] { return queue_.empty() && running_ == 0; };
  if (deadline == absl::InfiniteFuture()) {
    idle_cv_.wait(lock, idle);
    return true;
  }
  return idle_cv_.wait_until(lock, absl::ToChronoTime(deadline), idle);
}

void Engine::cancel_all() {
  std::lock_guard lock(mu_);
  draining_ = true;
  const auto stop = [](JobContext& ctx) {
    ctx.shutdown.store(true);
    ctx.cancelled.store(true);
  };
  queue_.for_each([&](Item& item) { stop(*item.ctx); });
  for (const std::shared_ptr<JobContext>& ctx : running_jobs_) stop(*ctx);
}

void Engine::report_load_locked() {
  if (options_.on_load_change) options_.on_load_change(static_cast<int>(queue_.size()), running_);
}

void Engine::worker_loop() {
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mu_);
      // At most concurrency() tasks run, counting those run inline on a submitting thread.
      work_cv_.wait(lock, [this] {
        return stopping_ || (!queue_.empty() && running_ < backend_->concurrency());
      });
      if (queue_.empty()) return;  // stopping, nothing left
      item = queue_.pop();
      ++running_;
      running_jobs_.insert(item.ctx);
      report_load_locked();
    }
    run_item(item);
  }
}

void Engine::run_item(Item& item) {
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - item.enqueued).count();
  item.ctx->times.queue_seconds = waited;
  if (options_.on_queue_time) options_.on_queue_time(item.method, waited);

  absl::Status start = absl::OkStatus();
  if (item.ctx->cancelled.load()) {
    start = item.ctx->deadline <= absl::Now()
                ? absl::DeadlineExceededError(
                      absl::StrCat(item.method, ": deadline passed while queued"))
                : absl::CancelledError(absl::StrCat(item.method, ": cancelled while queued"));
  } else if (item.ctx->deadline <= absl::Now()) {
    start =
        absl::DeadlineExceededError(absl::StrCat(item.method, ": deadline passed while queued"));
  }
  if (start.ok()) item.ctx->phase.store(JobPhase::kRunning);
  item.task(std::move(start));
  item.task = nullptr;  // release captured state before reporting idle

  std::lock_guard lock(mu_);
  --running_;
  running_jobs_.erase(item.ctx);
  report_load_locked();
  if (!queue_.empty()) work_cv_.notify_one();  // a slot is free again
  if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
}

}  // namespace gcompute::server
