// SPDX-License-Identifier: Apache-2.0
// Jobs through raw generated stubs against an in-process CPU server: submit from one channel
// and watch and collect from another, stored results for DownloadMatrix, idempotent resubmits,
// cancel of a running APSP, HIGH ahead of queued NORMAL jobs, TTL expiry, errors and metrics.
// Results are checked against plain loops (transpose) and textbook Floyd-Warshall in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "service_fixture.hpp"
#include "support/oracle.hpp"

namespace gcompute::service_test {
namespace {

/// A dense random digraph with integer weights (exact sums in f32) and +inf for no edge.
std::vector<double> integer_digraph(std::int64_t n, std::uint64_t seed) {
  gcompute::testing::Rng rng(seed);
  return random_digraph(rng, n, 0.3, /*negative=*/false, /*integer=*/true);
}

v1::SubmitJobRequest apsp_job(std::int64_t n, const std::vector<double>& g) {
  v1::SubmitJobRequest req;
  *req.mutable_apsp()->mutable_dense() = make_matrix<float>(n, n, {g.begin(), g.end()});
  return req;
}

class ServiceJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o = test_options();
    o.workers = 1;
    ts_ = start_server(o);
    ASSERT_NE(ts_, nullptr);
  }
  v1::Compute::Stub& stub() { return *ts_->stub; }

  std::string submit(v1::SubmitJobRequest req, v1::Compute::Stub* via = nullptr) {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::SubmitJobResponse resp;
    grpc::Status st = (via ? via : &stub())->SubmitJob(&ctx, req, &resp);
    EXPECT_TRUE(is_ok(st));
    return resp.job_id();
  }

  v1::Job get(const std::string& id) {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job job;
    EXPECT_TRUE(is_ok(stub().GetJob(&ctx, req, &job)));
    return job;
  }

  v1::Job wait_final(const std::string& id) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      v1::Job job = get(id);
      if (job.state() >= v1::JOB_STATE_SUCCEEDED || std::chrono::steady_clock::now() > end) {
        return job;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::unique_ptr<TestServer> ts_;
};

TEST_F(ServiceJobs, SubmittedOnOneChannelWatchedAndCollectedOnAnother) {
  const std::int64_t n = 211;  // prime: 4 rounds, the last ragged
  const std::vector<double> g = integer_digraph(n, 3);
  std::string id;
  {
    // The submitter goes away right after submitting.
    auto channel = grpc::CreateChannel(ts_->target(), grpc::InsecureChannelCredentials());
    auto submitter = v1::Compute::NewStub(channel);
    id = submit(apsp_job(n, g), submitter.get());
  }
  ASSERT_EQ(id.size(), 34u);
  auto channel = grpc::CreateChannel(ts_->target(), grpc::InsecureChannelCredentials());
  auto watcher = v1::Compute::NewStub(channel);
  std::vector<v1::Job> seen;
  ASSERT_TRUE(is_ok(watch_job(*watcher, id, 120, &seen)));
  ASSERT_FALSE(seen.empty());
  const v1::Job& last = seen.back();
  EXPECT_EQ(last.state(), v1::JOB_STATE_SUCCEEDED) << last.error_message();
  EXPECT_EQ(last.method(), "Apsp");
  EXPECT_EQ(last.progress().fraction(), 1.0);
  EXPECT_GT(last.finished_unix_ms(), 0);
  EXPECT_GT(last.expires_unix_ms(), last.finished_unix_ms());
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_LT(seen[i].state(), v1::JOB_STATE_SUCCEEDED) << "a final state before the last";
    EXPECT_LE(seen[i].progress().fraction(), seen[i + 1].progress().fraction());
  }
  ASSERT_TRUE(last.result().has_apsp());
  const std::vector<float> d = values_of<float>(last.result().apsp().distances().inline_());
  const std::vector<double> ref = gcompute::testing::floyd_warshall_reference(g, n);
  ASSERT_EQ(d.size(), ref.size());
  for (std::size_t e = 0; e < d.size(); ++e) ASSERT_EQ(d[e], ref[e]) << "pair " << e;
  // GetJob returns the same inline result again, until the job expires.
  const v1::Job again = get(id);
  EXPECT_EQ(again.result().apsp().distances().inline_().data(),
            last.result().apsp().distances().inline_().data());
}

