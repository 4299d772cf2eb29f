// SPDX-License-Identifier: Apache-2.0
// Hostile requests, overload and shutdown (docs/reliability.md): admission before
// allocation, idle uploads, the bound of calls without a deadline, drain, cancellation inside
// long kernels, empty batches and health under load. Each case names the limit it hits.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include "service_fixture.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Resident memory of this process (the server runs in it).
double rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib / 1024;
    }
  }
  return 0;
}

/// An APSP over an edge list of `n` vertices and one edge: a few bytes that ask for n^2 work.
v1::ApspRequest edge_apsp(std::int64_t n, bool next_hop = false) {
  v1::ApspRequest r;
  auto* e = r.mutable_edges();
  e->set_num_vertices(n);
  e->add_src(0);
  e->add_dst(1);
  e->add_weight(1.0);
  e->set_dtype(v1::DTYPE_F32);
  r.set_next_hop(next_hop);
  r.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);  // no huge responses
  return r;
}

grpc::Status apsp(v1::Compute::Stub& stub, const v1::ApspRequest& r, double timeout_s = 60) {
  grpc::ClientContext ctx;
  if (timeout_s > 0) deadline(ctx, timeout_s);
  v1::ApspResponse resp;
  return stub.Apsp(&ctx, r, &resp);
}

/// A unary Apsp on its own thread.
struct PendingApsp {
  grpc::ClientContext ctx;
  v1::ApspResponse resp;
  grpc::Status status;
  std::thread thread;
  PendingApsp(v1::Compute::Stub& stub, const v1::ApspRequest& req, double timeout_s) {
    if (timeout_s > 0) deadline(ctx, timeout_s);
    thread = std::thread([this, &stub, req] { status = stub.Apsp(&ctx, req, &resp); });
  }
  ~PendingApsp() {
    if (thread.joinable()) thread.join();
  }
};

double running_jobs(const TestServer& ts) {
  return metric_value(parse_metrics(http_get(ts.server->metrics_port(), "/metrics")),
                      "gcompute_running_jobs", {});
}

