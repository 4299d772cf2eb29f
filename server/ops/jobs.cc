// SPDX-License-Identifier: Apache-2.0
#include "ops/jobs.hpp"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/quote.hpp"
#include "common/random_id.hpp"

namespace gcompute::server::ops {
namespace {

constexpr std::size_t kMaxClientKeyBytes = 128;
constexpr int kDefaultPageSize = 100;
constexpr int kMaxPageSize = 1000;

/// `done` of `total` steps of `method`'s kernel, as progress details say it.
std::string step_detail(const std::string& method, std::int64_t done, std::int64_t total) {
  if (method == "Apsp" || method == "ShortestPath") {
    return absl::StrCat("round ", done, " of ", total);
  }
  // Jacobi stops when it converges, usually long before its sweep limit.
  if (method == "Svd" || method == "BatchedSvd") {
    return absl::StrCat("sweep ", done, " (at most ", total, ")");
  }
  return absl::StrCat("step ", done, " of ", total);
}

}  // namespace

const char* job_state_name(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "QUEUED";
    case JobState::kRunning:
      return "RUNNING";
    case JobState::kSucceeded:
      return "SUCCEEDED";
    case JobState::kFailed:
      return "FAILED";
    case JobState::kCancelled:
      return "CANCELLED";
  }
  return "?";
}

struct JobManager::Job {
  std::string id;
  std::string tenant;
  std::string key;
  std::string method;
  std::uint64_t seq = 0;
  Priority priority = Priority::kNormal;
  JobState state = JobState::kQueued;
  absl::Time created;
  absl::Time started = absl::InfinitePast();
  absl::Time finished = absl::InfinitePast();
  absl::Duration ttl;
  absl::Status status;
  std::shared_ptr<const OpResult> result;
  std::shared_ptr<JobContext> ctx;
  bool cancel_requested = false;
};

// ---- JobWatch ------------------------------------------------------------------------------

void JobWatch::written() {
  std::lock_guard lock(mu_);
  busy_ = false;
}

void JobWatch::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
}

// ---- JobManager ----------------------------------------------------------------------------

JobManager::JobManager(Operations& ops, JobManagerOptions options)
    : ops_(ops), options_(std::move(options)) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled}) {
    counts_[s] = 0;
  }
  report_counts();
  ticker_ = std::thread([this] { ticker_loop(); });
}

JobManager::~JobManager() {
  cancel_all();
  {
    std::unique_lock lock(mu_);
    // The engine's tasks point at this manager: wait until each has run.
    cv_.wait(lock, [this] { return active_ == 0; });
    stopping_ = true;
  }
  cv_.notify_all();
  ticker_.join();
}

absl::StatusOr<JobManager::Submitted> JobManager::submit(const Caller& caller, OpRequest request,
                                                         JobOptions options) {
  if (options.client_job_key.size() > kMaxClientKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("client_job_key is ",
                                                   options.client_job_key.size(),
                                                   " bytes; at most ", kMaxClientKeyBytes));
  }
  const std::int64_t max_ttl = absl::ToInt64Seconds(options_.max_ttl);
  if (options.ttl_seconds < 0 || options.ttl_seconds > max_ttl) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ttl_seconds = ", options.ttl_seconds, " is outside 0..", max_ttl, " (0: the default)"));
  }
  const auto key = std::make_pair(caller.tenant, options.client_job_key);
  {
    std::lock_guard lock(mu_);
    expire_locked(absl::Now());
    if (!options.client_job_key.empty()) {
      if (auto it = by_key_.find(key); it != by_key_.end()) return Submitted{it->second->id, true};
    }
    auto active = active_per_tenant_.find(caller.tenant);
    if (active != active_per_tenant_.end() && active->second >= options_.max_active_per_tenant) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "this tenant has ", active->second, " jobs queued or running (limit ",
          options_.max_active_per_tenant, "); wait for some to finish or cancel them"));
    }
  }
  absl::StatusOr<PreparedOp> op = ops_.prepare(caller, std::move(request));
  if (!op.ok()) return op.status();

  auto job = std::make_shared<Job>();
  job->id = random_id("j-");
  job->tenant = caller.tenant;
  job->key = options.client_job_key;
  job->method = op->method;
  job->priority = options.priority;
  job->created = absl::Now();
  job->ttl = options.ttl_seconds == 0 ? options_.default_ttl : absl::Seconds(options.ttl_seconds);
  job->ctx = std::make_shared<JobContext>();
  job->ctx->tenant = caller.tenant;
  job->ctx->priority = options.priority;
  {
    std::lock_guard lock(mu_);
    // A retry with the same key may have raced us past the check above.
    if (!job->key.empty()) {
      if (auto it = by_key_.find(key); it != by_key_.end()) return Submitted{it->second->id, true};
      by_key_[key] = job;
    }
    job->seq = next_seq_++;
    jobs_[job->id] = job;
    by_tenant_[{job->tenant, job->seq}] = job;
    ++active_per_tenant_[job->tenant];
    ++active_;
    ++counts_[JobState::kQueued];
    report_counts();
  }
  op->run = [this, job, inner = std::move(op->run)](Backend& backend, JobContext& ctx) mutable {
    {
      std::lock_guard lock(mu_);
      if (job->state == JobState::kQueued) {
        --counts_[JobState::kQueued];
        ++counts_[JobState::kRunning];
        job->state = JobState::kRunning;
        job->started = absl::Now();
        changed_ = true;
        report_counts();
      }
    }
    cv_.notify_all();
    return inner(backend, ctx);
  };
  ops_.submit(
      caller, *std::move(op), job->ctx,
      [this, job](absl::StatusOr<OpResult> result) { finish(job, std::move(result)); },
      Engine::Admission::kUnbounded);

  std::lock_guard lock(mu_);
  // Refused by the engine (draining) before it ever ran: no job, the caller gets the reason.
  if (job->state == JobState::kFailed && job->started == absl::InfinitePast()) {
    const absl::Status refused = job->status;
    jobs_.erase(job->id);
    by_tenant_.erase({job->tenant, job->seq});
    if (!job->key.empty()) by_key_.erase(key);
    const absl::Time expires = job->finished + job->ttl;
    for (auto it = expiry_.find(expires); it != expiry_.end() && it->first == expires; ++it) {
      if (it->second == job->id) {
        expiry_.erase(it);
        break;
      }
    }
    --counts_[JobState::kFailed];
    report_counts();
    return refused;
  }
  return Submitted{job->id, false};
}

