// SPDX-License-Identifier: Apache-2.0
// Jobs on the CUDA backend (label gpu): an APSP of 8192 vertices with next hops submitted on one
// channel, watched on a second (progress from the kernel's rounds) and collected on a third as
// stored results; a cancel that stops such a job within 50 ms; and, with one lane so that jobs
// queue, idempotent resubmission, TTL expiry, a restart with --data-dir, and two tenants
// taking turns under a backlog of 1,000. Distances are checked against Dijkstra in double from
// sampled sources, next hops by walking one step of each sampled pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "security/tokens.hpp"
#include "service_fixture.hpp"
#include "sssp_service_check.hpp"
#include "stored_graph_apsp_check.hpp"
#include "support/gpu.hpp"

namespace gcompute::service_test {
namespace {

constexpr std::int64_t kVertices = 8192;

struct Graph {
  std::int64_t n = 0;
  std::vector<std::int64_t> src, dst;
  std::vector<double> weight;
};

/// Out-degree 4 and integer weights 1..9: every distance is an exact f32 integer.
Graph random_graph(std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int64_t> vertex(0, n - 1);
  std::uniform_int_distribution<int> w(1, 9);
  Graph g;
  g.n = n;
  for (std::int64_t v = 0; v < n; ++v) {
    for (int e = 0; e < 4; ++e) {
      g.src.push_back(v);
      g.dst.push_back(vertex(rng));
      g.weight.push_back(w(rng));
    }
  }
  return g;
}

/// g with one zero-weight edge, which keeps its APSP with next hops on the fused kernel (about
/// 0.4 s at 8192 vertices and 3 s at 16384 on an H100, against 0.05 s and 0.4 s where next hops
/// come from the distances): long enough to watch, cancel and queue behind.
Graph slow_for_next_hops(Graph g) {
  for (std::size_t e = 0; e < g.src.size(); ++e) {
    if (g.src[e] != g.dst[e]) {  // a zero self-loop would not do
      g.weight[e] = 0;
      break;
    }
  }
  return g;
}

std::vector<double> dijkstra(const Graph& g, std::int64_t source) {
  std::vector<std::vector<std::pair<std::int64_t, double>>> out(static_cast<std::size_t>(g.n));
  for (std::size_t e = 0; e < g.src.size(); ++e) out[g.src[e]].push_back({g.dst[e], g.weight[e]});
  std::vector<double> d(static_cast<std::size_t>(g.n), std::numeric_limits<double>::infinity());
  using Item = std::pair<double, std::int64_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> q;
  d[source] = 0;
  q.push({0, source});
  while (!q.empty()) {
    auto [dv, v] = q.top();
    q.pop();
    if (dv > d[v]) continue;
    for (auto [u, w] : out[v]) {
      if (dv + w < d[u]) {
        d[u] = dv + w;
        q.push({d[u], u});
      }
    }
  }
  return d;
}

v1::SubmitJobRequest apsp_job(const Graph& g) {
  v1::SubmitJobRequest req;
  v1::ApspRequest* apsp = req.mutable_apsp();
  v1::EdgeList* edges = apsp->mutable_edges();
  edges->set_num_vertices(g.n);
  for (std::size_t e = 0; e < g.src.size(); ++e) {
    edges->add_src(g.src[e]);
    edges->add_dst(g.dst[e]);
    edges->add_weight(g.weight[e]);
  }
  apsp->set_next_hop(true);
  apsp->mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  return req;
}

std::unique_ptr<v1::Compute::Stub> new_stub(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
  return v1::Compute::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
}

// GPU jobs (APSP of 8192 vertices and more) get longer than the fixture's default.
constexpr double kGpuDeadlineSeconds = 300;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class ServiceJobsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    GC_REQUIRE_GPU();
    ServerOptions o = test_options();
    o.device = "cuda";
    o.workers = 1;
    ts_ = start_server(o);
    ASSERT_NE(ts_, nullptr);
  }

  std::string submit(v1::Compute::Stub& stub, const v1::SubmitJobRequest& req) {
    grpc::ClientContext ctx;
    deadline(ctx, kGpuDeadlineSeconds);
    v1::SubmitJobResponse resp;
    EXPECT_TRUE(is_ok(stub.SubmitJob(&ctx, req, &resp)));
    return resp.job_id();
  }

  v1::Job get(v1::Compute::Stub& stub, const std::string& id) {
    grpc::ClientContext ctx;
    deadline(ctx, kGpuDeadlineSeconds);
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job job;
    EXPECT_TRUE(is_ok(stub.GetJob(&ctx, req, &job)));
    return job;
  }

