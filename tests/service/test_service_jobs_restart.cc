// SPDX-License-Identifier: Apache-2.0
// Jobs across a restart with --data-dir, through raw generated stubs against an in-process CPU
// server that is destroyed and started again on the same directory: finished jobs keep their
// inline results, timestamps, keys and ListJobs order; a queued job runs after the restart; a
// running one is FAILED with the reason; results over the kept size fail with DATA_LOSS;
// expiry removes the record (also while the server is down); another tenant still gets
// NOT_FOUND; a damaged record stops the server from starting.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "security/tokens.hpp"
#include "service_fixture.hpp"

namespace gcompute::service_test {
namespace {

namespace fs = std::filesystem;

constexpr char kTokenA[] = "restart-token-of-tenant-a-0123";
constexpr char kTokenB[] = "restart-token-of-tenant-b-4567";

/// An APSP of `n` vertices on a dense random graph: seconds of work on the CPU backend.
v1::SubmitJobRequest long_apsp_job(std::int64_t n) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> w(1, 9);
  std::vector<float> g(static_cast<std::size_t>(n * n), std::numeric_limits<float>::infinity());
  for (float& x : g) {
    if (rng() % 3 == 0) x = static_cast<float>(w(rng));
  }
  v1::SubmitJobRequest req;
  *req.mutable_apsp()->mutable_dense() = make_matrix<float>(n, n, g);
  return req;
}

std::vector<float> transposed(const std::vector<float>& a, std::int64_t rows, std::int64_t cols) {
  std::vector<float> t(a.size());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  }
  return t;
}

class ServiceJobsRestart : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/gc-jobs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    const fs::path tokens = fs::path(dir_) / "tokens";
    std::ofstream(tokens) << "tenant-a " << server::sha256_hex(kTokenA) << "\n"
                          << "tenant-b " << server::sha256_hex(kTokenB) << "\n";
    options_ = test_options();
    options_.workers = 1;
    options_.security.auth_tokens = tokens.string();
    options_.graph_data_dir = (fs::path(dir_) / "data").string();
    ts_ = start_server(options_);
    ASSERT_NE(ts_, nullptr);
  }
  void TearDown() override {
    ts_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Destroys the server (drain included) and starts a new one on the same directory.
  void restart() {
    ts_.reset();
    ts_ = start_server(options_);
    ASSERT_NE(ts_, nullptr);
  }

  fs::path record_of(const std::string& id) const {
    return fs::path(options_.graph_data_dir) / "jobs" / (id + ".job");
  }

  static void prepare(grpc::ClientContext& ctx, const char* token) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    ctx.AddMetadata("authorization", std::string("Bearer ") + token);
  }

  v1::SubmitJobResponse submit(const v1::SubmitJobRequest& req) {
    grpc::ClientContext ctx;
    prepare(ctx, kTokenA);
    v1::SubmitJobResponse resp;
    EXPECT_TRUE(is_ok(ts_->stub->SubmitJob(&ctx, req, &resp)));
    return resp;
  }

  grpc::Status get(const std::string& id, v1::Job* job) {
    grpc::ClientContext ctx;
    prepare(ctx, kTokenA);
    v1::GetJobRequest req;
    req.set_job_id(id);
    return ts_->stub->GetJob(&ctx, req, job);
  }

  /// GetJob as tenant-b, on a connection of its own (a connection keeps its first tenant).
  grpc::Status get_as_b(const std::string& id, v1::Job* job) {
    auto channel = grpc::CreateChannel(ts_->target(), grpc::InsecureChannelCredentials());
    grpc::ClientContext ctx;
    prepare(ctx, kTokenB);
    v1::GetJobRequest req;
    req.set_job_id(id);
    return v1::Compute::NewStub(channel)->GetJob(&ctx, req, job);
  }

  v1::Job get(const std::string& id) {
    v1::Job job;
    EXPECT_TRUE(is_ok(get(id, &job)));
    return job;
  }

  v1::Job wait_until(const std::string& id, v1::JobState at_least) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (;;) {
      v1::Job job = get(id);
      if (job.state() >= at_least || std::chrono::steady_clock::now() > end) return job;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  v1::ListJobsResponse list(int page_size, const std::string& token) {
    grpc::ClientContext ctx;
    prepare(ctx, kTokenA);
    v1::ListJobsRequest req;
    req.set_page_size(page_size);
    req.set_page_token(token);
    v1::ListJobsResponse resp;
    EXPECT_TRUE(is_ok(ts_->stub->ListJobs(&ctx, req, &resp)));
    return resp;
  }

  std::string dir_;
  ServerOptions options_;
  std::unique_ptr<TestServer> ts_;
};

