// SPDX-License-Identifier: Apache-2.0
// The client library against an in-process fake server on 127.0.0.1: automatic chunked
// uploads above the inline limit, automatic download and deletion of stored results,
// deadlines, and status mapping. The fake computes with plain loops.
#include "gcompute/client/client.hpp"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "client/fake_compute.hpp"
#include "gcompute/client/grpc_status.hpp"
#include "gcompute/v1/service.grpc.pb.h"

namespace gcompute::client {
namespace {

namespace pb = ::gcompute::v1;
using fake::FakeCompute;

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.SetMaxReceiveMessageSize(64 << 20);
    builder.SetMaxSendMessageSize(64 << 20);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }

  ClientOptions options() const {
    ClientOptions o;
    o.target = "127.0.0.1:" + std::to_string(port_);
    o.default_timeout = absl::Seconds(30);
    return o;
  }

  static HostMatrix random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> v(rows * cols);
    for (float& x : v) x = dist(rng);
    return HostMatrix{1, rows, cols, DType::kF32,
                      std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4)};
  }
  static float at(const HostMatrix& m, int64_t i, int64_t j) {
    float v;
    std::memcpy(&v, m.data.data() + (i * m.cols + j) * 4, 4);
    return v;
  }

  FakeCompute fake_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(ClientTest, SmallOperandsGoInline) {
  Client client(options());
  const HostMatrix a = random_matrix(3, 5, 1);
  absl::StatusOr<MatrixResultWithStats> r = client.transpose(a);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->matrix.rows, 5);
  ASSERT_EQ(r->matrix.cols, 3);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) EXPECT_EQ(at(r->matrix, j, i), at(a, i, j));
  }
  EXPECT_EQ(r->stats.device, "fake");
  EXPECT_EQ(fake_.uploads, 0);
  EXPECT_EQ(fake_.operand_kinds, std::vector<std::string>{"inline"});
}

TEST_F(ClientTest, LargeOperandsAreUploadedInChunksAndStoredResultsFetched) {
  ClientOptions o = options();
  o.inline_limit_bytes = 1 << 20;
  o.chunk_bytes = 256 << 10;
  uint64_t last_done = 0, last_total = 0;
  int calls = 0;
  o.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_LE(done, total);
    last_done = done;
    last_total = total;
    ++calls;
  };
  fake_.store_results_above = 1 << 20;
  Client client(o);
  const HostMatrix a = random_matrix(601, 701, 2);  // 1,685,204 bytes: over the 1 MiB limit
  absl::StatusOr<MatrixResultWithStats> r = client.transpose(a);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(fake_.uploads, 1);
  // Marked release: the server drops it as it reads it, so no DeleteMatrix is needed.
  EXPECT_EQ(fake_.operand_kinds, std::vector<std::string>{"released ref"});
  ASSERT_EQ(fake_.upload_chunk_sizes.size(), 7u);  // ceil(1685204 / 262144)
  EXPECT_EQ(fake_.upload_chunk_sizes[0], 262144u);
  EXPECT_EQ(fake_.upload_chunk_sizes[6], 1685204u - 6 * 262144u);
  EXPECT_EQ(fake_.downloads, 1);
  // Both the uploaded operand (released by the call) and the stored result (deleted once
  // fetched) are gone.
  EXPECT_TRUE(fake_.stored.empty());
  EXPECT_EQ(fake_.deletes, 1);
  EXPECT_GT(calls, 7);
  EXPECT_EQ(last_done, last_total);
  ASSERT_EQ(r->matrix.rows, 701);
  ASSERT_EQ(r->matrix.cols, 601);
  for (int64_t i : {0, 1, 300, 600}) {
    for (int64_t j : {0, 17, 700}) EXPECT_EQ(at(r->matrix, j, i), at(a, i, j));
  }
}

TEST_F(ClientTest, OperandsAndResultsOfMoreThanOneChunkTravelAsStreams) {
  ClientOptions o = options();  // the default inline limit (64 MiB) is far away
  o.chunk_bytes = 256 << 10;
  Client client(o);
  // 601 x 701 f32 is 1,685,204 bytes: more than one chunk, so it is uploaded, and the result
  // (as large) is asked for as a stored matrix, downloaded and deleted.
  const HostMatrix a = random_matrix(601, 701, 6);
  absl::StatusOr<MatrixResultWithStats> r = client.transpose(a);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(fake_.operand_kinds, std::vector<std::string>{"released ref"});
  EXPECT_EQ(fake_.placements,
            std::vector<pb::OutputOptions::Placement>{pb::OutputOptions::PLACEMENT_STORED});
  EXPECT_EQ(fake_.uploads, 1);
  EXPECT_EQ(fake_.downloads, 1);
  EXPECT_EQ(fake_.deletes, 1);
  EXPECT_TRUE(fake_.stored.empty());
  ASSERT_EQ(r->matrix.rows, 701);
  for (int64_t i : {0, 1, 300, 600}) {
    for (int64_t j : {0, 5, 700}) EXPECT_EQ(at(r->matrix, j, i), at(a, i, j));
  }
  // One chunk or less: inline both ways, the placement left to the server.
  const HostMatrix small = random_matrix(256, 256, 7);  // 262,144 bytes: exactly one chunk
  r = client.transpose(small);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(fake_.operand_kinds, (std::vector<std::string>{"released ref", "inline"}));
  EXPECT_EQ(fake_.placements.back(), pb::OutputOptions::PLACEMENT_AUTO);
  EXPECT_EQ(fake_.uploads, 1);
  EXPECT_EQ(fake_.downloads, 1);
}

