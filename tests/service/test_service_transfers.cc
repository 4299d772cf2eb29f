// SPDX-License-Identifier: Apache-2.0
// UploadMatrix and DownloadMatrix through protobuf's own generated stubs against the server's
// hand-coded chunk streams (proto/wire/chunk_codec): what protobuf writes is read, what the
// server writes parses, and the bytes come back exactly, in chunks of every size (ragged, one
// byte, larger than the matrix, the default), from matrices stored on upload and from results
// left on the server. A client that leaves in the middle of a download leaves the server serving.
// Built twice: on the CPU backend, and as test_service_transfers_gpu (GCOMPUTE_TRANSFERS_TEST_CUDA,
// label gpu) on the CUDA backend, where stored matrices live on the device and a download copies
// each chunk back while the one before it is being sent.
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "service_fixture.hpp"
#include "support/gpu.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {
namespace {

#ifdef GCOMPUTE_TRANSFERS_TEST_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif

class ServiceTransfers : public ::testing::Test {
 public:
  void SetUp() override {
    if (kCuda) GC_REQUIRE_GPU();
    ServerOptions o = test_options();
    o.device = kCuda ? "cuda" : "cpu";
    ts_ = start_server(o);
    ASSERT_NE(ts_, nullptr);
  }
  v1::Compute::Stub& stub() { return *ts_->stub; }

  /// Uploads `data` as a batch x rows x cols matrix of `dtype` in chunks of `chunk` bytes.
  std::string upload(const std::string& data, std::int64_t rows, std::int64_t cols, v1::DType dtype,
                     std::size_t chunk) {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::UploadMatrixResponse resp;
    auto writer = stub().UploadMatrix(&ctx, &resp);
    v1::UploadMatrixRequest header;
    header.mutable_header()->mutable_shape()->set_rows(rows);
    header.mutable_header()->mutable_shape()->set_cols(cols);
    header.mutable_header()->mutable_shape()->set_dtype(dtype);
    EXPECT_TRUE(writer->Write(header));
    for (std::size_t off = 0; off < data.size(); off += chunk) {
      v1::UploadMatrixRequest part;
      part.mutable_chunk()->set_offset(off);
      part.mutable_chunk()->set_data(data.substr(off, chunk));
      EXPECT_TRUE(writer->Write(part));
    }
    writer->WritesDone();
    const grpc::Status st = writer->Finish();
    EXPECT_TRUE(is_ok(st));
    EXPECT_EQ(resp.matrix().size_bytes(), data.size());
    return resp.matrix().ref().id();
  }

  void expect_downloads(const std::string& id, const std::string& want,
                        const std::vector<std::uint64_t>& chunk_sizes) {
    for (const std::uint64_t chunk : chunk_sizes) {
      SCOPED_TRACE(::testing::Message() << "chunks of " << chunk << " bytes");
      std::string got;
      v1::StoredMatrix header;
      int chunks = 0;
      ASSERT_TRUE(is_ok(download_stored(stub(), id, chunk, &header, &got, &chunks)));
      EXPECT_EQ(header.ref().id(), id);
      EXPECT_EQ(header.size_bytes(), want.size());
      const std::uint64_t per = chunk == 0 ? (4u << 20) : chunk;
      EXPECT_EQ(chunks, static_cast<int>((want.size() + per - 1) / per));
      ASSERT_EQ(got.size(), want.size());
      EXPECT_TRUE(got == want) << "downloaded bytes differ";
    }
  }

  std::unique_ptr<TestServer> ts_;
};

std::string random_string(gcompute::testing::Rng& rng, std::size_t bytes) {
  const auto raw = gcompute::testing::random_bytes(rng, bytes);
  return std::string(raw.begin(), raw.end());
}

TEST_F(ServiceTransfers, ChunksOfEverySizeComeBackAsUploaded) {
  GC_SEEDED_RNG(rng);
  // A few elements in one-byte chunks (the offset 0 that protobuf leaves out, then every
  // varint length), and a ragged 9.4 MB matrix: chunks that split elements, the default 4 MiB
  // (a short last one), one larger than the matrix.
  const std::string small = random_string(rng, 7 * 13 * 8);
  const std::string small_id = upload(small, 7, 13, v1::DTYPE_F64, 1);
  expect_downloads(small_id, small, {1, 3, 1000});
  const std::int64_t rows = 1031, cols = 2293;
  const std::string big = random_string(rng, rows * cols * 4);
  const std::string big_id = upload(big, rows, cols, v1::DTYPE_F32, 65537);
  expect_downloads(big_id, big, {65543, 1u << 20, 0, 64u << 20});
}

TEST_F(ServiceTransfers, AResultLeftOnTheServerDownloadsLikeAnUpload) {
  GC_SEEDED_RNG(rng);
  const std::int64_t rows = 517, cols = 1201;
  std::vector<float> a(static_cast<std::size_t>(rows * cols));
  for (float& x : a) x = static_cast<float>(rng.engine()() % 100000) / 7.0f;
  const std::string bytes(reinterpret_cast<const char*>(a.data()), a.size() * 4);
  const std::string id = upload(bytes, rows, cols, v1::DTYPE_F32, 1u << 20);
  v1::TransposeRequest req;
  req.mutable_a()->mutable_ref()->set_id(id);
  req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  v1::TransposeResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub().Transpose(&ctx, req, &resp)));
  ASSERT_TRUE(resp.at().has_stored());
  std::string want(bytes.size(), '\0');
  auto* t = reinterpret_cast<float*>(want.data());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  }
  expect_downloads(resp.at().stored().ref().id(), want, {100003, 0});
}