TEST_F(ServiceJobsRestart, FinishedJobsKeepResultsKeysAndListOrder) {
  const std::int64_t rows = 3, cols = 5;
  const std::vector<float> a = random_floats(rows * cols, 1);
  v1::SubmitJobRequest keyed = transpose_job(rows, cols, a);
  keyed.set_client_job_key("nightly-1");
  const std::string first = submit(keyed).job_id();
  const std::string second = submit(transpose_job(1, 2, {4, 5})).job_id();
  const std::string third = submit(transpose_job(2, 1, {6, 7})).job_id();
  const v1::Job before = wait_until(first, v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(before.state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(wait_until(third, v1::JOB_STATE_SUCCEEDED).state(), v1::JOB_STATE_SUCCEEDED);
  const v1::ListJobsResponse page1 = list(2, "");
  ASSERT_EQ(page1.jobs_size(), 2);
  ASSERT_FALSE(page1.next_page_token().empty());
  EXPECT_TRUE(fs::exists(record_of(first)));

  restart();

  const v1::Job after = get(first);
  ASSERT_EQ(after.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(after.method(), "Transpose");
  EXPECT_EQ(after.client_job_key(), "nightly-1");
  EXPECT_EQ(after.created_unix_ms(), before.created_unix_ms());
  EXPECT_EQ(after.started_unix_ms(), before.started_unix_ms());
  EXPECT_EQ(after.finished_unix_ms(), before.finished_unix_ms());
  EXPECT_EQ(after.expires_unix_ms(), before.expires_unix_ms());
  ASSERT_TRUE(after.result().has_transpose());
  const v1::Matrix& out = after.result().transpose().at().inline_();
  EXPECT_EQ(out.rows(), cols);
  EXPECT_EQ(out.cols(), rows);
  EXPECT_EQ(values_of<float>(out), transposed(a, rows, cols));
  EXPECT_EQ(after.result().SerializeAsString(), before.result().SerializeAsString());

  // The key still names the same job.
  const v1::SubmitJobResponse again = submit(keyed);
  EXPECT_TRUE(again.existing());
  EXPECT_EQ(again.job_id(), first);

  // The page token issued before the restart goes on where it stopped; new jobs come last.
  const v1::ListJobsResponse page2 = list(2, page1.next_page_token());
  ASSERT_EQ(page2.jobs_size(), 1);
  EXPECT_EQ(page2.jobs(0).job_id(), third);
  const std::string fourth = submit(transpose_job(1, 1, {8})).job_id();
  const v1::ListJobsResponse all = list(10, "");
  ASSERT_EQ(all.jobs_size(), 4);
  EXPECT_EQ(all.jobs(0).job_id(), first);
  EXPECT_EQ(all.jobs(1).job_id(), second);
  EXPECT_EQ(all.jobs(2).job_id(), third);
  EXPECT_EQ(all.jobs(3).job_id(), fourth);
}

TEST_F(ServiceJobsRestart, QueuedJobRunsAndRunningJobFailsWithTheReason) {
  // One worker busy with a long APSP; a transpose waits behind it.
  const std::string running = submit(long_apsp_job(1800)).job_id();
  ASSERT_EQ(wait_until(running, v1::JOB_STATE_RUNNING).state(), v1::JOB_STATE_RUNNING);
  const std::vector<float> a = random_floats(4 * 3, 2);
  const std::string queued = submit(transpose_job(4, 3, a)).job_id();
  const v1::Job queued_before = get(queued);
  ASSERT_EQ(queued_before.state(), v1::JOB_STATE_QUEUED);

  const std::int64_t stopped_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count();
  restart();

  const v1::Job failed = get(running);
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(failed.error_message().find("the server stopped while the job was running (restart at"),
            std::string::npos)
      << failed.error_message();
  EXPECT_GT(failed.started_unix_ms(), 0);
  EXPECT_GE(failed.finished_unix_ms(), stopped_ms);
  EXPECT_FALSE(failed.has_result());

  const v1::Job done = wait_until(queued, v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error_message();
  EXPECT_EQ(done.created_unix_ms(), queued_before.created_unix_ms());
  EXPECT_GE(done.started_unix_ms(), stopped_ms);
  EXPECT_EQ(values_of<float>(done.result().transpose().at().inline_()), transposed(a, 4, 3));

  // Both outcomes are records too: a second restart returns them unchanged.
  restart();
  const v1::Job failed_again = get(running);
  EXPECT_EQ(failed_again.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(failed_again.error_message(), failed.error_message());
  EXPECT_EQ(failed_again.finished_unix_ms(), failed.finished_unix_ms());
  EXPECT_EQ(get(queued).result().SerializeAsString(), done.result().SerializeAsString());
}

TEST_F(ServiceJobsRestart, ResultsOverTheKeptSizeFailWithDataLoss) {
  // 1024 x 1100 floats: a 4.5 MB inline result, over the 4 MiB kept across a restart.
  const std::int64_t rows = 1024, cols = 1100;
  const std::string big = submit(transpose_job(rows, cols, random_floats(rows * cols, 3))).job_id();
  const v1::Job before = wait_until(big, v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(before.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(before.result().has_transpose());

  restart();

  const v1::Job after = get(big);
  EXPECT_EQ(after.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(after.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_NE(after.error_message().find("too large to keep across the restart"), std::string::npos)
      << after.error_message();
  EXPECT_FALSE(after.has_result());
  EXPECT_EQ(after.finished_unix_ms(), before.finished_unix_ms());
}

TEST_F(ServiceJobsRestart, ExpiryRemovesTheRecordAlsoWhileTheServerIsDown) {
  v1::SubmitJobRequest req = transpose_job(1, 1, {7});
  req.set_ttl_seconds(1);
  const std::string live = submit(req).job_id();
  ASSERT_EQ(wait_until(live, v1::JOB_STATE_SUCCEEDED).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(fs::exists(record_of(live)));
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fs::exists(record_of(live)) && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(fs::exists(record_of(live)));
  v1::Job gone;
  EXPECT_TRUE(has_status(get(live, &gone), grpc::NOT_FOUND, {live}));

  const std::string down = submit(req).job_id();
  ASSERT_EQ(wait_until(down, v1::JOB_STATE_SUCCEEDED).state(), v1::JOB_STATE_SUCCEEDED);
  ts_.reset();
  ASSERT_TRUE(fs::exists(record_of(down)));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  ts_ = start_server(options_);
  ASSERT_NE(ts_, nullptr);
  EXPECT_FALSE(fs::exists(record_of(down)));
  EXPECT_TRUE(has_status(get(down, &gone), grpc::NOT_FOUND, {down}));
}

TEST_F(ServiceJobsRestart, AnotherTenantStillGetsNotFound) {
  const std::string id = submit(transpose_job(1, 1, {3})).job_id();
  ASSERT_EQ(wait_until(id, v1::JOB_STATE_SUCCEEDED).state(), v1::JOB_STATE_SUCCEEDED);
  restart();
  v1::Job job;
  EXPECT_TRUE(has_status(get_as_b(id, &job), grpc::NOT_FOUND, {id}));
  EXPECT_TRUE(is_ok(get(id, &job)));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(ServiceJobsRestart, DamagedRecordStopsTheStartAndNamesTheFile) {
  const std::string id = submit(transpose_job(1, 1, {3})).job_id();
  ASSERT_EQ(wait_until(id, v1::JOB_STATE_SUCCEEDED).state(), v1::JOB_STATE_SUCCEEDED);
  ts_.reset();
  // A write a crash cut short leaves only a temporary file: removed, the record stands.
  const fs::path leftover = fs::path(record_of(id)).concat(".tmp");
  std::ofstream(leftover) << "half a record";
  ts_ = start_server(options_);
  ASSERT_NE(ts_, nullptr);
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_EQ(get(id).state(), v1::JOB_STATE_SUCCEEDED);
  ts_.reset();

  std::ofstream(record_of(id), std::ios::trunc) << "\xff\xff\xff not a record";
  auto refused = server::Server::create(options_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find(record_of(id).string()), std::string::npos)
      << refused.status();

  // A record under another job's name is damage too.
  const fs::path renamed = record_of("j-00000000000000000000000000000000");
  fs::remove(record_of(id));
  ts_ = start_server(options_);
  ASSERT_NE(ts_, nullptr);
  const std::string other = submit(transpose_job(1, 1, {4})).job_id();
  ASSERT_EQ(wait_until(other, v1::JOB_STATE_SUCCEEDED).state(), v1::JOB_STATE_SUCCEEDED);
  ts_.reset();
  fs::rename(record_of(other), renamed);
  refused = server::Server::create(options_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find(other), std::string::npos) << refused.status();

  // Moving the file away, as the message says, lets the server start without that job.
  fs::remove(renamed);
  ts_ = start_server(options_);
  ASSERT_NE(ts_, nullptr);
  v1::Job job;
  EXPECT_TRUE(has_status(get(other, &job), grpc::NOT_FOUND));
}

}  // namespace
}  // namespace gcompute::service_test