  std::unique_ptr<TestServer> ts_;
};

TEST_F(ServiceJobsGpu, ApspOf8192WithNextHopsWatchedAndCollectedElsewhere) {
  const Graph g = slow_for_next_hops(random_graph(kVertices, 12));
  std::string id;
  {
    auto submitter = new_stub(ts_->target());
    id = submit(*submitter, apsp_job(g));
  }
  ASSERT_FALSE(id.empty());

  auto watcher = new_stub(ts_->target());
  std::vector<v1::Job> seen;
  ASSERT_TRUE(is_ok(watch_job(*watcher, id, 300, &seen)));
  ASSERT_FALSE(seen.empty());
  const v1::Job& last = seen.back();
  ASSERT_EQ(last.state(), v1::JOB_STATE_SUCCEEDED) << last.error_message();
  int progress_events = 0;
  double previous = 0;
  for (const v1::Job& j : seen) {
    if (j.state() != v1::JOB_STATE_RUNNING) continue;
    EXPECT_GE(j.progress().fraction(), previous);
    if (j.progress().fraction() > previous) ++progress_events;
    previous = j.progress().fraction();
    if (j.progress().fraction() > 0) {
      EXPECT_NE(j.progress().detail().find("round "), std::string::npos) << j.progress().detail();
    }
  }
  std::printf("watch: %zu messages, %d progress events, %lld ms running\n", seen.size(),
              progress_events,
              static_cast<long long>(last.finished_unix_ms() - last.started_unix_ms()));
  EXPECT_GE(progress_events, 10);

  auto collector = new_stub(ts_->target());
  const v1::Job collected = get(*collector, id);
  ASSERT_TRUE(collected.result().apsp().distances().has_stored());
  ASSERT_TRUE(collected.result().apsp().next_hop().has_stored());
  const std::vector<float> d =
      download_values<float>(*collector, collected.result().apsp().distances().stored().ref());
  const std::vector<std::int32_t> nh = download_values<std::int32_t>(
      *collector, collected.result().apsp().next_hop().stored().ref());
  const std::size_t n = static_cast<std::size_t>(kVertices);
  ASSERT_EQ(d.size(), n * n);
  ASSERT_EQ(nh.size(), n * n);

  // Weight of the lightest edge i -> j (parallel edges keep the lightest).
  std::vector<std::vector<std::pair<std::int64_t, double>>> out(n);
  for (std::size_t e = 0; e < g.src.size(); ++e) out[g.src[e]].push_back({g.dst[e], g.weight[e]});
  auto edge_weight = [&](std::int64_t i, std::int64_t j) {
    double best = std::numeric_limits<double>::infinity();
    for (auto [u, w] : out[i]) {
      if (u == j) best = std::min(best, w);
    }
    return best;
  };
  std::mt19937 rng(5);
  for (int s = 0; s < 16; ++s) {
    const std::int64_t source = std::uniform_int_distribution<std::int64_t>(0, kVertices - 1)(rng);
    const std::vector<double> want = dijkstra(g, source);
    for (std::int64_t t = 0; t < kVertices; ++t) {
      const float got = d[source * n + t];
      ASSERT_EQ(static_cast<double>(got), want[t]) << source << " -> " << t;
      const std::int32_t hop = nh[source * n + t];
      if (std::isinf(want[t])) {
        ASSERT_EQ(hop, -1);
      } else if (t == source) {
        ASSERT_EQ(hop, source);
      } else {
        ASSERT_GE(hop, 0);
        ASSERT_EQ(edge_weight(source, hop) + d[hop * n + t], want[t]) << source << " -> " << t;
      }
    }
  }
}

TEST_F(ServiceJobsGpu, StoredGraphApspFromTheDeviceUpdatedAfterInsertions) {
  GC_SEEDED_RNG(rng);
  expect_incremental_stored_apsp(*ts_, rng);
}

