// SPDX-License-Identifier: Apache-2.0
// The job manager on the CPU backend: results against plain-loop oracles, tenants (another's
// job is NOT_FOUND), idempotent keys, cancel while queued and while running, progress from
// Floyd-Warshall rounds through a watch, TTL expiry, per-tenant limits and paging, and what a
// journal (--data-dir) is handed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "engine/cpu_backend.hpp"
#include "ops/jobs.hpp"

namespace gcompute::server::ops {
namespace {

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

MatrixInput matrix_input(std::int64_t rows, std::int64_t cols, const std::vector<float>& v) {
  MatrixInput m;
  m.rows = rows;
  m.cols = cols;
  m.dtype = DType::kF32;
  m.data.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  return m;
}

OpRequest transpose_of(std::int64_t rows, std::int64_t cols, const std::vector<float>& v) {
  TransposeRequest r;
  r.a = matrix_input(rows, cols, v);
  return r;
}

/// A dense random digraph (about half the pairs have an edge; +inf elsewhere).
std::vector<float> random_graph(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> w(1.0f, 10.0f);
  std::bernoulli_distribution edge(0.5);
  std::vector<float> g(static_cast<std::size_t>(n * n), std::numeric_limits<float>::infinity());
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i != j && edge(rng)) g[i * n + j] = std::round(w(rng));  // integers: exact sums
    }
  }
  return g;
}

OpRequest apsp_of(std::int64_t n, const std::vector<float>& g) {
  ApspRequest r;
  r.graph = matrix_input(n, n, g);
  return r;
}

class JobsTest : public ::testing::Test {
 protected:
  explicit JobsTest(JobManagerOptions options = {}, int workers = 1)
      : engine_(std::make_unique<CpuBackend>(workers), EngineOptions{}),
        ops_(engine_, OpEnv{matrices_, graphs_, nullptr, Limits{}}, ""),
        jobs_(std::make_unique<JobManager>(ops_, std::move(options))) {}

  /// Occupies the only worker until release is notified.
  void block_worker() {
    auto ctx = std::make_shared<JobContext>();
    std::atomic<bool> started{false};
    ASSERT_TRUE(engine_
                    .submit("blocker", ctx,
                            [this, &started](absl::Status) {
                              started = true;
                              release_.WaitForNotification();
                            })
                    .ok());
    while (!started.load()) absl::SleepFor(absl::Milliseconds(1));
  }

  /// Replaces the manager by one with `options`; the old one stops first.
  void restart_jobs(JobManagerOptions options) {
    jobs_.reset();
    jobs_ = std::make_unique<JobManager>(ops_, std::move(options));
  }

  JobView wait_final(const Caller& caller, const std::string& id) {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    for (;;) {
      absl::StatusOr<JobView> v = jobs_->get(caller, id);
      EXPECT_TRUE(v.ok()) << v.status();
      if (!v.ok() || is_final(v->state) || absl::Now() > deadline) return v.ok() ? *v : JobView{};
      absl::SleepFor(absl::Milliseconds(5));
    }
  }

  MatrixStore matrices_{MatrixStore::Options{}};
  GraphStore graphs_{GraphStore::Options{}};
  Engine engine_;
  Operations ops_;
  absl::Notification release_;
  std::unique_ptr<JobManager> jobs_;

  ~JobsTest() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    jobs_.reset();
  }
};