TEST_F(ClientTest, ResultsTheStoreRefusesComeBackInTheResponse) {
  ClientOptions o = options();
  o.chunk_bytes = 64 << 10;
  Client client(o);
  fake_.refuse_stored_results = true;  // as a server whose stored-matrix quota is full
  // Small operands, a 480,000-byte product: the client asks for it stored, the quota refuses,
  // and the call is made again with the result left to the server (inline).
  const HostMatrix x = random_matrix(300, 2, 8), y = random_matrix(2, 200, 9);
  absl::StatusOr<MatrixResultWithStats> r = client.matmul(x, y);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(fake_.placements,
            (std::vector<pb::OutputOptions::Placement>{pb::OutputOptions::PLACEMENT_STORED,
                                                       pb::OutputOptions::PLACEMENT_AUTO}));
  EXPECT_EQ(fake_.downloads, 0);
  EXPECT_TRUE(fake_.stored.empty());
  ASSERT_EQ(r->matrix.rows, 300);
  ASSERT_EQ(r->matrix.cols, 200);
  for (int64_t i : {0, 150, 299}) {
    for (int64_t j : {0, 77, 199}) {
      const double want = double{at(x, i, 0)} * at(y, 0, j) + double{at(x, i, 1)} * at(y, 1, j);
      EXPECT_NEAR(at(r->matrix, i, j), want, 1e-5 * (1 + std::abs(want)));
    }
  }
}

TEST_F(ClientTest, OnlyTheLargestOperandsAreUploaded) {
  ClientOptions o = options();
  o.inline_limit_bytes = 100 << 10;
  Client client(o);
  const HostMatrix a = random_matrix(200, 150, 3);  // 120,000 bytes
  const HostMatrix b = random_matrix(150, 20, 4);   // 12,000 bytes
  absl::StatusOr<MatrixResultWithStats> r = client.matmul(a, b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(fake_.uploads, 1);
  EXPECT_EQ(fake_.operand_kinds, (std::vector<std::string>{"released ref", "inline"}));
  EXPECT_TRUE(fake_.stored.empty());
  double sum = 0;
  for (int k = 0; k < 150; ++k) sum += double{at(a, 7, k)} * at(b, k, 3);
  EXPECT_NEAR(at(r->matrix, 7, 3), sum, 1e-4);
}

TEST_F(ClientTest, ServerErrorsKeepCodeAndMessage) {
  Client client(options());
  absl::StatusOr<GraphSnapshot> g = client.get_graph("nope");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(g.status().message(), "graph 'nope' not found");
  const HostMatrix a = random_matrix(2, 3, 5);
  absl::StatusOr<MatrixResultWithStats> r = client.matmul(a, a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "A is 2x3 but B is 2x3");
}

TEST_F(ClientTest, CallsHaveDeadlines) {
  ClientOptions o = options();
  o.default_timeout = absl::Milliseconds(300);
  Client client(o);
  const HostMatrix a = random_matrix(4, 4, 6);
  const absl::Time start = absl::Now();
  absl::StatusOr<SvdResult> r = client.svd(a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1.5));
  // A per-call timeout overrides the client's default.
  CallOptions call;
  call.timeout = absl::Milliseconds(50);
  r = client.svd(a, {}, call);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(ClientTest, UploadDownloadDelete) {
  ClientOptions o = options();
  o.chunk_bytes = 1000;
  Client client(o);
  const HostMatrix a = random_matrix(33, 71, 7);
  absl::StatusOr<StoredMatrix> s = client.upload_matrix(a);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->rows, 33);
  EXPECT_EQ(s->cols, 71);
  EXPECT_EQ(s->size_bytes, a.data.size());
  EXPECT_EQ(fake_.upload_chunk_sizes.size(), (a.data.size() + 999) / 1000);
  absl::StatusOr<HostMatrix> back = client.download_matrix(s->ref);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, a.data);
  EXPECT_EQ(back->dtype, DType::kF32);
  EXPECT_TRUE(client.delete_matrix(s->ref).ok());
  absl::Status again = client.delete_matrix(s->ref);
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  // A matrix whose data does not match its shape is refused before anything is sent.
  HostMatrix bad = a;
  bad.data.pop_back();
  EXPECT_EQ(client.upload_matrix(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GrpcStatus, MapsEveryCode) {
  EXPECT_TRUE(from_grpc_status(grpc::Status::OK).ok());
  for (int code = 1; code <= 16; ++code) {
    const absl::Status s =
        from_grpc_status(grpc::Status(static_cast<grpc::StatusCode>(code), "msg"));
    EXPECT_EQ(static_cast<int>(s.code()), code);
    EXPECT_EQ(s.message(), "msg");
  }
  EXPECT_EQ(from_grpc_status(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "")).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(InlineLimit, DefaultsToHalfTheMessageSizeCappedAt64MiB) {
  ClientOptions o;
  EXPECT_EQ(effective_inline_limit(o), 64 * kMiB);
  o.max_message_bytes = 32 * kMiB;
  EXPECT_EQ(effective_inline_limit(o), 16 * kMiB);
  o.inline_limit_bytes = 123;
  EXPECT_EQ(effective_inline_limit(o), 123u);
}

}  // namespace
}  // namespace gcompute::client
