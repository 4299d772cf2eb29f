// SPDX-License-Identifier: Apache-2.0
#include "ops/jobs.hpp"

#include <algorithm>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/quote.hpp"
#include "common/random_id.hpp"
#include "gcompute/kernels/enum_table.hpp"

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

std::string restart_time(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

void log_journal_error(const absl::Status& status) {
  std::cerr << "gcompute-server: job records (--data-dir): " << status.message() << std::endl;
}

/// Calls `f(job_field, other_field)` for each field a job shares with its JobRecord and its
/// JobView (the job's `key` is their `client_job_key`).
template <typename Job, typename RecordOrView, typename F>
void for_shared_fields(Job& job, RecordOrView& other, F f) {
  f(job.id, other.id);
  f(job.method, other.method);
  f(job.priority, other.priority);
  f(job.key, other.client_job_key);
  f(job.state, other.state);
  f(job.created, other.created);
  f(job.started, other.started);
  f(job.finished, other.finished);
  f(job.status, other.status);
}

// for_shared_fields' two directions: snapshots of a job, and a job restored from its record.
constexpr auto kToOther = [](const auto& job_field, auto& other_field) { other_field = job_field; };
constexpr auto kToJob = [](auto& job_field, const auto& other_field) { job_field = other_field; };

}  // namespace

const char* job_state_name(JobState state) {
  return kernels::enum_name<JobState::kCancelled>(
      state, {"QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"});
}

/// What a job is, apart from how its records are ordered: copyable, so that a record can be
/// made of the job as it is about to become.
struct JobManager::JobFields {
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
  std::shared_ptr<const std::string> submission;       ///< while QUEUED, for its record
  std::shared_ptr<const std::string> restored_result;  ///< a SUCCEEDED job from before a restart
  bool stopped = false;    ///< cancelled by the drain: its record stays as it was
  bool forgotten = false;  ///< expired or never accepted: no more records
};

struct JobManager::Job : JobFields {
  std::mutex journal_mu;  ///< orders its record's writes (taken before mu_)
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
  stop_all();
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
  return submit_job(caller, std::move(request), std::move(options), nullptr);
}