TEST_F(JobsTest, TransposeResultsMatchThePlainLoopOnRaggedShapes) {
  const Caller alice{"alice"};
  std::uint32_t seed = 1;
  for (auto [rows, cols] :
       {std::pair<std::int64_t, std::int64_t>{1, 1}, {1, 17}, {13, 1}, {7, 13}, {31, 37}}) {
    const std::vector<float> a = random_floats(rows * cols, seed++, -1, 1);
    auto submitted = jobs_->submit(alice, transpose_of(rows, cols, a), {});
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    EXPECT_EQ(submitted->id.size(), 34u);
    EXPECT_EQ(submitted->id.rfind("j-", 0), 0u);
    EXPECT_FALSE(submitted->existing);
    const JobView v = wait_final(alice, submitted->id);
    ASSERT_EQ(v.state, JobState::kSucceeded) << v.status;
    EXPECT_EQ(v.method, "Transpose");
    EXPECT_EQ(v.progress.phase, "finished");
    EXPECT_DOUBLE_EQ(v.progress.fraction, 1.0);
    EXPECT_LE(v.created, v.started);
    EXPECT_LE(v.started, v.finished);
    EXPECT_GT(v.expires, v.finished);
    ASSERT_NE(v.result, nullptr);
    const Matrix& at = std::get<Matrix>(std::get<TransposeResult>(*v.result).at);
    ASSERT_EQ(at.desc.rows, cols);
    ASSERT_EQ(at.desc.cols, rows);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        ASSERT_EQ(at.as<float>()[j * rows + i], a[i * cols + j]) << i << "," << j;
      }
    }
  }
}

TEST_F(JobsTest, InvalidRequestsFailAtSubmitWithTheUnaryMessage) {
  auto no_operand = jobs_->submit(Caller{}, TransposeRequest{}, {});
  EXPECT_EQ(no_operand.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_operand.status().message().find("a"), std::string::npos) << no_operand.status();
  JobOptions ttl;
  ttl.ttl_seconds = -5;
  auto bad_ttl = jobs_->submit(Caller{}, transpose_of(1, 1, {1}), ttl);
  EXPECT_EQ(bad_ttl.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_ttl.status().message().find("ttl_seconds = -5"), std::string::npos);
  JobOptions key;
  key.client_job_key.assign(129, 'k');
  auto long_key = jobs_->submit(Caller{}, transpose_of(1, 1, {1}), key);
  EXPECT_EQ(long_key.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(long_key.status().message().find("129 bytes"), std::string::npos);
  auto listed = jobs_->list(Caller{}, 0, "");
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->jobs.empty());  // nothing was queued
}