TEST_F(ServiceJobs, StoredResultsAreRefsForDownloadMatrix) {
  const std::int64_t rows = 5, cols = 3;
  const std::vector<float> a = random_floats(rows * cols, 9);
  v1::SubmitJobRequest req = transpose_job(rows, cols, a);
  req.mutable_transpose()->mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  const v1::Job job = wait_final(submit(req));
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error_message();
  ASSERT_TRUE(job.result().transpose().at().has_stored());
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::DownloadMatrixRequest dl;
  *dl.mutable_ref() = job.result().transpose().at().stored().ref();
  auto reader = stub().DownloadMatrix(&ctx, dl);
  v1::DownloadMatrixResponse part;
  std::string bytes;
  while (reader->Read(&part)) {
    if (part.has_chunk()) bytes += part.chunk().data();
  }
  ASSERT_TRUE(is_ok(reader->Finish()));
  ASSERT_EQ(bytes.size(), a.size() * sizeof(float));
  std::vector<float> at(a.size());
  std::memcpy(at.data(), bytes.data(), bytes.size());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) ASSERT_EQ(at[j * rows + i], a[i * cols + j]);
  }
}

TEST_F(ServiceJobs, ResubmittingWithTheSameKeyReturnsTheSameJob) {
  v1::SubmitJobRequest req = transpose_job(1, 3, {1, 2, 3});
  req.set_client_job_key("retry-me");
  v1::SubmitJobResponse first, second;
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    ASSERT_TRUE(is_ok(stub().SubmitJob(&ctx, req, &first)));
  }
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    ASSERT_TRUE(is_ok(stub().SubmitJob(&ctx, req, &second)));
  }
  EXPECT_FALSE(first.existing());
  EXPECT_TRUE(second.existing());
  EXPECT_EQ(first.job_id(), second.job_id());
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::ListJobsResponse list;
  ASSERT_TRUE(is_ok(stub().ListJobs(&ctx, v1::ListJobsRequest(), &list)));
  ASSERT_EQ(list.jobs_size(), 1);
  EXPECT_EQ(list.jobs(0).client_job_key(), "retry-me");
}