// Positive integer weights: both backends derive next hops from the distances by the same rule
// (kApspNextHopCandidates), so distances and next hops must be equal element for element.
TEST_F(ServiceJobsGpu, ApspNextHopsEqualTheCpuBackends) {
  ServerOptions o = test_options();
  o.device = "cpu";
  auto cpu = start_server(o);
  ASSERT_NE(cpu, nullptr);
  for (const std::int64_t n : {1000, 1500}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    v1::SubmitJobRequest job = apsp_job(random_graph(n, static_cast<std::uint32_t>(n)));
    job.mutable_apsp()->mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_INLINE);
    const v1::ApspRequest& req = job.apsp();
    v1::ApspResponse on_gpu, on_cpu;
    {
      grpc::ClientContext ctx;
      deadline(ctx, kGpuDeadlineSeconds);
      ASSERT_TRUE(is_ok(ts_->stub->Apsp(&ctx, req, &on_gpu)));
    }
    {
      grpc::ClientContext ctx;
      deadline(ctx, kGpuDeadlineSeconds);
      ASSERT_TRUE(is_ok(cpu->stub->Apsp(&ctx, req, &on_cpu)));
    }
    EXPECT_EQ(on_gpu.stats().device().rfind("cuda", 0), 0u) << on_gpu.stats().device();
    EXPECT_EQ(values_of<float>(on_gpu.distances().inline_()),
              values_of<float>(on_cpu.distances().inline_()));
    const auto n_gpu = values_of<std::int32_t>(on_gpu.next_hop().inline_());
    const auto n_cpu = values_of<std::int32_t>(on_cpu.next_hop().inline_());
    ASSERT_EQ(n_gpu.size(), static_cast<std::size_t>(n * n));
    std::int64_t differ = 0;
    for (std::size_t e = 0; e < n_gpu.size(); ++e) {
      if (n_gpu[e] != n_cpu[e] && differ++ < 5) {
        ADD_FAILURE() << "N[" << e / n << "][" << e % n << "]: cuda " << n_gpu[e] << ", cpu "
                      << n_cpu[e];
      }
    }
    EXPECT_EQ(differ, 0);
  }
}

// --device-graph-copies=false: no copy on the GPU, the same answers from the host copy.
TEST(ServiceGpuWithoutGraphCopies, StoredGraphQueriesAnswerFromTheHostCopy) {
  GC_REQUIRE_GPU();
  ServerOptions o = test_options();
  o.device = "cuda";
  o.device_graph_copies = false;
  const std::unique_ptr<TestServer> ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(ts->server->graph_mirror(), nullptr);
  GC_SEEDED_RNG(rng);
  expect_incremental_stored_apsp(*ts, rng);
  expect_sssp_of_stored_graph(*ts, rng, "sssp-host-copy");
}

TEST_F(ServiceJobsGpu, SsspOnTheDeviceMatchesBellmanFord) {
  GC_SEEDED_RNG(rng);
  expect_sssp_of_edge_lists(*ts_, rng);
  expect_sssp_of_stored_graph(*ts_, rng, "sssp-gpu");
}