TEST_F(JobsTest, AnotherTenantsJobIsNotFoundEverywhere) {
  const Caller alice{"alice"}, bob{"bob"};
  auto job = jobs_->submit(alice, transpose_of(2, 3, random_floats(6, 7, -1, 1)), {});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(jobs_->get(bob, job->id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(jobs_->cancel(bob, job->id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(jobs_->watch(bob, job->id, [](absl::StatusOr<JobView>) {}).status().code(),
            absl::StatusCode::kNotFound);
  auto bobs = jobs_->list(bob, 0, "");
  ASSERT_TRUE(bobs.ok());
  EXPECT_TRUE(bobs->jobs.empty());
  EXPECT_EQ(wait_final(alice, job->id).state, JobState::kSucceeded);
  auto unknown = jobs_->get(alice, "j-0123");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("\"j-0123\""), std::string::npos);
}

TEST_F(JobsTest, ClientJobKeyIsIdempotentWithinATenant) {
  const Caller alice{"alice"}, bob{"bob"};
  JobOptions options;
  options.client_job_key = "nightly-42";
  const std::vector<float> a = random_floats(12, 3, -1, 1);
  auto first = jobs_->submit(alice, transpose_of(3, 4, a), options);
  ASSERT_TRUE(first.ok());
  auto again = jobs_->submit(alice, transpose_of(3, 4, a), options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, first->id);
  EXPECT_TRUE(again->existing);
  auto bobs = jobs_->submit(bob, transpose_of(3, 4, a), options);
  ASSERT_TRUE(bobs.ok());
  EXPECT_NE(bobs->id, first->id);
  EXPECT_FALSE(bobs->existing);
  auto listed = jobs_->list(alice, 0, "");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->jobs.size(), 1u);
}

TEST_F(JobsTest, CancelWhileQueuedIsFinalAtOnceAndOthersStillRun) {
  const Caller alice{"alice"};
  block_worker();
  auto a = jobs_->submit(alice, transpose_of(1, 2, {1, 2}), {});
  auto b = jobs_->submit(alice, transpose_of(1, 2, {3, 4}), {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(jobs_->get(alice, a->id)->state, JobState::kQueued);
  EXPECT_EQ(jobs_->get(alice, a->id)->progress.phase, "queued");
  auto cancelled = jobs_->cancel(alice, a->id);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_EQ(cancelled->status.code(), absl::StatusCode::kCancelled);
  release_.Notify();
  EXPECT_EQ(wait_final(alice, b->id).state, JobState::kSucceeded);
  EXPECT_EQ(jobs_->get(alice, a->id)->state, JobState::kCancelled);
  // Cancelling a final job changes nothing.
  EXPECT_EQ(jobs_->cancel(alice, b->id)->state, JobState::kSucceeded);
}

TEST_F(JobsTest, WatchSeesRoundsAdvanceAndTheResultMatchesFloydWarshall) {
  const Caller alice{"alice"};
  restart_jobs({.tick = absl::Milliseconds(1)});  // a round takes milliseconds here
  const std::int64_t n = 901;                     // 15 rounds of 64, the last ragged
  const std::vector<float> g = random_graph(n, 11);
  auto job = jobs_->submit(alice, apsp_of(n, g), {});
  ASSERT_TRUE(job.ok()) << job.status();
  std::mutex mu;
  std::vector<JobView> seen;
  bool pending = false;  // a view was sent and not yet reported written
  auto w = jobs_->watch(alice, job->id, [&](absl::StatusOr<JobView> v) {
    ASSERT_TRUE(v.ok()) << v.status();
    std::lock_guard lock(mu);
    seen.push_back(*v);
    pending = true;
  });
  ASSERT_TRUE(w.ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  for (;;) {
    bool was_pending = false;
    {
      std::lock_guard lock(mu);
      if (!seen.empty() && is_final(seen.back().state)) break;
      was_pending = std::exchange(pending, false);
    }
    // The stream wrote it: the manager may send the next change. Not under mu: the manager
    // calls the send callback (which takes mu) under the watch's own lock, which written()
    // takes too.
    if (was_pending) (*w)->written();
    ASSERT_LT(absl::Now(), deadline);
    absl::SleepFor(absl::Milliseconds(1));
  }
  std::lock_guard lock(mu);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().state, JobState::kSucceeded);
  double last = -1;
  int running_with_rounds = 0;
  for (const JobView& v : seen) {
    EXPECT_GE(v.progress.fraction, last) << v.progress.detail;
    last = v.progress.fraction;
    if (v.state == JobState::kRunning && !v.progress.detail.empty()) {
      ++running_with_rounds;
      EXPECT_NE(v.progress.detail.find(" of 15"), std::string::npos) << v.progress.detail;
    }
  }
  EXPECT_GE(running_with_rounds, 3) << "rounds seen: " << seen.size() << " views";
  ASSERT_NE(seen.back().result, nullptr);
  const Matrix& d = std::get<Matrix>(std::get<ApspResult>(*seen.back().result).distances);
  // Oracle: plain Floyd-Warshall in double.
  std::vector<double> ref(g.begin(), g.end());
  for (std::int64_t i = 0; i < n; ++i) ref[i * n + i] = std::min(ref[i * n + i], 0.0);
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double ik = ref[i * n + k];
      if (std::isinf(ik)) continue;
      for (std::int64_t j = 0; j < n; ++j)
        ref[i * n + j] = std::min(ref[i * n + j], ik + ref[k * n + j]);
    }
  }
  for (std::int64_t e = 0; e < n * n; ++e) {
    ASSERT_EQ(static_cast<double>(d.as<float>()[e]), ref[e]) << "pair " << e / n << "," << e % n;
  }
}

TEST_F(JobsTest, CancelWhileRunningStopsTheKernelAtItsNextRound) {
  const Caller alice{"alice"};
  const std::int64_t n = 1600;  // 25 rounds; seconds of work on one thread
  auto job = jobs_->submit(alice, apsp_of(n, random_graph(n, 5)), {});
  ASSERT_TRUE(job.ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (jobs_->get(alice, job->id)->progress.fraction == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_EQ(jobs_->get(alice, job->id)->state, JobState::kRunning);
  const absl::Time asked = absl::Now();
  auto after = jobs_->cancel(alice, job->id);
  ASSERT_TRUE(after.ok());
  const JobView v = wait_final(alice, job->id);
  EXPECT_EQ(v.state, JobState::kCancelled) << v.status;
  EXPECT_EQ(v.status.code(), absl::StatusCode::kCancelled);
  EXPECT_NE(v.status.message().find("rounds"), std::string::npos) << v.status;
  EXPECT_LT(v.progress.fraction, 1.0);
  EXPECT_EQ(v.result, nullptr);
  // One round of n = 1600 on one thread takes well under 10 s.
  EXPECT_LT(v.finished - asked, absl::Seconds(10));
}

TEST_F(JobsTest, PerTenantLimitRefusesBeyondItAndOtherTenantsStillSubmit) {
  restart_jobs({.max_active_per_tenant = 2});
  block_worker();
  const Caller alice{"alice"}, bob{"bob"};
  ASSERT_TRUE(jobs_->submit(alice, transpose_of(1, 1, {1}), {}).ok());
  ASSERT_TRUE(jobs_->submit(alice, transpose_of(1, 1, {2}), {}).ok());
  auto third = jobs_->submit(alice, transpose_of(1, 1, {3}), {});
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("limit 2"), std::string::npos) << third.status();
  EXPECT_TRUE(jobs_->submit(bob, transpose_of(1, 1, {4}), {}).ok());
}

TEST_F(JobsTest, ListPagesOldestFirstAndRejectsBadArguments) {
  const Caller alice{"alice"};
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto s = jobs_->submit(alice, transpose_of(1, 1, {static_cast<float>(i)}), {});
    ASSERT_TRUE(s.ok());
    ids.push_back(s->id);
  }
  std::vector<std::string> listed;
  std::string token;
  int pages = 0;
  do {
    auto page = jobs_->list(alice, 2, token);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const JobView& v : page->jobs) {
      listed.push_back(v.id);
      EXPECT_EQ(v.result, nullptr);
    }
    token = page->next_page_token;
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(listed, ids);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(jobs_->list(alice, 1001, "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(jobs_->list(alice, -1, "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(jobs_->list(alice, 0, "not-a-token").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(JobsTest, FinishedJobsExpireAfterTheirTtl) {
  const Caller alice{"alice"};
  JobOptions short_ttl;
  short_ttl.ttl_seconds = 1;
  auto brief = jobs_->submit(alice, transpose_of(1, 1, {1}), short_ttl);
  auto kept = jobs_->submit(alice, transpose_of(1, 1, {2}), {});  // the default: an hour
  ASSERT_TRUE(brief.ok() && kept.ok());
  const JobView v = wait_final(alice, brief->id);
  ASSERT_EQ(v.state, JobState::kSucceeded);
  EXPECT_EQ(v.expires - v.finished, absl::Seconds(1));
  absl::SleepFor(v.expires - absl::Now() + absl::Milliseconds(100));
  EXPECT_EQ(jobs_->get(alice, brief->id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(jobs_->get(alice, kept->id).ok());
  JobOptions too_long;
  too_long.ttl_seconds = 7 * 24 * 3600 + 1;
  EXPECT_EQ(jobs_->submit(alice, transpose_of(1, 1, {1}), too_long).status().code(),
            absl::StatusCode::kInvalidArgument);
}

/// Keeps every record it is handed, in order; `fail` makes saves fail.
class RecordingJournal final : public JobJournal {
 public:
  std::shared_ptr<const std::string> encode_result(const JobView& view) override {
    if (view.result == nullptr) return nullptr;
    return std::make_shared<const std::string>("result of " + view.id);
  }
  absl::Status save(const JobRecord& record) override {
    std::lock_guard lock(mu);
    if (fail) return absl::InternalError("disk full");
    saved[record.id].push_back(record);
    return absl::OkStatus();
  }
  absl::Status erase(const std::string& id) override {
    std::lock_guard lock(mu);
    erased.push_back(id);
    return absl::OkStatus();
  }
  std::vector<JobState> states(const std::string& id) {
    std::lock_guard lock(mu);
    std::vector<JobState> out;
    for (const JobRecord& r : saved[id]) out.push_back(r.state);
    return out;
  }

  std::mutex mu;
  std::atomic<bool> fail{false};
  std::map<std::string, std::vector<JobRecord>> saved;
  std::vector<std::string> erased;
};

TEST_F(JobsTest, JournalGetsEachStateInOrderAndAFailedWriteRefusesTheSubmit) {
  RecordingJournal journal;
  restart_jobs({.journal = &journal});
  const Caller alice{"alice"};
  JobOptions options;
  options.submission = std::make_shared<const std::string>("the request");
  options.client_job_key = "k1";
  options.ttl_seconds = 1;
  auto done = jobs_->submit(alice, transpose_of(1, 2, {1, 2}), options);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(wait_final(alice, done->id).state, JobState::kSucceeded);
  // The final record is written before the final state becomes visible: no wait here.
  const std::vector<JobState> expected = {JobState::kQueued, JobState::kRunning,
                                          JobState::kSucceeded};
  EXPECT_EQ(journal.states(done->id), expected);
  {
    std::lock_guard lock(journal.mu);
    const std::vector<JobRecord>& records = journal.saved[done->id];
    ASSERT_EQ(records.size(), 3u);
    ASSERT_NE(records[0].submission, nullptr);
    EXPECT_EQ(*records[0].submission, "the request");
    EXPECT_EQ(records[0].tenant, "alice");
    EXPECT_EQ(records[0].client_job_key, "k1");
    EXPECT_EQ(records[0].ttl, absl::Seconds(1));
    EXPECT_EQ(records[1].submission, nullptr);
    EXPECT_NE(records[1].started, absl::InfinitePast());
    ASSERT_NE(records[2].result, nullptr);
    EXPECT_EQ(*records[2].result, "result of " + done->id);
  }

  // Expiry erases the record (the ticker, within a tick of the expiry).
  const absl::Time end = absl::Now() + absl::Seconds(10);
  for (;;) {
    {
      std::lock_guard lock(journal.mu);
      if (!journal.erased.empty() || absl::Now() > end) break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  {
    std::lock_guard lock(journal.mu);
    EXPECT_EQ(journal.erased, std::vector<std::string>{done->id});
  }

  journal.fail = true;
  auto refused = jobs_->submit(alice, transpose_of(1, 1, {3}), options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(refused.status().message().find("cannot record the job in --data-dir: disk full"),
            std::string::npos)
      << refused.status();
  auto page = jobs_->list(alice, 0, "");
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->jobs.empty()) << page->jobs.size() << " jobs listed";
  // The key was not taken by the refused job.
  journal.fail = false;
  auto again = jobs_->submit(alice, transpose_of(1, 1, {3}), options);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->existing);
  // The last job may still be running and saving to the journal: the manager goes first.
  jobs_.reset();
}

TEST_F(JobsTest, StopAllLeavesRecordsWhileCancelRecordsTheCancellation) {
  RecordingJournal journal;
  restart_jobs({.journal = &journal});
  block_worker();
  const Caller alice{"alice"};
  auto cancelled = jobs_->submit(alice, transpose_of(1, 1, {1}), {});
  auto stopped = jobs_->submit(alice, transpose_of(1, 1, {2}), {});
  ASSERT_TRUE(cancelled.ok() && stopped.ok());
  ASSERT_TRUE(jobs_->cancel(alice, cancelled->id).ok());
  jobs_->stop_all();
  EXPECT_EQ(jobs_->get(alice, stopped->id)->state, JobState::kCancelled);
  release_.Notify();
  jobs_.reset();  // waits until the engine has discarded both
  EXPECT_EQ(journal.states(cancelled->id),
            (std::vector<JobState>{JobState::kQueued, JobState::kCancelled}));
  EXPECT_EQ(journal.states(stopped->id), std::vector<JobState>{JobState::kQueued});
}

}  // namespace
}  // namespace gcompute::server::ops