void JobManager::finish(const JobPtr& job, absl::StatusOr<OpResult> result) {
  {
    std::lock_guard lock(mu_);
    const absl::Time now = absl::Now();
    if (!is_final(job->state)) {
      --counts_[job->state];
      if (result.ok()) {
        job->state = JobState::kSucceeded;
        job->result = std::make_shared<const OpResult>(*std::move(result));
        job->ctx->steps.done.store(job->ctx->steps.total.load());
      } else {
        job->state = job->cancel_requested && absl::IsCancelled(result.status())
                         ? JobState::kCancelled
                         : JobState::kFailed;
        job->status = result.status();
      }
      ++counts_[job->state];
      job->finished = now;
      expiry_.emplace(now + job->ttl, job->id);
      report_counts();
    }
    if (job->started != absl::InfinitePast() && options_.on_finished) {
      options_.on_finished(job->method, job->ctx->times.queue_seconds,
                           absl::ToDoubleSeconds(now - job->started));
    }
    if (--active_per_tenant_[job->tenant] == 0) active_per_tenant_.erase(job->tenant);
    --active_;
    changed_ = true;
  }
  cv_.notify_all();
}

JobManager::JobPtr JobManager::find_locked(const Caller& caller, const std::string& id,
                                           absl::Time now) {
  expire_locked(now);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second->tenant != caller.tenant) return nullptr;
  return it->second;
}

JobView JobManager::view_locked(const Job& job, absl::Time now, bool with_result) const {
  JobView v;
  v.id = job.id;
  v.method = job.method;
  v.state = job.state;
  v.priority = job.priority;
  v.client_job_key = job.key;
  v.created = job.created;
  v.started = job.started;
  v.finished = job.finished;
  if (is_final(job.state)) v.expires = job.finished + job.ttl;
  v.status = job.status;
  if (with_result) v.result = job.result;
  v.context = job.ctx;
  v.seconds = absl::ToDoubleSeconds((is_final(job.state) ? job.finished : now) - job.created);
  const std::int64_t total = job.ctx->steps.total.load(std::memory_order_relaxed);
  const std::int64_t done = std::min(job.ctx->steps.done.load(std::memory_order_relaxed), total);
  switch (job.state) {
    case JobState::kQueued:
      v.progress = {0, "queued", ""};
      break;
    case JobState::kRunning:
      v.progress.phase = "running";
      if (total > 0) {
        v.progress.fraction = static_cast<double>(done) / static_cast<double>(total);
        v.progress.detail = step_detail(job.method, done, total);
      }
      break;
    default:
      v.progress.phase = "finished";
      v.progress.fraction = job.state == JobState::kSucceeded ? 1.0
                            : total > 0 ? static_cast<double>(done) / static_cast<double>(total)
                                        : 0.0;
      if (total > 0) {
        v.progress.detail = step_detail(job.method, done, total);
      }
      break;
  }
  return v;
}

absl::StatusOr<JobView> JobManager::get(const Caller& caller, const std::string& id) {
  std::lock_guard lock(mu_);
  const absl::Time now = absl::Now();
  JobPtr job = find_locked(caller, id, now);
  if (!job) return absl::NotFoundError(absl::StrCat("job_id ", quote_id(id), " not found"));
  return view_locked(*job, now, true);
}

void JobManager::cancel_locked(Job& job, absl::Time now) {
  if (is_final(job.state)) return;
  job.cancel_requested = true;
  job.ctx->cancelled.store(true);
  if (job.state != JobState::kQueued) return;  // the kernel stops at its next step
  // Queued: final now; the engine discards it when it reaches the front of the queue.
  --counts_[JobState::kQueued];
  ++counts_[JobState::kCancelled];
  job.state = JobState::kCancelled;
  job.status = absl::CancelledError(absl::StrCat("job ", job.id, " cancelled while queued"));
  job.finished = now;
  expiry_.emplace(now + job.ttl, job.id);
  changed_ = true;
}