TEST_F(ServiceJobs, CancelStopsARunningApsp) {
  const std::int64_t n = 1800;  // seconds of work on the CPU backend
  const std::string id = submit(apsp_job(n, integer_digraph(n, 4)));
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (get(id).state() == v1::JOB_STATE_QUEUED && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::CancelJobRequest req;
  req.set_job_id(id);
  v1::CancelJobResponse resp;
  ASSERT_TRUE(is_ok(stub().CancelJob(&ctx, req, &resp)));
  const v1::Job job = wait_final(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(job.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_NE(job.error_message().find("rounds"), std::string::npos) << job.error_message();
  EXPECT_FALSE(job.has_result());
}

TEST_F(ServiceJobs, HighPriorityRunsBeforeQueuedNormalJobs) {
  // One worker, busy with a long APSP; then 8 NORMAL jobs and one HIGH job queue up.
  const std::int64_t n = 1200;
  const std::string blocker = submit(apsp_job(n, integer_digraph(n, 8)));
  while (get(blocker).state() == v1::JOB_STATE_QUEUED) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<std::string> normal;
  for (int i = 0; i < 8; ++i) normal.push_back(submit(transpose_job(1, 1, {1.0f * i})));
  v1::SubmitJobRequest high = transpose_job(1, 1, {42});
  high.set_priority(v1::JOB_PRIORITY_HIGH);
  const std::string high_id = submit(high);
  const v1::Job h = wait_final(high_id);
  ASSERT_EQ(h.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(h.priority(), v1::JOB_PRIORITY_HIGH);
  for (const std::string& id : normal) {
    const v1::Job j = wait_final(id);
    ASSERT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED);
    EXPECT_GE(j.started_unix_ms(), h.finished_unix_ms()) << "a NORMAL job ran before the HIGH one";
  }
}

TEST_F(ServiceJobs, FinishedJobsExpireAfterTheirTtl) {
  v1::SubmitJobRequest req = transpose_job(1, 1, {7});
  req.set_ttl_seconds(1);
  const std::string id = submit(req);
  const v1::Job job = wait_final(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.expires_unix_ms() - job.finished_unix_ms(), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::GetJobRequest get_req;
  get_req.set_job_id(id);
  v1::Job gone;
  EXPECT_TRUE(has_status(stub().GetJob(&ctx, get_req, &gone), grpc::NOT_FOUND, {id}));
}

TEST_F(ServiceJobs, ErrorsNameTheFieldAndTheValue) {
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::SubmitJobResponse resp;
    EXPECT_TRUE(has_status(stub().SubmitJob(&ctx, v1::SubmitJobRequest(), &resp),
                           grpc::INVALID_ARGUMENT, {"op is not set"}));
  }
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::SubmitJobRequest req = transpose_job(1, 1, {1});
    req.set_priority(static_cast<v1::JobPriority>(7));
    v1::SubmitJobResponse resp;
    EXPECT_TRUE(
        has_status(stub().SubmitJob(&ctx, req, &resp), grpc::INVALID_ARGUMENT, {"priority = 7"}));
  }
  {
    // The operation's own validation, as its unary RPC reports it.
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::SubmitJobRequest req;
    *req.mutable_apsp()->mutable_dense() = make_matrix<float>(2, 3, std::vector<float>(6, 1));
    v1::SubmitJobResponse resp;
    EXPECT_TRUE(has_status(stub().SubmitJob(&ctx, req, &resp), grpc::INVALID_ARGUMENT, {"2x3"}));
  }
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::WatchJobRequest req;
    req.set_job_id("j-nope");
    auto reader = stub().WatchJob(&ctx, req);
    v1::Job job;
    EXPECT_FALSE(reader->Read(&job));
    EXPECT_TRUE(has_status(reader->Finish(), grpc::NOT_FOUND, {"j-nope"}));
  }
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::CancelJobRequest req;
    req.set_job_id("j-nope");
    v1::CancelJobResponse resp;
    EXPECT_TRUE(has_status(stub().CancelJob(&ctx, req, &resp), grpc::NOT_FOUND, {"j-nope"}));
  }
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::ListJobsRequest req;
    req.set_page_size(5000);
    v1::ListJobsResponse resp;
    EXPECT_TRUE(has_status(stub().ListJobs(&ctx, req, &resp), grpc::INVALID_ARGUMENT,
                           {"page_size = 5000"}));
  }
  EXPECT_TRUE(still_serving(stub()));
}

TEST_F(ServiceJobs, MetricsCountJobsByStateAndTimeThemPerOperation) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(wait_final(submit(transpose_job(2, 2, {1, 2, 3, 4}))).state(),
              v1::JOB_STATE_SUCCEEDED);
  }
  const auto samples = parse_metrics(http_get(ts_->server->metrics_port(), "/metrics"));
  EXPECT_EQ(metric_value(samples, "gcompute_jobs", {{"state", "SUCCEEDED"}}), 3);
  EXPECT_EQ(metric_value(samples, "gcompute_jobs", {{"state", "QUEUED"}}), 0);
  EXPECT_EQ(metric_value(samples, "gcompute_job_duration_seconds_count", {{"method", "Transpose"}}),
            3);
  EXPECT_EQ(
      metric_value(samples, "gcompute_job_queue_wait_seconds_count", {{"method", "Transpose"}}), 3);
}

}  // namespace
}  // namespace gcompute::service_test