bool wait_running(const TestServer& ts, double value, double timeout_s = 30) {
  const auto start = Clock::now();
  while (seconds_since(start) < timeout_s) {
    if (running_jobs(ts) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

/// Time of a cheap Transpose; with one worker it waits for whatever occupies the worker.
double transpose_latency(v1::Compute::Stub& stub) {
  v1::TransposeRequest r;
  *r.mutable_a()->mutable_inline_() = make_matrix<float>(3, 5, std::vector<float>(15, 1.0f));
  grpc::ClientContext ctx;
  deadline(ctx, 60);
  v1::TransposeResponse resp;
  const auto start = Clock::now();
  EXPECT_TRUE(is_ok(stub.Transpose(&ctx, r, &resp)));
  return seconds_since(start);
}

/// Uploads `m` in chunks of 4 MiB; the stored id in `*id`.
grpc::Status upload(v1::Compute::Stub& stub, const v1::Matrix& m, std::string* id = nullptr) {
  grpc::ClientContext ctx;
  deadline(ctx, 60);
  v1::UploadMatrixResponse resp;
  auto writer = stub.UploadMatrix(&ctx, &resp);
  writer->Write(header_part(m.rows(), m.cols(), m.dtype()));
  constexpr std::size_t kChunk = 4u << 20;
  for (std::size_t off = 0; off < m.data().size(); off += kChunk) {
    v1::UploadMatrixRequest p;
    p.mutable_chunk()->set_offset(off);
    p.mutable_chunk()->set_data(m.data().substr(off, kChunk));
    if (!writer->Write(p)) break;
  }
  writer->WritesDone();
  grpc::Status st = writer->Finish();
  if (id != nullptr) *id = resp.matrix().ref().id();
  return st;
}

// ---- admission before allocation --------------------------------------------------------

TEST(ServiceAdmission, HugeRequestsAreRefusedBeforeAllocating) {
  ServerOptions o = test_options();
  o.limits.max_request_host_bytes = 64ull << 20;
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  const double rss_before = rss_mib();

  // ~30 bytes asking for 20000^2 distances: refused at once, nothing allocated.
  auto start = Clock::now();
  grpc::Status st = apsp(*ts->stub, edge_apsp(20000, /*next_hop=*/true));
  EXPECT_TRUE(has_status(st, grpc::RESOURCE_EXHAUSTED, {"--max-request-host-bytes"}));
  EXPECT_NE(st.error_message().find("20000 vertices"), std::string::npos) << st.error_message();
  EXPECT_LT(seconds_since(start), 0.5);

  // CreateGraph of 2^22 vertices (17 bytes) and an upload header of 1 GiB.
  {
    v1::CreateGraphRequest req;
    req.set_num_vertices(1ull << 22);
    v1::CreateGraphResponse resp;
    grpc::ClientContext ctx;
    deadline(ctx, 30);
    start = Clock::now();
    EXPECT_TRUE(has_status(ts->stub->CreateGraph(&ctx, req, &resp), grpc::RESOURCE_EXHAUSTED,
                           {"--max-request-host-bytes"}));
    EXPECT_LT(seconds_since(start), 0.5);
  }
  {
    grpc::ClientContext ctx;
    deadline(ctx, 30);
    v1::UploadMatrixResponse resp;
    auto writer = ts->stub->UploadMatrix(&ctx, &resp);
    writer->Write(header_part(1 << 14, 1 << 14, v1::DTYPE_F32));
    writer->WritesDone();
    EXPECT_TRUE(
        has_status(writer->Finish(), grpc::RESOURCE_EXHAUSTED, {"--max-request-host-bytes"}));
  }
  EXPECT_LT(rss_mib() - rss_before, 48.0);

  // Dense i32 2048 x 2048 (16 MiB on the wire) needs 2 planes, a 64-bit copy and next hops:
  // 96 MiB.
  v1::ApspRequest dense;
  *dense.mutable_dense() =
      make_matrix<std::int32_t>(2048, 2048, std::vector<std::int32_t>(2048 * 2048, 1));
  dense.set_next_hop(true);
  dense.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  EXPECT_TRUE(
      has_status(apsp(*ts->stub, dense), grpc::RESOURCE_EXHAUSTED, {"--max-request-host-bytes"}));

  // What fits is served: 100 vertices, and a small MatMul.
  EXPECT_TRUE(is_ok(apsp(*ts->stub, edge_apsp(100, true))));
  EXPECT_TRUE(still_serving(*ts->stub));
}

TEST(ServiceAdmission, DefaultLimitFollowsHostMemory) {
  // Without a flag the limit is half the host's memory: an APSP over 2^31 distances (within
  // --max-matrix-elements, 32 GiB with next hops) is refused on any machine with < 64 GiB.
  auto ts = start_server();
  ASSERT_NE(ts, nullptr);
  const auto start = Clock::now();
  grpc::Status st = apsp(*ts->stub, edge_apsp(46340, true));
  EXPECT_TRUE(has_status(st, grpc::RESOURCE_EXHAUSTED, {"--max-request-host-bytes"}));
  EXPECT_LT(seconds_since(start), 0.5);
}

// ---- uploads ----------------------------------------------------------------------------

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST(ServiceUploads, AHeaderAloneTakesNoMemory) {
  auto ts = start_server();
  ASSERT_NE(ts, nullptr);
  const double rss_before = rss_mib();
  grpc::ClientContext ctx;
  deadline(ctx, 30);
  v1::UploadMatrixResponse resp;
  auto writer = ts->stub->UploadMatrix(&ctx, &resp);
  ASSERT_TRUE(writer->Write(header_part(1 << 14, 24576, v1::DTYPE_F32)));  // 1.5 GiB
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(rss_mib() - rss_before, 64.0);
  // The first chunk reserves the matrix's address space; only what is written is memory.
  // (Not under AddressSanitizer: its shadow of the reserved range is itself ~1/8 of it.)
  v1::UploadMatrixRequest chunk;
  chunk.mutable_chunk()->set_offset(0);
  chunk.mutable_chunk()->set_data(std::string(1 << 20, '\x01'));
  ASSERT_TRUE(writer->Write(chunk));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (!kAddressSanitizer) {
    EXPECT_LT(rss_mib() - rss_before, 64.0);
  }
  ctx.TryCancel();
  writer->Finish();
}

TEST(ServiceUploads, IdleUploadIsAbortedAndItsQuotaFreed) {
  ServerOptions o = test_options();
  o.stored_matrix_quota_bytes = 1ull << 20;
  o.limits.upload_idle_time = absl::Milliseconds(500);
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  const v1::Matrix small = make_matrix<float>(16, 16, std::vector<float>(256, 2.0f));

  // A header-only stream that reserves the whole quota.
  grpc::ClientContext idle_ctx;
  deadline(idle_ctx, 30);
  v1::UploadMatrixResponse idle_resp;
  auto idle = ts->stub->UploadMatrix(&idle_ctx, &idle_resp);
  ASSERT_TRUE(idle->Write(header_part(256, 1024, v1::DTYPE_F32)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(has_status(upload(*ts->stub, small), grpc::RESOURCE_EXHAUSTED));

  // After the idle period the stream is aborted, naming the flag, and others upload again.
  const auto start = Clock::now();
  grpc::Status idle_status = idle->Finish();
  EXPECT_TRUE(has_status(idle_status, grpc::DEADLINE_EXCEEDED, {"--upload-idle-seconds"}));
  EXPECT_LT(seconds_since(start), 1.5);
  std::string id;
  EXPECT_TRUE(is_ok(upload(*ts->stub, small, &id)));
  EXPECT_FALSE(id.empty());

  // A stream that keeps sending is not idle, even when it lasts longer than the period.
  grpc::ClientContext ctx;
  deadline(ctx, 30);
  v1::UploadMatrixResponse resp;
  auto slow = ts->stub->UploadMatrix(&ctx, &resp);
  ASSERT_TRUE(slow->Write(header_part(16, 16, v1::DTYPE_F32)));
  for (int part = 0; part < 4; ++part) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    v1::UploadMatrixRequest p;
    p.mutable_chunk()->set_offset(part * 256);
    p.mutable_chunk()->set_data(small.data().substr(part * 256, 256));
    ASSERT_TRUE(slow->Write(p));
  }
  slow->WritesDone();
  EXPECT_TRUE(is_ok(slow->Finish()));
}

TEST(ServiceDownloads, AClientThatStopsReadingIsCancelledAfterTheIdlePeriod) {
  ServerOptions o = test_options();
  o.limits.upload_idle_time = absl::Milliseconds(500);
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  // 128 MiB: far more than gRPC buffers for a client that does not read, so the server's
  // writes stop completing.
  const std::int64_t rows = 16384, cols = 2048;
  const v1::Matrix big = make_matrix<float>(rows, cols, std::vector<float>(rows * cols, 3.0f));
  std::string id;
  ASSERT_TRUE(is_ok(upload(*ts->stub, big, &id)));
  auto start_download = [&](grpc::ClientContext& ctx) {
    deadline(ctx, 60);  // far beyond the idle period: the idle bound is what ends it
    v1::DownloadMatrixRequest req;
    req.mutable_ref()->set_id(id);
    req.set_chunk_bytes(4u << 20);
    return ts->stub->DownloadMatrix(&ctx, req);
  };
  {
    grpc::ClientContext ctx;
    auto stalled = start_download(ctx);
    v1::DownloadMatrixResponse part;
    ASSERT_TRUE(stalled->Read(&part));  // the header, then nothing read for a while
    ASSERT_TRUE(part.has_header());
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    std::uint64_t received = 0;
    while (stalled->Read(&part)) received += part.chunk().data().size();
    const grpc::Status st = stalled->Finish();
    EXPECT_FALSE(st.ok()) << "the download of a client that read nothing for 2 s went on";
    EXPECT_TRUE(st.error_code() == grpc::CANCELLED || st.error_code() == grpc::DEADLINE_EXCEEDED)
        << st.error_code() << " " << st.error_message();
    EXPECT_LT(received, big.data().size());
  }
  // A client that keeps reading, slowly, is not idle, even past the period.
  grpc::ClientContext ctx;
  auto slow = start_download(ctx);
  v1::DownloadMatrixResponse part;
  std::uint64_t received = 0;
  int parts = 0;
  while (slow->Read(&part)) {
    received += part.chunk().data().size();
    if (++parts % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  EXPECT_TRUE(is_ok(slow->Finish()));
  EXPECT_EQ(received, big.data().size());
}

TEST(ServiceUploads, ChunksOutOfOrderStillAssembleTheMatrix) {
  // The host sink grows with the chunks: the last chunk first must still land in place.
  auto ts = start_server();
  ASSERT_NE(ts, nullptr);
  gcompute::testing::Rng rng(11);
  const std::vector<float> values = gcompute::testing::random_normal<float>(rng, 37 * 53);
  const v1::Matrix m = make_matrix<float>(37, 53, values);
  grpc::ClientContext ctx;
  deadline(ctx, 30);
  v1::UploadMatrixResponse resp;
  auto writer = ts->stub->UploadMatrix(&ctx, &resp);
  ASSERT_TRUE(writer->Write(header_part(37, 53, v1::DTYPE_F32)));
  const std::size_t half = 1000 * sizeof(float);
  for (std::size_t off : {half, std::size_t{0}}) {
    v1::UploadMatrixRequest p;
    p.mutable_chunk()->set_offset(off);
    p.mutable_chunk()->set_data(off == 0 ? m.data().substr(0, half) : m.data().substr(half));
    ASSERT_TRUE(writer->Write(p));
  }
  writer->WritesDone();
  ASSERT_TRUE(is_ok(writer->Finish()));

  grpc::ClientContext dctx;
  deadline(dctx, 30);
  v1::DownloadMatrixRequest dreq;
  *dreq.mutable_ref() = resp.matrix().ref();
  auto reader = ts->stub->DownloadMatrix(&dctx, dreq);
  v1::DownloadMatrixResponse part;
  std::string bytes;
  while (reader->Read(&part)) {
    if (part.has_chunk()) bytes += part.chunk().data();
  }
  ASSERT_TRUE(is_ok(reader->Finish()));
  EXPECT_EQ(bytes, m.data());
}

// ---- time bounds and drain ----------------------------------------------------------------

// An APSP of the chain 0 -> 1 -> ... -> n-1 with n = 4000: every d[i][k] with i <= k is finite,
// so Floyd-Warshall relaxes about n^3 / 2 = 3.2e10 pairs (seconds on this machine). A graph of
// one edge is no slow workload: rows with d[i][k] = inf are skipped, and it finished inside the
// drain test's 0.4 s.
constexpr std::int64_t kSlowApspN = 4000;

v1::ApspRequest slow_apsp() {
  v1::ApspRequest r = edge_apsp(kSlowApspN);
  auto* e = r.mutable_edges();
  for (std::int64_t v = 1; v + 1 < kSlowApspN; ++v) {
    e->add_src(v);
    e->add_dst(v + 1);
    e->add_weight(1.0);
  }
  return r;
}

/// The deadline tests: a one-worker server holding random operands, and the times of one
/// operation on them.
class ServiceTime : public ::testing::Test {
 protected:
  /// Starts the server and stores `count` n x n f64 matrices of normal random values drawn
  /// from `seed`; their ids in ids_.
  void start_storing(std::uint64_t seed, std::int64_t n, int count) {
    ServerOptions o = test_options();
    o.workers = 1;
    ts_ = start_server(o);
    ASSERT_NE(ts_, nullptr);
    gcompute::testing::Rng rng(seed);
    for (int i = 0; i < count; ++i) {
      const v1::Matrix m =
          make_matrix<double>(n, n, gcompute::testing::random_normal<double>(rng, n * n));
      std::string id;
      ASSERT_TRUE(is_ok(upload(*ts_->stub, m, &id)));
      ids_.push_back(id);
    }
  }

  /// Runs `request` through `method` to completion, then under `deadline_s`, which it must
  /// exceed, then a cheap Transpose; prints the times under `label`. The results are stored,
  /// so that the times are of the work and not of a large response.
  template <typename Req, typename Resp>
  void time_with_deadline(grpc::Status (v1::Compute::Stub::*method)(grpc::ClientContext*,
                                                                    const Req&, Resp*),
                          const Req& request, double deadline_s, const char* label) {
    v1::Compute::Stub& stub = *ts_->stub;
    Req req = request;
    req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
    auto start = Clock::now();
    {
      grpc::ClientContext ctx;
      deadline(ctx, 120);
      Resp resp;
      ASSERT_TRUE(is_ok((stub.*method)(&ctx, req, &resp)));
    }
    full_s_ = seconds_since(start);
    std::printf("%s: %.3f s\n", label, full_s_);

    start = Clock::now();
    {
      grpc::ClientContext ctx;
      deadline(ctx, deadline_s);
      Resp resp;
      EXPECT_TRUE(has_status((stub.*method)(&ctx, req, &resp), grpc::DEADLINE_EXCEEDED));
    }
    answered_s_ = seconds_since(start);
    transpose_s_ = transpose_latency(stub);
    freed_s_ = seconds_since(start);
    std::printf("%s answered after %.3f s, then a Transpose took %.3f s\n", label, answered_s_,
                transpose_s_);
  }

  std::unique_ptr<TestServer> ts_;
  std::vector<std::string> ids_;
  double full_s_ = 0;       // the call under a generous deadline
  double answered_s_ = 0;   // the call under the short deadline, until DEADLINE_EXCEEDED
  double transpose_s_ = 0;  // a cheap Transpose right after, which waits for the one worker
  double freed_s_ = 0;      // from the start of the short call to the end of the Transpose
};

TEST_F(ServiceTime, CallsWithoutADeadlineAreBoundedByMaxRequestSeconds) {
  ServerOptions o = test_options();
  o.workers = 1;
  o.limits.max_request_time = absl::Milliseconds(300);
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  const auto start = Clock::now();
  grpc::Status st = apsp(*ts->stub, slow_apsp(), /*timeout_s=*/0);
  EXPECT_TRUE(has_status(st, grpc::DEADLINE_EXCEEDED, {"--max-request-seconds"}));
  EXPECT_LT(seconds_since(start), 1.5);
  EXPECT_LT(transpose_latency(*ts->stub), 0.5);
}

TEST_F(ServiceTime, DrainCancelsWhatStillRunsWhenItsTimeIsUp) {
  ServerOptions o = test_options();
  o.workers = 1;
  o.limits.max_request_time = absl::ZeroDuration();  // no bound: only the drain stops it
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  PendingApsp running(*ts->stub, slow_apsp(), /*timeout_s=*/0);
  ASSERT_TRUE(wait_running(*ts, 1));
  PendingApsp queued(*ts->stub, slow_apsp(), /*timeout_s=*/0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  const auto start = Clock::now();
  ts->server->drain(absl::Milliseconds(300));
  const double drain_s = seconds_since(start);
  EXPECT_GT(drain_s, 0.25);
  EXPECT_LT(drain_s, 1.5);
  running.thread.join();
  queued.thread.join();
  EXPECT_TRUE(has_status(running.status, grpc::UNAVAILABLE, {"--drain-seconds"}));
  EXPECT_TRUE(has_status(queued.status, grpc::UNAVAILABLE));
  ts->server->wait();
  EXPECT_LT(seconds_since(start), 3.0);
}

TEST_F(ServiceTime, MatMulDeadlineFreesTheWorkerBetweenPanels) {
  ASSERT_NO_FATAL_FAILURE(start_storing(5, 3000, 2));
  v1::MatMulRequest req;
  req.mutable_a()->mutable_ref()->set_id(ids_[0]);
  req.mutable_b()->mutable_ref()->set_id(ids_[1]);
  ASSERT_NO_FATAL_FAILURE(
      time_with_deadline(&v1::Compute::Stub::MatMul, req, 0.05, "3000^2 f64 MatMul"));
  // The whole product, for scale: the bound below must be far below it.
  ASSERT_GT(full_s_, 0.5) << "the product is too fast on this machine for the bound to mean much";
  // The next call waits for the worker: freed within about a panel of the deadline.
  std::printf("worker free %.3f s after a MatMul with a 50 ms deadline\n", freed_s_);
  // About a panel (1/100 of the product) plus scheduling: on an idle machine well under
  // 0.2 s. A loaded machine stretches a panel (OpenBLAS waits for its slowest thread), so the
  // bound is a quarter of the product, which a worker that finishes the product exceeds.
  EXPECT_LT(freed_s_, 0.25 * full_s_);
}

TEST_F(ServiceTime, SvdDeadlineAnswersDuringTheLapackCall) {
  // One ?gesdd call cannot be interrupted; the request still answers at its deadline and the
  // worker is free (the call finishes in the background).
  ASSERT_NO_FATAL_FAILURE(start_storing(7, 2000, 1));
  v1::SvdRequest req;
  req.mutable_a()->mutable_ref()->set_id(ids_[0]);
  req.set_compute_uv(true);
  ASSERT_NO_FATAL_FAILURE(time_with_deadline(&v1::Compute::Stub::Svd, req, 0.3, "2000^2 f64 Svd"));
  ASSERT_GT(full_s_, 1.0) << "the SVD is too fast on this machine for the bound to mean much";
  EXPECT_LT(answered_s_, 0.3 + 0.5 * (full_s_ - 0.3));
  EXPECT_LT(transpose_s_, 0.5);
}

// ---- empty and huge batches --------------------------------------------------------------

TEST(ServiceBatches, EmptyMatricesAnswerAtOnceAndBatchesAreBounded) {
  ServerOptions o = test_options();
  o.limits.max_batch = 1ull << 30;
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  auto batched_svd = [&](std::int64_t rows, std::int64_t cols, std::int64_t batch,
                         v1::SvdResponse* resp) {
    v1::SvdRequest req;
    v1::Matrix* a = req.mutable_a()->mutable_inline_();
    a->set_rows(rows);
    a->set_cols(cols);
    a->set_batch(batch);
    a->set_dtype(v1::DTYPE_F32);
    grpc::ClientContext ctx;
    deadline(ctx, 60);
    return ts->stub->BatchedSvd(&ctx, req, resp);
  };
  // 2^30 empty matrices: answered at once with empty factors.
  auto start = Clock::now();
  v1::SvdResponse resp;
  ASSERT_TRUE(is_ok(batched_svd(0, 3, 1ll << 30, &resp)));
  EXPECT_LT(seconds_since(start), 0.5);
  EXPECT_TRUE(resp.converged());
  EXPECT_EQ(resp.s().inline_().batch(), 1ll << 30);
  EXPECT_EQ(resp.s().inline_().data().size(), 0u);
  EXPECT_EQ(resp.vt().inline_().rows(), 0);

  // 2^40 matrices: over --max-batch, named with the field.
  start = Clock::now();
  EXPECT_TRUE(
      has_status(batched_svd(0, 3, 1ll << 40, &resp), grpc::RESOURCE_EXHAUSTED, {"--max-batch"}));
  EXPECT_LT(seconds_since(start), 0.5);

  // Empty transposes and products are answered too.
  v1::TransposeRequest t;
  v1::Matrix* a = t.mutable_a()->mutable_inline_();
  a->set_rows(5);
  a->set_cols(0);
  a->set_batch(1ll << 29);
  a->set_dtype(v1::DTYPE_F64);
  grpc::ClientContext ctx;
  deadline(ctx, 10);
  v1::TransposeResponse tr;
  start = Clock::now();
  EXPECT_TRUE(is_ok(ts->stub->Transpose(&ctx, t, &tr)));
  EXPECT_LT(seconds_since(start), 0.5);
  EXPECT_EQ(tr.at().inline_().rows(), 0);
  EXPECT_EQ(tr.at().inline_().cols(), 5);
}

// ---- GetGraph pages -------------------------------------------------------------------------

grpc::Status get_graph(v1::Compute::Stub& stub, const std::string& id, std::uint32_t page_size,
                       const std::string& token, v1::GetGraphResponse* resp) {
  v1::GetGraphRequest req;
  req.set_graph_id(id);
  req.set_page_size(page_size);
  req.set_page_token(token);
  grpc::ClientContext ctx;
  deadline(ctx, 30);
  return stub.GetGraph(&ctx, req, resp);
}

TEST(ServiceGraphPages, AGraphLargerThanOneMessageIsReadInPages) {
  ServerOptions o = test_options();
  o.limits.max_message_bytes = 1u << 20;
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  // 400000 vertices: about 1.2 MB of varints, more than one message.
  constexpr std::uint64_t n = 400000;
  {
    v1::CreateGraphRequest req;
    req.set_graph_id("big");
    req.set_num_vertices(n);
    v1::CreateGraphResponse resp;
    grpc::ClientContext ctx;
    deadline(ctx, 30);
    ASSERT_TRUE(is_ok(ts->stub->CreateGraph(&ctx, req, &resp)));
  }
  std::vector<std::uint64_t> vertices;
  std::string token;
  int pages = 0;
  do {
    v1::GetGraphResponse page;
    ASSERT_TRUE(is_ok(get_graph(*ts->stub, "big", 0, token, &page)));
    EXPECT_LE(page.ByteSizeLong(), o.limits.max_message_bytes);
    EXPECT_GT(page.vertices_size(), 0);
    EXPECT_EQ(page.info().num_vertices(), n);
    vertices.insert(vertices.end(), page.vertices().begin(), page.vertices().end());
    token = page.next_page_token();
    ASSERT_LT(++pages, 100);
  } while (!token.empty());
  EXPECT_GE(pages, 2);
  ASSERT_EQ(vertices.size(), n);
  for (std::uint64_t v = 0; v < n; ++v) ASSERT_EQ(vertices[v], v);
}

TEST(ServiceGraphPages, SmallPagesConcatenateToTheSnapshotAndAChangeAborts) {
  auto ts = start_server();
  ASSERT_NE(ts, nullptr);
  v1::CreateGraphRequest create;
  create.set_graph_id("g");
  create.set_num_vertices(11);
  for (int e = 0; e < 13; ++e) {
    v1::Hyperedge* edge = create.add_edges();
    edge->add_tails(static_cast<std::uint64_t>(e % 11));
    edge->add_heads(static_cast<std::uint64_t>((e * 5 + 3) % 11));
    if (e % 3 == 0) edge->add_heads(static_cast<std::uint64_t>((e + 1) % 11));
    edge->set_weight(0.5 * e);
  }
  {
    v1::CreateGraphResponse resp;
    grpc::ClientContext ctx;
    deadline(ctx, 30);
    ASSERT_TRUE(is_ok(ts->stub->CreateGraph(&ctx, create, &resp)));
  }
  v1::GetGraphResponse whole;
  ASSERT_TRUE(is_ok(get_graph(*ts->stub, "g", 0, "", &whole)));
  EXPECT_TRUE(whole.next_page_token().empty());
  ASSERT_EQ(whole.vertices_size(), 11);
  ASSERT_EQ(whole.edges_size(), 13);

  for (std::uint32_t size : {1u, 3u, 7u, 24u}) {
    v1::GetGraphResponse joined;
    std::string token;
    int pages = 0;
    do {
      v1::GetGraphResponse page;
      ASSERT_TRUE(is_ok(get_graph(*ts->stub, "g", size, token, &page)));
      EXPECT_LE(page.vertices_size() + page.edges_size(), static_cast<int>(size));
      joined.mutable_vertices()->MergeFrom(page.vertices());
      joined.mutable_edges()->MergeFrom(page.edges());
      *joined.mutable_info() = page.info();
      token = page.next_page_token();
      ++pages;
    } while (!token.empty());
    EXPECT_EQ(pages, (24 + size - 1) / size) << "page_size " << size;
    EXPECT_EQ(joined.SerializeAsString(), whole.SerializeAsString()) << "page_size " << size;
  }

  // A change between pages: the next page is ABORTED; a token not from this graph is refused.
  v1::GetGraphResponse first;
  ASSERT_TRUE(is_ok(get_graph(*ts->stub, "g", 5, "", &first)));
  {
    v1::ApplyEditsRequest req;
    req.set_graph_id("g");
    req.add_edits()->mutable_add_vertex();
    v1::ApplyEditsResponse resp;
    grpc::ClientContext ctx;
    deadline(ctx, 30);
    ASSERT_TRUE(is_ok(ts->stub->ApplyEdits(&ctx, req, &resp)));
  }
  v1::GetGraphResponse next;
  EXPECT_TRUE(has_status(get_graph(*ts->stub, "g", 5, first.next_page_token(), &next),
                         grpc::ABORTED, {"first page"}));
  for (const char* bad : {"x", "2.999", "2.-1", "2"}) {
    EXPECT_TRUE(has_status(get_graph(*ts->stub, "g", 5, bad, &next), grpc::INVALID_ARGUMENT,
                           {"page_token"}))
        << bad;
  }
}

// ---- health under load --------------------------------------------------------------------

TEST(ServiceHealth, AnswersWithin50MsWhileTheWorkersAreBusy) {
  ServerOptions o = test_options();
  o.workers = 2;
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  std::vector<std::unique_ptr<PendingApsp>> load;
  for (int i = 0; i < 4; ++i) {
    load.push_back(std::make_unique<PendingApsp>(*ts->stub, slow_apsp(), 20));
  }
  ASSERT_TRUE(wait_running(*ts, 2));
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    const auto start = Clock::now();
    EXPECT_EQ(health_check(ts->channel, ""), 1);
    ms.push_back(1e3 * seconds_since(start));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::sort(ms.begin(), ms.end());
  const double p99 = ms[ms.size() * 99 / 100];
  std::printf("health p50 %.2f ms, p99 %.2f ms with both workers busy\n", ms[ms.size() / 2], p99);
  EXPECT_LT(p99, 50.0);
  for (auto& p : load) p->ctx.TryCancel();
}

}  // namespace
}  // namespace gcompute::service_test