absl::StatusOr<JobView> JobManager::cancel(const Caller& caller, const std::string& id) {
  absl::StatusOr<JobView> out;
  {
    std::lock_guard lock(mu_);
    const absl::Time now = absl::Now();
    JobPtr job = find_locked(caller, id, now);
    if (!job) return absl::NotFoundError(absl::StrCat("job_id ", quote_id(id), " not found"));
    cancel_locked(*job, now);
    report_counts();
    out = view_locked(*job, now, true);
  }
  cv_.notify_all();
  return out;
}

void JobManager::cancel_all() {
  {
    std::lock_guard lock(mu_);
    const absl::Time now = absl::Now();
    for (auto& [id, job] : jobs_) cancel_locked(*job, now);
    report_counts();
  }
  cv_.notify_all();
}

absl::StatusOr<JobManager::Page> JobManager::list(const Caller& caller, int page_size,
                                                  const std::string& page_token) {
  if (page_size < 0 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size = ", page_size, " is outside 0..", kMaxPageSize));
  }
  if (page_size == 0) page_size = kDefaultPageSize;
  std::uint64_t after = 0;
  if (!page_token.empty() && !absl::SimpleAtoi(page_token, &after)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token ", quote_id(page_token), " is not one ListJobs returned"));
  }
  Page page;
  std::lock_guard lock(mu_);
  const absl::Time now = absl::Now();
  expire_locked(now);
  auto it = page_token.empty() ? by_tenant_.lower_bound({caller.tenant, 0})
                               : by_tenant_.upper_bound({caller.tenant, after});
  std::uint64_t last = after;
  for (; it != by_tenant_.end() && it->first.first == caller.tenant; ++it) {
    if (static_cast<int>(page.jobs.size()) == page_size) {
      page.next_page_token = std::to_string(last);
      break;
    }
    page.jobs.push_back(view_locked(*it->second, now, false));
    last = it->first.second;
  }
  return page;
}

absl::StatusOr<std::shared_ptr<JobWatch>> JobManager::watch(const Caller& caller,
                                                            const std::string& id,
                                                            JobWatch::Send send) {
  std::shared_ptr<JobWatch> w;
  {
    std::lock_guard lock(mu_);
    if (!find_locked(caller, id, absl::Now())) {
      return absl::NotFoundError(absl::StrCat("job_id ", quote_id(id), " not found"));
    }
    w.reset(new JobWatch(id, caller, std::move(send)));
    watches_.push_back(w);
    changed_ = true;  // the ticker sends the first view at once
  }
  cv_.notify_all();
  return w;
}

void JobManager::expire_locked(absl::Time now) {
  while (!expiry_.empty() && expiry_.begin()->first <= now) {
    auto job_it = jobs_.find(expiry_.begin()->second);
    expiry_.erase(expiry_.begin());
    if (job_it == jobs_.end()) continue;
    const JobPtr job = job_it->second;
    jobs_.erase(job_it);
    by_tenant_.erase({job->tenant, job->seq});
    if (!job->key.empty()) by_key_.erase({job->tenant, job->key});
    --counts_[job->state];
    changed_ = true;
    report_counts();
  }
}

void JobManager::report_counts() {
  if (options_.on_counts) options_.on_counts(counts_);
}

void JobManager::feed(const std::shared_ptr<JobWatch>& watch, absl::Time now) {
  std::optional<JobView> view;
  {
    std::lock_guard lock(mu_);
    auto it = jobs_.find(watch->id_);
    if (it != jobs_.end()) view = view_locked(*it->second, now, is_final(it->second->state));
  }
  std::lock_guard lock(watch->mu_);
  if (watch->closed_ || watch->busy_) return;
  if (!view) {
    // Expired while watched (its TTL was shorter than the watch): end with what we know.
    watch->closed_ = true;
    watch->send_(absl::NotFoundError(absl::StrCat("job ", watch->id_, " expired")));
    return;
  }
  if (watch->sent_any_ && view->state == watch->last_state_ &&
      view->progress == watch->last_progress_) {
    return;
  }
  watch->busy_ = true;
  watch->sent_any_ = true;
  watch->last_state_ = view->state;
  watch->last_progress_ = view->progress;
  if (is_final(view->state)) watch->closed_ = true;  // the last send
  watch->send_(*view);
}

void JobManager::ticker_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, absl::ToChronoMilliseconds(options_.tick),
                 [this] { return stopping_ || changed_; });
    if (stopping_) break;
    changed_ = false;
    const absl::Time now = absl::Now();
    expire_locked(now);
    std::vector<std::shared_ptr<JobWatch>> watches = watches_;
    lock.unlock();
    for (const auto& w : watches) feed(w, now);
    lock.lock();
    std::erase_if(watches_, [](const std::shared_ptr<JobWatch>& w) {
      std::lock_guard wl(w->mu_);
      return w->closed_;
    });
  }
}

}  // namespace gcompute::server::ops