absl::StatusOr<JobManager::Submitted> JobManager::submit_job(const Caller& caller,
                                                             OpRequest request, JobOptions options,
                                                             const JobRecord* restored) {
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
    if (!options.client_job_key.empty() && restored == nullptr) {
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
  job->id = restored ? restored->id : random_id("j-");
  job->tenant = caller.tenant;
  job->key = options.client_job_key;
  job->method = op->method;
  job->priority = options.priority;
  job->created = restored ? restored->created : absl::Now();
  job->ttl = restored                   ? restored->ttl
             : options.ttl_seconds == 0 ? options_.default_ttl
                                        : absl::Seconds(options.ttl_seconds);
  job->ctx = std::make_shared<JobContext>();
  job->ctx->tenant = caller.tenant;
  job->ctx->priority = options.priority;
  {
    std::lock_guard lock(mu_);
    // A retry with the same key may have raced us past the check above.
    if (!job->key.empty()) {
      if (auto it = by_key_.find(key); it != by_key_.end() && restored == nullptr) {
        return Submitted{it->second->id, true};
      }
      by_key_[key] = job;
    }
    job->seq = restored ? restored->seq : next_seq_++;
    jobs_[job->id] = job;
    by_tenant_[{job->tenant, job->seq}] = job;
    ++active_per_tenant_[job->tenant];
    ++active_;
    ++counts_[JobState::kQueued];
    report_counts();
  }
  // Recorded before the engine can start it: a restart finds it QUEUED at least.
  if (journaled() && restored == nullptr) {
    job->submission = std::move(options.submission);
    if (absl::Status saved = journal_save(job); !saved.ok()) {
      std::lock_guard lock(mu_);
      forget_locked(job);
      if (--active_per_tenant_[job->tenant] == 0) active_per_tenant_.erase(job->tenant);
      --active_;
      cv_.notify_all();
      return absl::Status(saved.code(),
                          absl::StrCat("cannot record the job in --data-dir: ", saved.message()));
    }
  }
  op->run = [this, job, inner = std::move(op->run)](Backend& backend, JobContext& ctx) mutable {
    bool started = false;
    {
      std::lock_guard lock(mu_);
      if (job->state == JobState::kQueued) {
        --counts_[JobState::kQueued];
        ++counts_[JobState::kRunning];
        job->state = JobState::kRunning;
        job->started = absl::Now();
        job->submission.reset();
        changed_ = true;
        started = true;
        report_counts();
      }
    }
    cv_.notify_all();
    // Recorded before it runs: a restart finds it RUNNING and fails it rather than rerun it.
    if (started) {
      if (absl::Status saved = journal_save(job); !saved.ok()) log_journal_error(saved);
    }
    return inner(backend, ctx);
  };
  ops_.submit(
      caller, *std::move(op), job->ctx,
      [this, job](absl::StatusOr<OpResult> result) { finish(job, std::move(result)); },
      Engine::Admission::kUnbounded);

  absl::Status refused;
  {
    std::lock_guard lock(mu_);
    // Refused by the engine (draining) before it ever ran: no job, the caller gets the reason.
    if (job->state == JobState::kFailed && job->started == absl::InfinitePast()) {
      refused = job->status;
      forget_locked(job);
    }
  }
  if (refused.ok()) return Submitted{job->id, false};
  if (journaled() && restored == nullptr) journal_erase(job);
  return refused;
}

void JobManager::forget_locked(const JobPtr& job) {
  job->forgotten = true;
  jobs_.erase(job->id);
  by_tenant_.erase({job->tenant, job->seq});
  if (!job->key.empty()) {
    auto it = by_key_.find({job->tenant, job->key});
    if (it != by_key_.end() && it->second == job) by_key_.erase(it);
  }
  if (is_final(job->state)) {
    const absl::Time expires = job->finished + job->ttl;
    for (auto it = expiry_.find(expires); it != expiry_.end() && it->first == expires; ++it) {
      if (it->second == job->id) {
        expiry_.erase(it);
        break;
      }
    }
  }
  --counts_[job->state];
  report_counts();
}

JobRecord JobManager::record_locked(const JobFields& job) const {
  JobRecord r;
  for_shared_fields(job, r, kToOther);
  r.tenant = job.tenant;
  r.seq = job.seq;
  r.ttl = job.ttl;
  if (job.state == JobState::kQueued) r.submission = job.submission;
  r.result = job.restored_result;
  return r;
}

/// How a job that ran ended: the fields finish() publishes.
struct JobManager::Outcome {
  JobState state = JobState::kFailed;
  absl::Status status;
  std::shared_ptr<const OpResult> result;
  absl::Time finished;
};

namespace {

// Gives a job (or a copy of one) its outcome.
template <typename JobFields, typename Outcome>
void apply_outcome(JobFields& job, const Outcome& outcome) {
  job.state = outcome.state;
  job.status = outcome.status;
  job.result = outcome.result;
  job.finished = outcome.finished;
}

}  // namespace

absl::Status JobManager::journal_save(const JobPtr& job) {
  if (options_.journal == nullptr) return absl::OkStatus();
  // Held from the snapshot through the write: the last write holds the latest state.
  std::lock_guard order(job->journal_mu);
  return journal_save_ordered(job, nullptr);
}

absl::Status JobManager::journal_save_ordered(const JobPtr& job, const Outcome* outcome) {
  JobJournal* journal = options_.journal;
  if (journal == nullptr) return absl::OkStatus();
  JobRecord record;
  std::optional<JobView> succeeded;
  {
    std::lock_guard lock(mu_);
    JobFields fields = *job;
    if (outcome != nullptr) apply_outcome(fields, *outcome);
    if (fields.forgotten || (fields.stopped && fields.state != JobState::kSucceeded)) {
      return absl::OkStatus();
    }
    record = record_locked(fields);
    if (fields.state == JobState::kSucceeded && fields.result) {
      succeeded = view_locked(fields, absl::Now(), true);
    }
  }
  if (succeeded) record.result = journal->encode_result(*succeeded);
  return journal->save(record);
}

void JobManager::journal_erase(const JobPtr& job) {
  if (options_.journal == nullptr) return;
  std::lock_guard order(job->journal_mu);
  if (absl::Status st = options_.journal->erase(job->id); !st.ok()) log_journal_error(st);
}

void JobManager::erase_expired_records() {
  std::vector<JobPtr> expired;
  {
    std::lock_guard lock(mu_);
    expired.swap(expired_records_);
  }
  for (const JobPtr& job : expired) journal_erase(job);
}

void JobManager::restore(std::vector<RestoredJob> jobs) {
  std::sort(jobs.begin(), jobs.end(),
            [](const RestoredJob& a, const RestoredJob& b) { return a.record.seq < b.record.seq; });
  const absl::Time now = absl::Now();
  {
    std::lock_guard lock(mu_);
    for (const RestoredJob& j : jobs) next_seq_ = std::max(next_seq_, j.record.seq + 1);
  }
  for (RestoredJob& restored : jobs) {
    JobRecord& r = restored.record;
    bool changed = true;
    if (r.state == JobState::kQueued) {
      absl::Status status = restored.request.status();
      if (status.ok()) {
        JobOptions o;
        o.priority = r.priority;
        o.client_job_key = r.client_job_key;
        auto submitted = submit_job(Caller{r.tenant}, *std::move(restored.request), o, &r);
        if (submitted.ok()) continue;
        status = submitted.status();
      }
      r.state = JobState::kFailed;
      r.status =
          absl::Status(status.code(), absl::StrCat("queued again after the restart at ",
                                                   restart_time(now), ": ", status.message()));
      r.finished = now;
    } else if (r.state == JobState::kRunning) {
      r.state = JobState::kFailed;
      r.status = absl::UnavailableError(
          absl::StrCat("the server stopped while the job was running (restart at ",
                       restart_time(now), "); submit it again"));
      r.finished = now;
    } else if (r.state == JobState::kSucceeded && r.result == nullptr) {
      r.state = JobState::kFailed;
      r.status = absl::DataLossError(
          absl::StrCat("the job succeeded, but its result was too large to keep across the "
                       "restart at ",
                       restart_time(now), "; submit it again"));
    } else {
      changed = false;
    }
    auto job = std::make_shared<Job>();
    for_shared_fields(*job, r, kToJob);
    job->tenant = r.tenant;
    job->seq = r.seq;
    job->ttl = r.ttl;
    job->restored_result = r.state == JobState::kSucceeded ? r.result : nullptr;
    job->ctx = std::make_shared<JobContext>();
    job->ctx->tenant = r.tenant;
    job->ctx->priority = r.priority;
    if (r.finished + r.ttl <= now) {
      journal_erase(job);
      continue;
    }
    {
      std::lock_guard lock(mu_);
      jobs_[job->id] = job;
      by_tenant_[{job->tenant, job->seq}] = job;
      if (!job->key.empty()) by_key_[{job->tenant, job->key}] = job;
      expiry_.emplace(job->finished + job->ttl, job->id);
      ++counts_[job->state];
      report_counts();
    }
    if (changed) {
      if (absl::Status saved = journal_save(job); !saved.ok()) log_journal_error(saved);
    }
  }
}

void JobManager::finish(const JobPtr& job, absl::StatusOr<OpResult> result) {
  Outcome outcome;
  outcome.finished = absl::Now();
  bool ran_to_end = false;
  {
    std::lock_guard lock(mu_);
    ran_to_end = !is_final(job->state);
    if (result.ok()) {
      outcome.state = JobState::kSucceeded;
      outcome.result = std::make_shared<const OpResult>(*std::move(result));
    } else {
      outcome.state = job->cancel_requested && absl::IsCancelled(result.status())
                          ? JobState::kCancelled
                          : JobState::kFailed;
      outcome.status = result.status();
    }
  }
  if (ran_to_end) {
    // Recorded before anyone can see the final state, so a client never sees an outcome that
    // a restart could lose; journal_mu keeps any later record (a cancel) after this one.
    std::lock_guard order(job->journal_mu);
    if (absl::Status saved = journal_save_ordered(job, &outcome); !saved.ok()) {
      log_journal_error(saved);
    }
    std::lock_guard lock(mu_);
    if (!is_final(job->state)) {  // a queued job refused by the engine may be cancelled meanwhile
      --counts_[job->state];
      apply_outcome(*job, outcome);
      if (outcome.state == JobState::kSucceeded) {
        job->ctx->steps.done.store(job->ctx->steps.total.load());
      }
      ++counts_[job->state];
      expiry_.emplace(outcome.finished + job->ttl, job->id);
      report_counts();
    }
  }
  {
    std::lock_guard lock(mu_);
    if (job->started != absl::InfinitePast() && options_.on_finished) {
      options_.on_finished(job->method, job->ctx->times.queue_seconds,
                           absl::ToDoubleSeconds(outcome.finished - job->started));
    }
    if (--active_per_tenant_[job->tenant] == 0) active_per_tenant_.erase(job->tenant);
    --active_;
    changed_ = true;
    // Under the lock: once active_ may reach 0 the destructor can go on and destroy cv_, so
    // this thread must not touch the manager after it lets go of mu_.
    cv_.notify_all();
  }
}

JobManager::JobPtr JobManager::find_locked(const Caller& caller, const std::string& id,
                                           absl::Time now) {
  expire_locked(now);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second->tenant != caller.tenant) return nullptr;
  return it->second;
}

