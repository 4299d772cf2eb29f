// SPDX-License-Identifier: Apache-2.0
// Jobs: operations submitted once and run whether or not the submitter stays connected. The
// manager keeps a table of jobs keyed by id, each owned by the tenant that submitted it
// (another tenant's id is NOT_FOUND), runs them through Operations::prepare and submit (the
// path of the unary RPCs), keeps finished jobs and their inline results for a TTL, and feeds
// watchers each change of state or progress. With a JobJournal (--data-dir) it records each
// job's state as it changes and restore() puts the recorded jobs back after a restart.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ops/operations.hpp"

namespace gcompute::server::ops {

enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

/// "QUEUED", "RUNNING", ... (metrics labels, messages).
const char* job_state_name(JobState state);
inline bool is_final(JobState s) {
  return s != JobState::kQueued && s != JobState::kRunning;
}

/// What SubmitJob carries besides the operation.
struct JobOptions {
  Priority priority = Priority::kNormal;
  std::string client_job_key;    ///< idempotency key within the tenant; empty: none
  std::int64_t ttl_seconds = 0;  ///< after the job finishes; 0: the manager's default
  /// The request as the api layer encodes it, for the journal while the job is queued; null
  /// without a journal.
  std::shared_ptr<const std::string> submission;
};

struct JobProgress {
  double fraction = 0;  ///< 0..1
  std::string phase;    ///< "queued", "running", "finished"
  std::string detail;   ///< e.g. "round 12 of 128"
  bool operator==(const JobProgress&) const = default;
};

/// A job as GetJob reports it: a copy, consistent at one instant.
struct JobView {
  std::string id;
  std::string method;
  JobState state = JobState::kQueued;
  Priority priority = Priority::kNormal;
  std::string client_job_key;
  JobProgress progress;
  absl::Time created;
  absl::Time started = absl::InfinitePast();    ///< InfinitePast until it runs
  absl::Time finished = absl::InfinitePast();   ///< InfinitePast until final
  absl::Time expires = absl::InfiniteFuture();  ///< finished + ttl once final
  absl::Status status;                          ///< the error of a FAILED or CANCELLED job
  std::shared_ptr<const OpResult> result;       ///< SUCCEEDED only
  /// SUCCEEDED before a restart: the result as JobJournal::encode_result made it.
  std::shared_ptr<const std::string> restored_result;
  std::shared_ptr<const JobContext> context;  ///< where its time went, the device
  double seconds = 0;                         ///< from submit to finish (to now while not final)
};

/// One WatchJob stream's link to the manager. The manager calls `send` with the job as it is
/// now and after each change, never again before written() reports the previous one out, and
/// last with a final state (or an error: the job expired while watched); close() stops it
/// early (the client went away).
class JobWatch {
 public:
  using Send = std::function<void(absl::StatusOr<JobView> view)>;
  /// The view handed to `send` has been written; the next may follow.
  void written();
  /// No more sends after this returns.
  void close();

 private:
  friend class JobManager;
  JobWatch(std::string id, Caller caller, Send send)
      : id_(std::move(id)), caller_(std::move(caller)), send_(std::move(send)) {}
  const std::string id_;
  const Caller caller_;
  const Send send_;
  // Recursive: gRPC may run the stream's reactions (written(), close()) inside send_.
  std::recursive_mutex mu_;
  bool busy_ = false;
  bool closed_ = false;
  bool sent_any_ = false;
  JobState last_state_ = JobState::kQueued;
  JobProgress last_progress_;
};

/// What a journal keeps of one job. The opaque bytes are the api layer's encodings.
struct JobRecord {
  std::string id;
  std::string tenant;
  std::uint64_t seq = 0;  ///< ListJobs order and page tokens
  std::string method;
  Priority priority = Priority::kNormal;
  std::string client_job_key;
  JobState state = JobState::kQueued;
  absl::Time created;
  absl::Time started = absl::InfinitePast();
  absl::Time finished = absl::InfinitePast();
  absl::Duration ttl;
  absl::Status status;                            ///< FAILED or CANCELLED
  std::shared_ptr<const std::string> submission;  ///< QUEUED: JobOptions::submission
  std::shared_ptr<const std::string> result;  ///< SUCCEEDED: encode_result's bytes; null: not kept
};

/// Keeps jobs across restarts. The manager calls it outside its lock, one call at a time for
/// any one job, in the order of the job's changes.
class JobJournal {
 public:
  virtual ~JobJournal() = default;
  /// The bytes a record keeps of a SUCCEEDED job's result (`view.result`); null when the
  /// journal does not keep it (too large).
  virtual std::shared_ptr<const std::string> encode_result(const JobView& view) = 0;
  /// Stores `record` durably, replacing the job's earlier record.
  virtual absl::Status save(const JobRecord& record) = 0;
  /// Removes the job's record (it expired, or was never accepted).
  virtual absl::Status erase(const std::string& id) = 0;
};

/// A recorded job for JobManager::restore.
struct RestoredJob {
  JobRecord record;
  /// QUEUED: the decoded submission; an error fails the job with it.
  absl::StatusOr<OpRequest> request = absl::FailedPreconditionError("no request");
};

struct JobManagerOptions {
  absl::Duration default_ttl = absl::Hours(1);  ///< --job-ttl-seconds
  absl::Duration max_ttl = absl::Hours(24 * 7);
  /// Jobs of one tenant that may be QUEUED or RUNNING at once (RESOURCE_EXHAUSTED beyond).
  int max_active_per_tenant = 1024;
  /// How often watchers see progress and expired jobs go.
  absl::Duration tick = absl::Milliseconds(20);
  /// Called with the number of jobs in each state after each change (under the manager's lock:
  /// it must not call the manager).
  std::function<void(const std::map<JobState, int>& counts)> on_counts;
  /// Called once per job that ran: its method, seconds queued and seconds running.
  std::function<void(const std::string& method, double queued, double ran)> on_finished;
  /// Records jobs for a restart (--data-dir); null: jobs live in memory only. Not owned.
  JobJournal* journal = nullptr;
};

class JobManager {
 public:
  JobManager(Operations& ops, JobManagerOptions options);
  /// Cancels every job that has not finished and waits until the engine has let go of them.
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  /// Validates `request` as its unary RPC would (the same errors, at once) and queues it. With
  /// a client_job_key already used by a live job of the caller's tenant, returns that job
  /// (`existing` true) and queues nothing.
  struct Submitted {
    std::string id;
    bool existing = false;
  };
  absl::StatusOr<Submitted> submit(const Caller& caller, OpRequest request, JobOptions options);