TEST_F(ServiceTransfers, AClientLeavingMidDownloadLeavesTheServerServing) {
  GC_SEEDED_RNG(rng);
  const std::string data = random_string(rng, 24u << 20);
  const std::string id = upload(data, 3u << 20, 1, v1::DTYPE_F64, 4u << 20);
  for (int round = 0; round < 5; ++round) {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::DownloadMatrixRequest req;
    req.mutable_ref()->set_id(id);
    req.set_chunk_bytes(64 << 10);
    auto reader = stub().DownloadMatrix(&ctx, req);
    v1::DownloadMatrixResponse part;
    for (int i = 0; i < 3 + round * 7; ++i) ASSERT_TRUE(reader->Read(&part));
    ctx.TryCancel();
    while (reader->Read(&part)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  expect_downloads(id, data, {0});
}

/// Sends `messages` as raw bytes on `method` of the Compute service; the call's status.
grpc::Status raw_call(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const std::vector<std::string>& messages) {
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  deadline(ctx);
  grpc::CompletionQueue cq;
  auto wait = [&cq] {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && ok;
  };
  void* const tag = reinterpret_cast<void*>(1);
  auto call = generic.PrepareCall(&ctx, "/gcompute.v1.Compute/" + method, &cq);
  call->StartCall(tag);
  bool ok = wait();
  for (const std::string& m : messages) {
    if (!ok) break;
    grpc::Slice slice(m);
    call->Write(grpc::ByteBuffer(&slice, 1), tag);
    ok = wait();
  }
  if (ok) {
    call->WritesDone(tag);
    ok = wait();
  }
  for (grpc::ByteBuffer reply; ok;) {
    call->Read(&reply, tag);
    ok = wait();
  }
  grpc::Status status;
  call->Finish(&status, tag);
  wait();
  cq.Shutdown();
  return status;
}

TEST_F(ServiceTransfers, AnUnknownRefOrABadMessageIsRefusedByName) {
  const int metrics_port = ts_->server->metrics_port();
  const auto before = parse_metrics(http_get(metrics_port, "/metrics"));
  std::string got;
  v1::StoredMatrix header;
  int chunks = 0;
  EXPECT_TRUE(has_status(download_stored(stub(), "no-such-matrix", 0, &header, &got, &chunks),
                         grpc::StatusCode::NOT_FOUND, {"ref.id", "no-such-matrix"}));
  EXPECT_EQ(chunks, 0);
  const std::string garbage("\xff\xff\xff\xff\xff", 5);
  EXPECT_TRUE(has_status(raw_call(ts_->channel, "DownloadMatrix", {garbage}),
                         grpc::StatusCode::INVALID_ARGUMENT,
                         {"gcompute.v1.DownloadMatrixRequest"}));
  v1::UploadMatrixRequest upload_header;
  upload_header.mutable_header()->mutable_shape()->set_rows(2);
  upload_header.mutable_header()->mutable_shape()->set_cols(2);
  upload_header.mutable_header()->mutable_shape()->set_dtype(v1::DTYPE_F32);
  EXPECT_TRUE(has_status(
      raw_call(ts_->channel, "UploadMatrix", {upload_header.SerializeAsString(), garbage}),
      grpc::StatusCode::INVALID_ARGUMENT, {"gcompute.v1.UploadMatrixRequest"}));
  // A chunk cut short (its length says more than the message holds) is no chunk either.
  EXPECT_TRUE(
      has_status(raw_call(ts_->channel, "UploadMatrix",
                          {upload_header.SerializeAsString(), std::string("\x12\x40\x12", 3)}),
                 grpc::StatusCode::INVALID_ARGUMENT, {"gcompute.v1.UploadMatrixRequest"}));
  // Each counted once as unparsable and once as a request.
  const auto after = parse_metrics(http_get(metrics_port, "/metrics"));
  for (const auto& [method, count] :
       {std::pair<std::string, double>{"UploadMatrix", 2}, {"DownloadMatrix", 1}}) {
    EXPECT_EQ(metric_value(after, "gcompute_unparsable_requests_total", {{"method", method}}) -
                  metric_value(before, "gcompute_unparsable_requests_total", {{"method", method}}),
              count)
        << method;
    const std::map<std::string, std::string> invalid = {{"method", method},
                                                        {"code", "INVALID_ARGUMENT"}};
    EXPECT_EQ(metric_value(after, "gcompute_requests_total", invalid) -
                  metric_value(before, "gcompute_requests_total", invalid),
              count)
        << method;
  }
  // Still serving.
  const std::string id = upload(std::string(16, 'x'), 2, 2, v1::DTYPE_F32, 5);
  expect_downloads(id, std::string(16, 'x'), {3});
}

}  // namespace
}  // namespace gcompute::service_test