// Non-integer weights: each backend's distance is the least f32 sum added from the source, so
// the two must agree bit for bit, not just within a tolerance.
TEST_F(ServiceJobsGpu, SsspDistancesEqualTheCpuBackendsBitForBit) {
  GC_SEEDED_RNG(rng);
  ServerOptions o = test_options();
  o.device = "cpu";
  auto cpu = start_server(o);
  ASSERT_NE(cpu, nullptr);
  const std::int64_t n = 20000;
  // w = c + p(u) - p(v), c >= 0.01: negative edges, every cycle at least 0.01 per edge long.
  std::vector<double> pot(static_cast<std::size_t>(n));
  for (double& p : pot) p = rng.uniform(0, 2);
  std::vector<WeightedEdge> edges;
  for (std::int64_t e = 0; e < 8 * n; ++e) {
    const std::int64_t a = rng.uniform_int(0, n - 1), b = rng.uniform_int(0, n - 1);
    edges.push_back({a, b, rng.uniform(0.01, 4) + pot[a] - pot[b]});
  }
  const v1::SsspRequest req = sssp_edges_request(n, edges, 7);
  v1::SsspResponse on_gpu, on_cpu;
  ASSERT_TRUE(is_ok(call_sssp(*ts_, req, &on_gpu)));
  ASSERT_TRUE(is_ok(call_sssp(*cpu, req, &on_cpu)));
  EXPECT_EQ(on_gpu.stats().device().rfind("cuda", 0), 0u) << on_gpu.stats().device();
  const auto d_gpu = values_of<float>(on_gpu.distances().inline_());
  const auto d_cpu = values_of<float>(on_cpu.distances().inline_());
  ASSERT_EQ(d_gpu.size(), d_cpu.size());
  std::int64_t differ = 0;
  for (std::size_t v = 0; v < d_gpu.size(); ++v) {
    if (std::memcmp(&d_gpu[v], &d_cpu[v], sizeof(float)) != 0 && differ++ < 5) {
      ADD_FAILURE() << "row " << v << ": cuda " << d_gpu[v] << ", cpu " << d_cpu[v];
    }
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(on_gpu.reachable(), on_cpu.reachable());
  EXPECT_GT(on_gpu.reachable(), n / 2);
}

TEST_F(ServiceJobsGpu, CancelStopsARunningApspWithin50Ms) {
  auto stub = new_stub(ts_->target());
  const std::string id = submit(*stub, apsp_job(slow_for_next_hops(random_graph(kVertices, 13))));
  // Running, with the first rounds reported.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  v1::Job job = get(*stub, id);
  while (job.progress().fraction() <= 0 && job.state() <= v1::JOB_STATE_RUNNING &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    job = get(*stub, id);
  }
  ASSERT_EQ(job.state(), v1::JOB_STATE_RUNNING) << "the job ended before it could be cancelled";
  const std::int64_t cancelled_at = now_ms();
  {
    grpc::ClientContext ctx;
    deadline(ctx, kGpuDeadlineSeconds);
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::CancelJobResponse resp;
    ASSERT_TRUE(is_ok(stub->CancelJob(&ctx, req, &resp)));
  }
  while (job.state() <= v1::JOB_STATE_RUNNING && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    job = get(*stub, id);
  }
  ASSERT_EQ(job.state(), v1::JOB_STATE_CANCELLED) << job.error_message();
  EXPECT_NE(job.error_message().find("apsp cancelled after pivot block"), std::string::npos)
      << job.error_message();
  const std::int64_t stop_ms = job.finished_unix_ms() - cancelled_at;
  std::printf("cancel: stopped %lld ms after CancelJob (%s)\n", static_cast<long long>(stop_ms),
              job.error_message().c_str());
  EXPECT_LE(stop_ms, 50);
}

/// An APSP with next hops of 16384 vertices on the fused kernel: about 3 s on an H100, long
/// enough for other jobs to queue behind it on one lane.
v1::SubmitJobRequest long_job() {
  return apsp_job(slow_for_next_hops(random_graph(16384, 21)));
}

v1::SubmitJobRequest transpose_job(float value, const std::string& key = "", int ttl = 0) {
  v1::SubmitJobRequest req;
  *req.mutable_transpose()->mutable_a()->mutable_inline_() =
      make_matrix<float>(1, 2, {value, -value});
  req.set_client_job_key(key);
  req.set_ttl_seconds(ttl);
  return req;
}

constexpr char kTokenA[] = "gpu-jobs-token-of-tenant-a-0123";
constexpr char kTokenB[] = "gpu-jobs-token-of-tenant-b-4567";

/// A CUDA server with one lane (one job at a time), tokens for two tenants and a --data-dir.
class ServiceJobsGpuOneLane : public ::testing::Test {
 protected:
  void SetUp() override {
    GC_REQUIRE_GPU();
    char tmpl[] = "/tmp/gc-gpu-jobs-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ / "tokens") << "tenant-a " << server::sha256_hex(kTokenA) << "\n"
                                   << "tenant-b " << server::sha256_hex(kTokenB) << "\n";
    options_ = test_options();
    options_.device = "cuda";
    options_.lanes_per_device = 1;
    options_.security.auth_tokens = (dir_ / "tokens").string();
    options_.graph_data_dir = (dir_ / "data").string();
    ts_ = start_server(options_);
    ASSERT_NE(ts_, nullptr);
  }
  void TearDown() override {
    ts_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void restart() {
    ts_.reset();
    ts_ = start_server(options_);
    ASSERT_NE(ts_, nullptr);
  }

  /// A stub on a connection of its own for `token`'s tenant (a connection keeps one tenant).
  struct Caller {
    std::unique_ptr<v1::Compute::Stub> stub;
    const char* token;
    void prepare(grpc::ClientContext& ctx) const {
      deadline(ctx, kGpuDeadlineSeconds);
      ctx.AddMetadata("authorization", std::string("Bearer ") + token);
    }
    v1::SubmitJobResponse submit(const v1::SubmitJobRequest& req) const {
      grpc::ClientContext ctx;
      prepare(ctx);
      v1::SubmitJobResponse resp;
      EXPECT_TRUE(is_ok(stub->SubmitJob(&ctx, req, &resp)));
      return resp;
    }
    grpc::Status get(const std::string& id, v1::Job* job) const {
      grpc::ClientContext ctx;
      prepare(ctx);
      v1::GetJobRequest req;
      req.set_job_id(id);
      return stub->GetJob(&ctx, req, job);
    }
    v1::Job get(const std::string& id) const {
      v1::Job job;
      EXPECT_TRUE(is_ok(get(id, &job)));
      return job;
    }
    v1::Job wait_until(const std::string& id, v1::JobState at_least) const {
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      for (;;) {
        v1::Job job = get(id);
        if (job.state() >= at_least || std::chrono::steady_clock::now() > end) return job;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    void cancel(const std::string& id) const {
      grpc::ClientContext ctx;
      prepare(ctx);
      v1::CancelJobRequest req;
      req.set_job_id(id);
      v1::CancelJobResponse resp;
      EXPECT_TRUE(is_ok(stub->CancelJob(&ctx, req, &resp)));
    }
  };
  Caller caller(const char* token) const { return Caller{new_stub(ts_->target()), token}; }

  std::filesystem::path dir_;
  ServerOptions options_;
  std::unique_ptr<TestServer> ts_;
};

TEST_F(ServiceJobsGpuOneLane, SameKeyGivesTheSameJobAndFinishedJobsExpire) {
  const Caller a = caller(kTokenA);
  const v1::SubmitJobResponse first = a.submit(transpose_job(1, "gpu-key"));
  const v1::SubmitJobResponse again = a.submit(transpose_job(1, "gpu-key"));
  EXPECT_FALSE(first.existing());
  EXPECT_TRUE(again.existing());
  EXPECT_EQ(first.job_id(), again.job_id());
  const std::string short_lived = a.submit(transpose_job(2, "", /*ttl=*/1)).job_id();
  const v1::Job done = a.wait_until(short_lived, v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error_message();
  EXPECT_EQ(done.expires_unix_ms() - done.finished_unix_ms(), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  v1::Job gone;
  EXPECT_TRUE(has_status(a.get(short_lived, &gone), grpc::NOT_FOUND));
  EXPECT_EQ(a.get(first.job_id()).state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(ServiceJobsGpuOneLane, RestartWithDataDirKeepsFinishedQueuesQueuedAndFailsRunning) {
  const Caller a = caller(kTokenA);
  const std::string finished = a.submit(transpose_job(3)).job_id();
  ASSERT_EQ(a.wait_until(finished, v1::JOB_STATE_SUCCEEDED).state(), v1::JOB_STATE_SUCCEEDED);
  const std::string running = a.submit(long_job()).job_id();
  ASSERT_EQ(a.wait_until(running, v1::JOB_STATE_RUNNING).state(), v1::JOB_STATE_RUNNING);
  const std::string queued = a.submit(transpose_job(4)).job_id();
  ASSERT_EQ(a.get(queued).state(), v1::JOB_STATE_QUEUED);

  restart();
  const Caller after = caller(kTokenA);
  const v1::Job f = after.get(finished);
  ASSERT_EQ(f.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(values_of<float>(f.result().transpose().at().inline_()), (std::vector<float>{3, -3}));
  const v1::Job r = after.get(running);
  EXPECT_EQ(r.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(r.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(r.error_message().find("the server stopped while the job was running"),
            std::string::npos)
      << r.error_message();
  const v1::Job q = after.wait_until(queued, v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(q.state(), v1::JOB_STATE_SUCCEEDED) << q.error_message();
  EXPECT_EQ(values_of<float>(q.result().transpose().at().inline_()), (std::vector<float>{4, -4}));
}

TEST_F(ServiceJobsGpuOneLane, TwoTenantsTakeTurnsUnderABacklogOfAThousand) {
  const Caller a = caller(kTokenA);
  const Caller b = caller(kTokenB);
  const std::string blocker = a.submit(long_job()).job_id();
  ASSERT_EQ(a.wait_until(blocker, v1::JOB_STATE_RUNNING).state(), v1::JOB_STATE_RUNNING);
  std::vector<std::string> backlog;
  for (int i = 0; i < 1000; ++i) backlog.push_back(a.submit(transpose_job(5)).job_id());
  ASSERT_EQ(a.get(blocker).state(), v1::JOB_STATE_RUNNING) << "the backlog did not queue";
  const std::string other = b.submit(transpose_job(6)).job_id();
  a.cancel(blocker);
  const v1::Job theirs = b.wait_until(other, v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(theirs.state(), v1::JOB_STATE_SUCCEEDED) << theirs.error_message();
  // Round-robin between tenants: at most one of a's queued jobs runs before b's.
  int ahead = 0;
  for (const std::string& id : backlog) {
    const v1::Job mine = a.wait_until(id, v1::JOB_STATE_SUCCEEDED);
    ASSERT_EQ(mine.state(), v1::JOB_STATE_SUCCEEDED) << mine.error_message();
    if (mine.finished_unix_ms() < theirs.started_unix_ms()) ++ahead;
  }
  EXPECT_LE(ahead, 1);
}

}  // namespace
}  // namespace gcompute::service_test