  /// NOT_FOUND for an unknown or expired id, or another tenant's.
  absl::StatusOr<JobView> get(const Caller& caller, const std::string& id);
  /// Stops the job: a queued one is CANCELLED at once; a running one is asked to stop and is
  /// CANCELLED when its kernel notices (a job that completes first SUCCEEDS). A final job is
  /// returned unchanged.
  absl::StatusOr<JobView> cancel(const Caller& caller, const std::string& id);

  struct Page {
    std::vector<JobView> jobs;  ///< oldest first, without results
    std::string next_page_token;
  };
  /// The caller's jobs. page_size 0: 100; INVALID_ARGUMENT outside 0..1000 or for a token
  /// this manager did not issue.
  absl::StatusOr<Page> list(const Caller& caller, int page_size, const std::string& page_token);

  /// Starts feeding `send` (JobWatch says how); NOT_FOUND as get().
  absl::StatusOr<std::shared_ptr<JobWatch>> watch(const Caller& caller, const std::string& id,
                                                  JobWatch::Send send);

  /// Cancels every job that has not finished.
  void cancel_all();
  /// Server drain: cancels every job that has not finished, but leaves their records as they
  /// are, so that after a restart queued jobs queue again and running ones fail with the reason.
  /// Without a journal the same as cancel_all().
  void stop_all();

  /// Whether the manager records jobs (JobOptions::submission is wanted).
  bool journaled() const { return options_.journal != nullptr; }
  /// Before serving, after a restart: puts recorded jobs back. Final jobs stay until their
  /// expiry (expired ones are erased); a RUNNING job becomes FAILED (UNAVAILABLE, the server
  /// stopped it); a QUEUED one is submitted again as submit() would (FAILED with the error
  /// when that now fails); a SUCCEEDED one whose result was not kept becomes FAILED
  /// (DATA_LOSS). Ids, keys and ListJobs order are kept.
  void restore(std::vector<RestoredJob> jobs);

 private:
  struct JobFields;
  struct Job;
  using JobPtr = std::shared_ptr<Job>;

  absl::StatusOr<Submitted> submit_job(const Caller& caller, OpRequest request, JobOptions options,
                                       const JobRecord* restored);
  /// Removes a job that was never accepted from the tables (under the lock).
  void forget_locked(const JobPtr& job);
  JobRecord record_locked(const JobFields& job) const;
  /// Brings the job's record up to date (no-op without a journal, after expiry, or for a job
  /// stopped by the drain unless it succeeded).
  absl::Status journal_save(const JobPtr& job);
  struct Outcome;
  /// journal_save with job->journal_mu held by the caller; with `outcome`, the record is the
  /// job as it will be once the outcome is published (finish writes it before publishing).
  absl::Status journal_save_ordered(const JobPtr& job, const Outcome* outcome);
  void journal_erase(const JobPtr& job);
  /// Erases the records of expired jobs (the ticker, outside the lock).
  void erase_expired_records();
  void cancel_every(bool shutdown);

  JobPtr find_locked(const Caller& caller, const std::string& id, absl::Time now);
  JobView view_locked(const JobFields& job, absl::Time now, bool with_result) const;
  void finish(const JobPtr& job, absl::StatusOr<OpResult> result);
  void cancel_locked(Job& job, absl::Time now);
  /// Drops finished jobs whose TTL has passed.
  void expire_locked(absl::Time now);
  void report_counts();
  void ticker_loop();
  void feed(const std::shared_ptr<JobWatch>& watch, absl::Time now);

  Operations& ops_;
  const JobManagerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;          ///< ticker wake-ups; all jobs finished (destructor)
  std::map<std::string, JobPtr> jobs_;  ///< by id
  std::map<std::pair<std::string, std::uint64_t>, JobPtr> by_tenant_;  ///< (tenant, seq)
  std::map<std::pair<std::string, std::string>, JobPtr> by_key_;       ///< (tenant, client key)
  std::multimap<absl::Time, std::string> expiry_;                      ///< finished jobs' expiry
  std::map<std::string, int> active_per_tenant_;
  std::vector<std::shared_ptr<JobWatch>> watches_;
  std::vector<JobPtr> expired_records_;  ///< expired jobs whose records are still to erase
  std::map<JobState, int> counts_;
  std::uint64_t next_seq_ = 0;
  int active_ = 0;  ///< jobs the engine still holds
  bool changed_ = false;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace gcompute::server::ops