JobView JobManager::view_locked(const JobFields& job, absl::Time now, bool with_result) const {
  JobView v;
  for_shared_fields(job, v, kToOther);
  if (is_final(job.state)) v.expires = job.finished + job.ttl;
  if (with_result) {
    v.result = job.result;
    v.restored_result = job.restored_result;
  }
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
  JobPtr job;
  bool now_final = false;
  {
    std::lock_guard lock(mu_);
    const absl::Time now = absl::Now();
    job = find_locked(caller, id, now);
    if (!job) return absl::NotFoundError(absl::StrCat("job_id ", quote_id(id), " not found"));
    const bool was_final = is_final(job->state);
    cancel_locked(*job, now);
    now_final = !was_final && is_final(job->state);
    report_counts();
    out = view_locked(*job, now, true);
  }
  cv_.notify_all();
  if (now_final) {
    if (absl::Status saved = journal_save(job); !saved.ok()) log_journal_error(saved);
  }
  return out;
}

void JobManager::cancel_all() {
  cancel_every(false);
}

void JobManager::stop_all() {
  cancel_every(true);
}

void JobManager::cancel_every(bool shutdown) {
  std::vector<JobPtr> now_final;
  {
    std::lock_guard lock(mu_);
    const absl::Time now = absl::Now();
    for (auto& [id, job] : jobs_) {
      if (is_final(job->state)) continue;
      if (shutdown) job->stopped = true;
      cancel_locked(*job, now);
      if (is_final(job->state)) now_final.push_back(job);
    }
    report_counts();
  }
  cv_.notify_all();
  for (const JobPtr& job : now_final) {
    if (absl::Status saved = journal_save(job); !saved.ok()) log_journal_error(saved);
  }
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
    if (options_.journal != nullptr) {
      job->forgotten = true;
      expired_records_.push_back(job);
    }
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
    const bool erase_records = !expired_records_.empty();
    lock.unlock();
    if (erase_records) erase_expired_records();
    for (const auto& w : watches) feed(w, now);
    lock.lock();
    std::erase_if(watches_, [](const std::shared_ptr<JobWatch>& w) {
      std::lock_guard wl(w->mu_);
      return w->closed_;
    });
  }
}

}  // namespace gcompute::server::ops
