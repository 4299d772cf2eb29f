// SPDX-License-Identifier: Apache-2.0
// Every error the CPU path can produce, with its exact gRPC code and a message naming the
// field and values; deadlines, cancellation, queue limits and draining; /metrics and
// grpc.health.v1. After each error the server must still answer GetServerInfo.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "service_fixture.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {
namespace {

using gcompute::testing::Rng;
using Clock = std::chrono::steady_clock;
constexpr std::int32_t kNoEdge = std::numeric_limits<std::int32_t>::max();

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

template <typename Req, typename Resp, typename Method>
grpc::Status call(v1::Compute::Stub& stub, Method method, const Req& req, Resp* resp = nullptr) {
  Resp local;
  grpc::ClientContext ctx;
  deadline(ctx);
  return (stub.*method)(&ctx, req, resp ? resp : &local);
}

grpc::Status transpose(v1::Compute::Stub& stub, const v1::TransposeRequest& r) {
  return call<v1::TransposeRequest, v1::TransposeResponse>(stub, &v1::Compute::Stub::Transpose, r);
}
grpc::Status matmul(v1::Compute::Stub& stub, const v1::MatMulRequest& r) {
  return call<v1::MatMulRequest, v1::MatMulResponse>(stub, &v1::Compute::Stub::MatMul, r);
}
grpc::Status svd(v1::Compute::Stub& stub, const v1::SvdRequest& r, bool batched = false) {
  return call<v1::SvdRequest, v1::SvdResponse>(
      stub, batched ? &v1::Compute::Stub::BatchedSvd : &v1::Compute::Stub::Svd, r);
}
grpc::Status apsp(v1::Compute::Stub& stub, const v1::ApspRequest& r) {
  return call<v1::ApspRequest, v1::ApspResponse>(stub, &v1::Compute::Stub::Apsp, r);
}
grpc::Status shortest_path(v1::Compute::Stub& stub, const v1::ShortestPathRequest& r,
                           v1::ShortestPathResponse* resp = nullptr) {
  return call<v1::ShortestPathRequest, v1::ShortestPathResponse>(
      stub, &v1::Compute::Stub::ShortestPath, r, resp);
}

v1::Matrix f32_matrix(std::int64_t rows, std::int64_t cols, float fill = 1.0f,
                      std::int64_t batch = 0) {
  const std::int64_t b = batch == 0 ? 1 : batch;
  return make_matrix(rows, cols,
                     std::vector<float>(static_cast<std::size_t>(b * rows * cols), fill), batch);
}

/// A streamed upload where `parts` are sent as they are (header or chunks).
grpc::Status raw_upload(v1::Compute::Stub& stub, const std::vector<v1::UploadMatrixRequest>& parts,
                        v1::UploadMatrixResponse* resp = nullptr) {
  v1::UploadMatrixResponse local;
  grpc::ClientContext ctx;
  deadline(ctx);
  auto writer = stub.UploadMatrix(&ctx, resp ? resp : &local);
  for (const auto& p : parts) {
    if (!writer->Write(p)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

v1::UploadMatrixRequest chunk_part(std::uint64_t offset, std::size_t bytes) {
  v1::UploadMatrixRequest r;
  r.mutable_chunk()->set_offset(offset);
  r.mutable_chunk()->set_data(std::string(bytes, '\x01'));
  return r;
}

/// Uploads a whole matrix in chunks of `chunk` bytes.
grpc::Status upload_matrix(v1::Compute::Stub& stub, const v1::Matrix& m, std::size_t chunk,
                           v1::UploadMatrixResponse* resp = nullptr) {
  std::vector<v1::UploadMatrixRequest> parts{header_part(m.rows(), m.cols(), m.dtype())};
  for (std::size_t off = 0; off < m.data().size(); off += chunk) {
    v1::UploadMatrixRequest p;
    p.mutable_chunk()->set_offset(off);
    p.mutable_chunk()->set_data(m.data().substr(off, chunk));
    parts.push_back(std::move(p));
  }
  return raw_upload(stub, parts, resp);
}

/// A server per test, with `options()`; each test leaves it still serving.
class ServiceErrors : public ::testing::Test {
 protected:
  virtual ServerOptions options() const { return test_options(); }
  void SetUp() override {
    ts_ = start_server(options());
    ASSERT_NE(ts_, nullptr);
  }
  void TearDown() override {
    if (ts_) {
      EXPECT_TRUE(still_serving(stub()));
    }
  }
  v1::Compute::Stub& stub() { return *ts_->stub; }
  std::unique_ptr<TestServer> ts_;
};

// ---- INVALID_ARGUMENT --------------------------------------------------------------------

TEST_F(ServiceErrors, MatrixShapeAndBytes) {
  v1::TransposeRequest r;
  *r.mutable_a()->mutable_inline_() = f32_matrix(3, 4);
  r.mutable_a()->mutable_inline_()->mutable_data()->resize(40);
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::INVALID_ARGUMENT,
                         {"a.inline.data has 40 bytes but 3x4 f32 needs 48"}));

  *r.mutable_a()->mutable_inline_() = f32_matrix(2, 3, 1.0f, 2);
  r.mutable_a()->mutable_inline_()->mutable_data()->append("xyz");
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::INVALID_ARGUMENT,
                         {"a.inline.data has 51 bytes but 2 x 2x3 f32 needs 48"}));

  *r.mutable_a()->mutable_inline_() = f32_matrix(2, 2);
  r.mutable_a()->mutable_inline_()->set_dtype(v1::DTYPE_UNSPECIFIED);
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::INVALID_ARGUMENT,
                         {"a.inline.dtype", "DTYPE_UNSPECIFIED"}));

  r.mutable_a()->mutable_inline_()->set_dtype(static_cast<v1::DType>(42));
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::INVALID_ARGUMENT, {"a.inline.dtype", "42"}));

  *r.mutable_a()->mutable_inline_() = f32_matrix(2, 2);
  r.mutable_a()->mutable_inline_()->set_rows(-1);
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::INVALID_ARGUMENT,
                         {"a.inline has a negative dimension", "rows=-1"}));
  r.mutable_a()->mutable_inline_()->set_rows(2);
  r.mutable_a()->mutable_inline_()->set_batch(-3);
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::INVALID_ARGUMENT,
                         {"a.inline has a negative dimension", "batch=-3"}));

  EXPECT_TRUE(has_status(transpose(stub(), v1::TransposeRequest()), grpc::INVALID_ARGUMENT,
                         {"a is missing", "a.inline", "a.ref"}));
}

TEST_F(ServiceErrors, MatMulArguments) {
  v1::MatMulRequest r;
  *r.mutable_a()->mutable_inline_() = f32_matrix(3, 4);
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT, {"b is missing"}));

  *r.mutable_b()->mutable_inline_() = f32_matrix(5, 2);
  EXPECT_TRUE(
      has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT,
                 {"A is 3x4 f32 but B is 5x2 f32", "op(A) has 4 columns, op(B) has 5 rows"}));
  r.set_transpose_b(true);  // op(B) = 2x5: still 4 vs 2
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT,
                         {"A is 3x4 f32 but B is 5x2 f32", "op(B) has 2 rows", "transpose_b=1"}));
  r.set_transpose_b(false);

  *r.mutable_b()->mutable_inline_() = make_matrix(4, 2, std::vector<double>(8, 1.0));
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT,
                         {"A is 3x4 f32 but B is 4x2 f64", "dtypes differ"}));

  *r.mutable_b()->mutable_inline_() = f32_matrix(4, 2);
  r.set_precision(v1::PRECISION_F64);
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT,
                         {"precision f64 needs f64 operands, got f32"}));
  r.set_precision(static_cast<v1::Precision>(99));
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT, {"precision", "99"}));
  {
    v1::MatMulRequest d;
    *d.mutable_a()->mutable_inline_() = make_matrix(2, 2, std::vector<double>(4, 1.0));
    *d.mutable_b()->mutable_inline_() = make_matrix(2, 2, std::vector<double>(4, 1.0));
    d.set_precision(v1::PRECISION_TF32);
    EXPECT_TRUE(has_status(matmul(stub(), d), grpc::INVALID_ARGUMENT,
                           {"precision tf32 needs f32 operands, got f64"}));
    *d.mutable_a()->mutable_inline_() = make_matrix(2, 2, std::vector<std::int32_t>(4, 1));
    *d.mutable_b()->mutable_inline_() = make_matrix(2, 2, std::vector<std::int32_t>(4, 1));
    d.set_precision(v1::PRECISION_DEFAULT);
    EXPECT_TRUE(has_status(matmul(stub(), d), grpc::INVALID_ARGUMENT, {"i32"}));
  }
  r.set_precision(v1::PRECISION_DEFAULT);

  r.set_beta(0.5);
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT,
                         {"c is missing", "needed because beta = 0.5"}));
  *r.mutable_c()->mutable_inline_() = f32_matrix(2, 3);
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT,
                         {"C is 2x3 f32 but the result is 3x2 f32"}));
  r.clear_beta();
  r.set_alpha(std::numeric_limits<double>::infinity());
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT, {"alpha", "finite"}));
  r.clear_alpha();

  *r.mutable_a()->mutable_inline_() = f32_matrix(3, 4, 1.0f, 2);
  *r.mutable_b()->mutable_inline_() = f32_matrix(4, 2, 1.0f, 3);
  EXPECT_TRUE(has_status(matmul(stub(), r), grpc::INVALID_ARGUMENT,
                         {"batch sizes 2 (A) and 3 (B) neither match nor broadcast"}));
}

TEST_F(ServiceErrors, SvdArguments) {
  v1::SvdRequest r;
  *r.mutable_a()->mutable_inline_() = f32_matrix(4, 4, 1.0f, 3);
  EXPECT_TRUE(has_status(svd(stub(), r), grpc::INVALID_ARGUMENT,
                         {"a is a batch of 3 matrices; Svd takes one, use BatchedSvd"}));
  *r.mutable_a()->mutable_inline_() = make_matrix(4, 4, std::vector<double>(16, 1.0));
  for (double tol : {1.5, -0.1, 1.0}) {
    r.set_tolerance(tol);
    EXPECT_TRUE(has_status(svd(stub(), r), grpc::INVALID_ARGUMENT,
                           {"tolerance must be in [0, 1)", "(a is 4x4 f64)"}))
        << tol;
  }
  r.set_tolerance(std::nan(""));
  EXPECT_TRUE(has_status(svd(stub(), r), grpc::INVALID_ARGUMENT, {"tolerance"}));
  r.set_tolerance(0);
  r.set_max_sweeps(-2);
  EXPECT_TRUE(
      has_status(svd(stub(), r, true), grpc::INVALID_ARGUMENT, {"max_sweeps must be >= 0", "-2"}));
  r.set_max_sweeps(0);
  r.set_method(static_cast<v1::SvdMethod>(9));
  EXPECT_TRUE(
      has_status(svd(stub(), r), grpc::INVALID_ARGUMENT, {"method = 9 is not a known SvdMethod"}));
  r.set_method(v1::SVD_METHOD_AUTO);
  *r.mutable_a()->mutable_inline_() = make_matrix(2, 2, std::vector<std::int32_t>(4, 1));
  EXPECT_TRUE(has_status(svd(stub(), r), grpc::INVALID_ARGUMENT, {"svd takes f32 or f64", "i32"}));
  EXPECT_TRUE(
      has_status(svd(stub(), v1::SvdRequest(), true), grpc::INVALID_ARGUMENT, {"a is missing"}));
}

TEST_F(ServiceErrors, ApspArguments) {
  v1::ApspRequest r;
  *r.mutable_dense() = f32_matrix(3, 4);
  EXPECT_TRUE(has_status(apsp(stub(), r), grpc::INVALID_ARGUMENT,
                         {"dense is 3x4 f32; APSP needs one square n x n weight matrix"}));
  *r.mutable_dense() = f32_matrix(3, 3, 1.0f, 2);
  EXPECT_TRUE(has_status(apsp(stub(), r), grpc::INVALID_ARGUMENT, {"dense is 2 x 3x3 f32"}));
  *r.mutable_dense() = make_matrix(3, 3, std::vector<double>(9, 1.0));
  EXPECT_TRUE(has_status(apsp(stub(), r), grpc::INVALID_ARGUMENT,
                         {"dense is 3x3 f64; APSP weights are f32 or i32"}));

  std::vector<std::int32_t> wi(9, kNoEdge);
  wi[1 * 3 + 2] = 1 << 30;
  *r.mutable_dense() = make_matrix(3, 3, wi);
  EXPECT_TRUE(has_status(apsp(stub(), r), grpc::INVALID_ARGUMENT,
                         {"dense[1][2] = 1073741824 is outside +-1073741823"}));
  wi[1 * 3 + 2] = -(1 << 30);
  *r.mutable_dense() = make_matrix(3, 3, wi);
  EXPECT_TRUE(has_status(apsp(stub(), r), grpc::INVALID_ARGUMENT, {"dense[1][2] = -1073741824"}));

  v1::ApspRequest e;
  auto* el = e.mutable_edges();
  el->set_num_vertices(5);
  for (auto [s, t] : {std::pair{0, 1}, {1, 2}, {2, 7}}) {
    el->add_src(s);
    el->add_dst(t);
    el->add_weight(1);
  }
  EXPECT_TRUE(
      has_status(apsp(stub(), e), grpc::INVALID_ARGUMENT, {"edge 2: endpoint 7 is outside 0..4"}));
  el->set_dst(2, -1);
  EXPECT_TRUE(has_status(apsp(stub(), e), grpc::INVALID_ARGUMENT, {"edge 2: endpoint -1"}));
  el->set_dst(2, 3);
  el->add_src(0);
  EXPECT_TRUE(has_status(apsp(stub(), e), grpc::INVALID_ARGUMENT,
                         {"src, dst and weight have 4, 3 and 3 entries"}));
  el->mutable_src()->RemoveLast();
  el->set_weight(0, 1.5);
  el->set_dtype(v1::DTYPE_I32);
  EXPECT_TRUE(has_status(apsp(stub(), e), grpc::INVALID_ARGUMENT, {"edge 0: weight 1.5"}));
  el->set_dtype(v1::DTYPE_F32);
  el->set_num_vertices(-2);
  EXPECT_TRUE(has_status(apsp(stub(), e), grpc::INVALID_ARGUMENT, {"edges.num_vertices = -2"}));

  EXPECT_TRUE(
      has_status(apsp(stub(), v1::ApspRequest()), grpc::INVALID_ARGUMENT, {"graph is missing"}));
  v1::ApspRequest g;
  g.set_graph_id("");
  EXPECT_TRUE(has_status(apsp(stub(), g), grpc::INVALID_ARGUMENT, {"graph_id is empty"}));

  v1::ApspRequest ttl;
  *ttl.mutable_dense() = f32_matrix(2, 2);
  ttl.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  ttl.mutable_output()->set_ttl_seconds(-5);
  EXPECT_TRUE(has_status(apsp(stub(), ttl), grpc::INVALID_ARGUMENT,
                         {"output.ttl_seconds must be >= 0, got -5"}));
}

TEST_F(ServiceErrors, ShortestPathArguments) {
  EXPECT_TRUE(has_status(shortest_path(stub(), v1::ShortestPathRequest()), grpc::INVALID_ARGUMENT,
                         {"from is missing"}));
  v1::ShortestPathRequest r;
  *r.mutable_graph()->mutable_dense() = f32_matrix(5, 5);
  r.set_source(0);
  r.set_target(5);
  EXPECT_TRUE(
      has_status(shortest_path(stub(), r), grpc::INVALID_ARGUMENT, {"target = 5 is outside 0..4"}));
  r.set_source(-1);
  r.set_target(0);
  EXPECT_TRUE(has_status(shortest_path(stub(), r), grpc::INVALID_ARGUMENT,
                         {"source = -1 is outside 0..4"}));
  *r.mutable_graph()->mutable_dense() = f32_matrix(5, 4);
  EXPECT_TRUE(
      has_status(shortest_path(stub(), r), grpc::INVALID_ARGUMENT, {"graph.dense is 5x4 f32"}));

  // Stored distances: vertex out of range, and matrices that are not APSP results.
  v1::ApspRequest a;
  *a.mutable_dense() = f32_matrix(4, 4);
  a.set_next_hop(true);
  a.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  v1::ApspResponse stored;
  ASSERT_TRUE(
      is_ok(call<v1::ApspRequest, v1::ApspResponse>(stub(), &v1::Compute::Stub::Apsp, a, &stored)));
  v1::ShortestPathRequest s;
  *s.mutable_stored()->mutable_distances() = stored.distances().stored().ref();
  *s.mutable_stored()->mutable_next_hop() = stored.next_hop().stored().ref();
  s.set_source(1);
  s.set_target(9);
  EXPECT_TRUE(
      has_status(shortest_path(stub(), s), grpc::INVALID_ARGUMENT, {"target = 9 is outside 0..3"}));
  *s.mutable_stored()->mutable_next_hop() = stored.distances().stored().ref();  // f32, not i32
  s.set_target(2);
  EXPECT_TRUE(
      has_status(shortest_path(stub(), s), grpc::INVALID_ARGUMENT, {"next_hop is 4x4 f32"}));
}

TEST_F(ServiceErrors, UploadProtocol) {
  // 2x3 f32 = 24 bytes.
  EXPECT_TRUE(has_status(raw_upload(stub(), {chunk_part(0, 8)}), grpc::INVALID_ARGUMENT,
                         {"chunk before header"}));
  EXPECT_TRUE(has_status(raw_upload(stub(), {}), grpc::INVALID_ARGUMENT,
                         {"upload ended without a header"}));
  EXPECT_TRUE(has_status(
      raw_upload(stub(), {header_part(2, 3, v1::DTYPE_F32), chunk_part(0, 16), chunk_part(8, 8)}),
      grpc::INVALID_ARGUMENT, {"chunk.offset = 8 with 8 bytes overlaps"}));
  EXPECT_TRUE(has_status(
      raw_upload(stub(), {header_part(2, 3, v1::DTYPE_F32), chunk_part(16, 8), chunk_part(12, 8)}),
      grpc::INVALID_ARGUMENT, {"chunk.offset = 12 with 8 bytes overlaps"}));
  EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(2, 3, v1::DTYPE_F32), chunk_part(20, 8)}),
                         grpc::INVALID_ARGUMENT,
                         {"chunk.offset = 20 with 8 bytes runs past the matrix's 24 bytes"}));
  EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(2, 3, v1::DTYPE_F32), chunk_part(100, 0)}),
                         grpc::INVALID_ARGUMENT, {"chunk.offset = 100"}));
  EXPECT_TRUE(has_status(
      raw_upload(stub(), {header_part(2, 3, v1::DTYPE_F32), chunk_part(0, 8), chunk_part(16, 8)}),
      grpc::INVALID_ARGUMENT,
      {"upload ended incomplete: bytes from offset 8 of 24 were never sent"}));
  EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(2, 3, v1::DTYPE_F32), chunk_part(8, 16)}),
                         grpc::INVALID_ARGUMENT, {"bytes from offset 0 of 24"}));
  EXPECT_TRUE(has_status(
      raw_upload(stub(), {header_part(2, 3, v1::DTYPE_F32), header_part(2, 3, v1::DTYPE_F32)}),
      grpc::INVALID_ARGUMENT, {"header sent twice"}));
  EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(2, -3, v1::DTYPE_F32)}),
                         grpc::INVALID_ARGUMENT, {"header.shape has a negative dimension"}));
  EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(2, 3, v1::DTYPE_UNSPECIFIED)}),
                         grpc::INVALID_ARGUMENT, {"header.shape.dtype"}));
  auto ttl = header_part(2, 3, v1::DTYPE_F32);
  ttl.mutable_header()->set_ttl_seconds(-1);
  EXPECT_TRUE(has_status(raw_upload(stub(), {ttl}), grpc::INVALID_ARGUMENT,
                         {"header.ttl_seconds must be >= 0, got -1"}));
  // A correct upload after all of that, exactly covered by three chunks out of order.
  v1::UploadMatrixResponse ok;
  EXPECT_TRUE(is_ok(raw_upload(
      stub(),
      {header_part(2, 3, v1::DTYPE_F32), chunk_part(16, 8), chunk_part(0, 8), chunk_part(8, 8)},
      &ok)));
  EXPECT_EQ(ok.matrix().size_bytes(), 24u);
}

TEST_F(ServiceErrors, GraphArguments) {
  v1::CreateGraphRequest c;
  c.set_graph_id("bad id!");
  c.set_num_vertices(2);
  EXPECT_TRUE(has_status(call<v1::CreateGraphRequest, v1::CreateGraphResponse>(
                             stub(), &v1::Compute::Stub::CreateGraph, c),
                         grpc::INVALID_ARGUMENT, {"graph_id", "bad id!", "position 3"}));
  c.set_graph_id(std::string(129, 'x'));
  EXPECT_TRUE(has_status(call<v1::CreateGraphRequest, v1::CreateGraphResponse>(
                             stub(), &v1::Compute::Stub::CreateGraph, c),
                         grpc::INVALID_ARGUMENT, {"129 characters"}));
  c.set_graph_id("g");
  auto* e = c.add_edges();
  e->add_tails(0);
  e->add_heads(5);
  EXPECT_TRUE(has_status(call<v1::CreateGraphRequest, v1::CreateGraphResponse>(
                             stub(), &v1::Compute::Stub::CreateGraph, c),
                         grpc::INVALID_ARGUMENT, {"5"}));
  // Nothing was created by the failures.
  v1::ListGraphsResponse list;
  ASSERT_TRUE(is_ok(call<v1::ListGraphsRequest, v1::ListGraphsResponse>(
      stub(), &v1::Compute::Stub::ListGraphs, v1::ListGraphsRequest(), &list)));
  EXPECT_EQ(list.graphs_size(), 0);
}

// ---- NOT_FOUND, ALREADY_EXISTS, ABORTED --------------------------------------------------

TEST_F(ServiceErrors, UnknownRefsAndGraphs) {
  v1::TransposeRequest t;
  t.mutable_a()->mutable_ref()->set_id("m-nope");
  EXPECT_TRUE(has_status(transpose(stub(), t), grpc::NOT_FOUND, {"a.ref.id", "m-nope"}));
  v1::MatMulRequest mm;
  *mm.mutable_a()->mutable_inline_() = f32_matrix(2, 2);
  mm.mutable_b()->mutable_ref()->set_id("m-gone");
  EXPECT_TRUE(has_status(matmul(stub(), mm), grpc::NOT_FOUND, {"b.ref.id", "m-gone"}));
  v1::ApspRequest a;
  a.mutable_dense_ref()->set_id("m-w");
  EXPECT_TRUE(has_status(apsp(stub(), a), grpc::NOT_FOUND, {"dense_ref.id", "m-w"}));
  v1::ShortestPathRequest sp;
  sp.mutable_stored()->mutable_distances()->set_id("m-d");
  sp.mutable_stored()->mutable_next_hop()->set_id("m-n");
  EXPECT_TRUE(
      has_status(shortest_path(stub(), sp), grpc::NOT_FOUND, {"stored.distances.id", "m-d"}));
  v1::DeleteMatrixRequest del;
  del.mutable_ref()->set_id("m-x");
  EXPECT_TRUE(has_status(call<v1::DeleteMatrixRequest, v1::DeleteMatrixResponse>(
                             stub(), &v1::Compute::Stub::DeleteMatrix, del),
                         grpc::NOT_FOUND, {"m-x"}));
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::DownloadMatrixRequest dl;
    dl.mutable_ref()->set_id("m-y");
    auto reader = stub().DownloadMatrix(&ctx, dl);
    v1::DownloadMatrixResponse part;
    EXPECT_FALSE(reader->Read(&part));
    EXPECT_TRUE(has_status(reader->Finish(), grpc::NOT_FOUND, {"ref.id", "m-y"}));
  }

  v1::GetGraphRequest g;
  g.set_graph_id("missing");
  EXPECT_TRUE(has_status(
      call<v1::GetGraphRequest, v1::GetGraphResponse>(stub(), &v1::Compute::Stub::GetGraph, g),
      grpc::NOT_FOUND, {"missing", "not found"}));
  v1::DeleteGraphRequest dg;
  dg.set_graph_id("missing");
  EXPECT_TRUE(has_status(call<v1::DeleteGraphRequest, v1::DeleteGraphResponse>(
                             stub(), &v1::Compute::Stub::DeleteGraph, dg),
                         grpc::NOT_FOUND, {"missing"}));
  v1::ApplyEditsRequest ae;
  ae.set_graph_id("missing");
  ae.add_edits()->mutable_add_vertex();
  EXPECT_TRUE(has_status(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
                             stub(), &v1::Compute::Stub::ApplyEdits, ae),
                         grpc::NOT_FOUND, {"missing"}));
  v1::ApspRequest ga;
  ga.set_graph_id("missing");
  EXPECT_TRUE(has_status(apsp(stub(), ga), grpc::NOT_FOUND, {"missing"}));
}

TEST_F(ServiceErrors, GraphEditsAtomicConflictsAndDuplicates) {
  v1::CreateGraphRequest c;
  c.set_graph_id("g1");
  c.set_num_vertices(3);
  auto* e = c.add_edges();
  e->add_tails(0);
  e->add_heads(1);
  e->set_weight(1);
  ASSERT_TRUE(is_ok(call<v1::CreateGraphRequest, v1::CreateGraphResponse>(
      stub(), &v1::Compute::Stub::CreateGraph, c)));
  EXPECT_TRUE(has_status(call<v1::CreateGraphRequest, v1::CreateGraphResponse>(
                             stub(), &v1::Compute::Stub::CreateGraph, c),
                         grpc::ALREADY_EXISTS, {"g1", "already exists"}));

  auto snapshot = [&] {
    v1::GetGraphRequest g;
    g.set_graph_id("g1");
    v1::GetGraphResponse snap;
    EXPECT_TRUE(is_ok(call<v1::GetGraphRequest, v1::GetGraphResponse>(
        stub(), &v1::Compute::Stub::GetGraph, g, &snap)));
    return snap.SerializeAsString();
  };
  const std::string before = snapshot();

  v1::ApplyEditsRequest ae;
  ae.set_graph_id("g1");
  ae.add_edits()->mutable_add_vertex();
  auto* sw = ae.add_edits()->mutable_set_weight();
  sw->set_edge_id(0);
  sw->set_weight(9);
  ae.add_edits()->mutable_delete_edge()->set_edge_id(99);
  EXPECT_TRUE(has_status(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
                             stub(), &v1::Compute::Stub::ApplyEdits, ae),
                         grpc::NOT_FOUND, {"edits[2].delete_edge.edge_id = 99"}));
  EXPECT_EQ(snapshot(), before) << "a failed batch must apply nothing";

  ae.clear_edits();
  ae.add_edits()->mutable_delete_vertex()->set_vertex_id(7);
  EXPECT_TRUE(has_status(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
                             stub(), &v1::Compute::Stub::ApplyEdits, ae),
                         grpc::NOT_FOUND, {"edits[0]", "7"}));
  ae.clear_edits();
  ae.add_edits();  // no operation set
  EXPECT_TRUE(has_status(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
                             stub(), &v1::Compute::Stub::ApplyEdits, ae),
                         grpc::INVALID_ARGUMENT, {"edits[0] has no operation set"}));

  ae.clear_edits();
  ae.add_edits()->mutable_add_vertex();
  ae.set_expected_version(5);
  EXPECT_TRUE(has_status(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
                             stub(), &v1::Compute::Stub::ApplyEdits, ae),
                         grpc::ABORTED, {"g1", "has version 1, expected 5"}));
  EXPECT_EQ(snapshot(), before);
  ae.set_expected_version(1);
  v1::ApplyEditsResponse applied;
  ASSERT_TRUE(is_ok(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
      stub(), &v1::Compute::Stub::ApplyEdits, ae, &applied)));
  EXPECT_EQ(applied.version(), 2u);
  EXPECT_EQ(applied.results(0).vertex_id(), 3u);

  // ShortestPath on the graph: vertex ids that do not exist are NOT_FOUND.
  v1::ShortestPathRequest sp;
  sp.mutable_graph()->set_graph_id("g1");
  sp.set_source(0);
  sp.set_target(42);
  EXPECT_TRUE(
      has_status(shortest_path(stub(), sp), grpc::NOT_FOUND, {"target = 42: no such vertex"}));
}

// ---- FAILED_PRECONDITION -----------------------------------------------------------------

TEST_F(ServiceErrors, NegativeCycleAndNonFinite) {
  const float inf = std::numeric_limits<float>::infinity();
  // 0 -> 1 -> 2 -> 1 with 1 -> 2 -> 1 summing to -1; 3 is separate.
  std::vector<float> w(16, inf);
  w[0 * 4 + 1] = 1;
  w[1 * 4 + 2] = 2;
  w[2 * 4 + 1] = -3;
  w[3 * 4 + 0] = 5;
  v1::ApspRequest r;
  *r.mutable_dense() = make_matrix(4, 4, w);
  const grpc::Status st = apsp(stub(), r);
  ASSERT_TRUE(has_status(st, grpc::FAILED_PRECONDITION, {"negative cycle through vertex "}));
  const std::string msg = st.error_message();
  const long v = std::strtol(msg.c_str() + msg.find("vertex ") + 7, nullptr, 10);
  // The kernel's contract: a vertex on or reaching into the cycle (D[v][v] < 0).
  EXPECT_TRUE(v == 1 || v == 2) << msg;

  // The same through a stored graph reports a vertex id (ids 1 and 2 map to 11 and 12).
  v1::CreateGraphRequest c;
  c.set_graph_id("neg");
  c.set_num_vertices(13);
  for (auto [s, t, x] : {std::tuple{10, 11, 1.0}, {11, 12, 2.0}, {12, 11, -3.0}}) {
    auto* e = c.add_edges();
    e->add_tails(s);
    e->add_heads(t);
    e->set_weight(x);
  }
  v1::ApplyEditsRequest ae;  // delete 0..9 so that rows and ids differ
  ae.set_graph_id("neg");
  for (int i = 0; i < 10; ++i) ae.add_edits()->mutable_delete_vertex()->set_vertex_id(i);
  ASSERT_TRUE(is_ok(call<v1::CreateGraphRequest, v1::CreateGraphResponse>(
      stub(), &v1::Compute::Stub::CreateGraph, c)));
  ASSERT_TRUE(is_ok(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
      stub(), &v1::Compute::Stub::ApplyEdits, ae)));
  v1::ApspRequest g;
  g.set_graph_id("neg");
  const grpc::Status gst = apsp(stub(), g);
  ASSERT_TRUE(has_status(gst, grpc::FAILED_PRECONDITION, {"negative cycle through vertex "}));
  const std::string gmsg = gst.error_message();
  const long gv = std::strtol(gmsg.c_str() + gmsg.find("vertex ") + 7, nullptr, 10);
  EXPECT_TRUE(gv == 11 || gv == 12) << gmsg;
  // ShortestPath of a stored graph runs one SSSP from the source: a cycle it reaches fails it
  // (naming a vertex on the cycle), one it cannot reach does not matter.
  v1::ShortestPathRequest sp;
  sp.mutable_graph()->set_graph_id("neg");
  sp.set_source(10);
  sp.set_target(12);
  const grpc::Status pst = shortest_path(stub(), sp);
  ASSERT_TRUE(has_status(pst, grpc::FAILED_PRECONDITION, {"negative cycle through vertex "}));
  const std::string pmsg = pst.error_message();
  const long pv = std::strtol(pmsg.c_str() + pmsg.find("vertex ") + 7, nullptr, 10);
  EXPECT_TRUE(pv == 11 || pv == 12) << pmsg;
  sp.set_source(12);  // reaches the cycle too
  EXPECT_TRUE(has_status(shortest_path(stub(), sp), grpc::FAILED_PRECONDITION, {"negative cycle"}));
  v1::ApplyEditsRequest add;  // 10 <- 13 -> 14 beside it: no cycle reachable from 13
  add.set_graph_id("neg");
  add.add_edits()->mutable_add_vertex();
  add.add_edits()->mutable_add_vertex();
  ASSERT_TRUE(is_ok(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
      stub(), &v1::Compute::Stub::ApplyEdits, add)));
  v1::ApplyEditsRequest link;
  link.set_graph_id("neg");
  auto* e = link.add_edits()->mutable_add_edge();
  e->add_tails(13);
  e->add_heads(14);
  e->set_weight(2.5);
  ASSERT_TRUE(is_ok(call<v1::ApplyEditsRequest, v1::ApplyEditsResponse>(
      stub(), &v1::Compute::Stub::ApplyEdits, link)));
  sp.set_source(13);
  sp.set_target(14);
  v1::ShortestPathResponse path;
  grpc::ClientContext pctx;
  ASSERT_TRUE(is_ok(stub().ShortestPath(&pctx, sp, &path)));
  EXPECT_TRUE(path.reachable());
  EXPECT_EQ(path.length(), 2.5);
  ASSERT_EQ(path.vertices_size(), 2);
  EXPECT_EQ(path.vertices(0), 13);
  EXPECT_EQ(path.vertices(1), 14);

  // NaN weights.
  std::vector<float> wn(9, inf);
  wn[5] = std::nanf("");
  *r.mutable_dense() = make_matrix(3, 3, wn);
  EXPECT_TRUE(has_status(apsp(stub(), r), grpc::FAILED_PRECONDITION, {"dense[1][2]"}));

  // NaN and inf in SVD input.
  std::vector<double> a(12, 1.0);
  a[1 * 4 + 2] = std::nan("");
  v1::SvdRequest s;
  *s.mutable_a()->mutable_inline_() = make_matrix(3, 4, a);
  EXPECT_TRUE(has_status(svd(stub(), s), grpc::FAILED_PRECONDITION,
                         {"a has a non-finite value at row 1, column 2"}));
  std::vector<float> b(2 * 12, 1.0f);
  b[12 + 4] = -std::numeric_limits<float>::infinity();
  *s.mutable_a()->mutable_inline_() = make_matrix(3, 4, b, 2);
  EXPECT_TRUE(has_status(svd(stub(), s, true), grpc::FAILED_PRECONDITION,
                         {"a has a non-finite value at batch 1, row 1, column 0"}));
}

TEST_F(ServiceErrors, I32DistancesOutsideTheI32RangeAreOutOfRange) {
  // 0 -> 1 -> 2 -> 3 over three edges of 2^30 - 1 (each within the accepted +-(2^30 - 1)):
  // D[0][3] = 3221225469 does not fit in i32. The negative twin: -3221225469.
  const std::int32_t big = (1 << 30) - 1, none = std::numeric_limits<std::int32_t>::max();
  for (const std::int32_t sign : {1, -1}) {
    std::vector<std::int32_t> w(16, none);
    w[0 * 4 + 1] = w[1 * 4 + 2] = w[2 * 4 + 3] = sign * big;
    v1::ApspRequest r;
    *r.mutable_dense() = make_matrix(4, 4, w);
    r.set_next_hop(sign < 0);
    // D[0][2] = +-2147483646 still fits; (0, 3) is the first pair that does not.
    const std::string want = sign > 0 ? " is 3221225469," : " is -3221225469,";
    EXPECT_TRUE(has_status(apsp(stub(), r), grpc::OUT_OF_RANGE,
                           {"from vertex 0 to vertex 3" + want, "[-2147483647, 2147483646]"}));
    // ShortestPath on the same graph says so too, instead of "unreachable" or a wrapped length.
    v1::ShortestPathRequest p;
    *p.mutable_graph() = r;
    p.set_source(0);
    p.set_target(3);
    EXPECT_TRUE(has_status(call<v1::ShortestPathRequest, v1::ShortestPathResponse>(
                               stub(), &v1::Compute::Stub::ShortestPath, p),
                           grpc::OUT_OF_RANGE, {"outside the i32 range"}));
  }
  // Within range the same chain answers exactly.
  std::vector<std::int32_t> ok(9, none);
  ok[0 * 3 + 1] = ok[1 * 3 + 2] = big;
  v1::ApspRequest r;
  *r.mutable_dense() = make_matrix(3, 3, ok);
  v1::ApspResponse resp;
  ASSERT_TRUE(
      is_ok(call<v1::ApspRequest, v1::ApspResponse>(stub(), &v1::Compute::Stub::Apsp, r, &resp)));
  EXPECT_EQ(values_of<std::int32_t>(resp.distances().inline_())[2], 2 * big);
}

// ---- RESOURCE_EXHAUSTED ------------------------------------------------------------------

class ServiceLimits : public ServiceErrors {
 protected:
  ServerOptions options() const override {
    ServerOptions o = small_message_options();
    o.limits.max_matrix_elements = 1 << 20;
    o.stored_matrix_quota_bytes = 3 << 19;  // 1.5 MiB
    return o;
  }
};

TEST_F(ServiceLimits, RequestOverMaxMessageSize) {
  v1::TransposeRequest r;
  *r.mutable_a()->mutable_inline_() = f32_matrix(600, 600);  // 1.44 MB
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::RESOURCE_EXHAUSTED));
  v1::UploadMatrixRequest big = chunk_part(0, 1100000);
  EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(600, 600, v1::DTYPE_F32), big}),
                         grpc::RESOURCE_EXHAUSTED));
}

TEST_F(ServiceLimits, MatrixOverMaxElements) {
  v1::TransposeRequest r;
  r.mutable_a()->mutable_inline_()->set_rows(2000);
  r.mutable_a()->mutable_inline_()->set_cols(1000);
  r.mutable_a()->mutable_inline_()->set_dtype(v1::DTYPE_F32);
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::RESOURCE_EXHAUSTED,
                         {"a.inline is 2000x1000 f32", "more than 1048576 elements"}));
  // Overflowing products are caught too.
  r.mutable_a()->mutable_inline_()->set_rows(std::int64_t{1} << 40);
  r.mutable_a()->mutable_inline_()->set_cols(std::int64_t{1} << 40);
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::RESOURCE_EXHAUSTED, {"more than 1048576"}));
  EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(1025, 1024, v1::DTYPE_F64)}),
                         grpc::RESOURCE_EXHAUSTED, {"header.shape is 1025x1024 f64"}));
  v1::MatMulRequest m;
  *m.mutable_a()->mutable_inline_() = f32_matrix(2048, 1);
  *m.mutable_b()->mutable_inline_() = f32_matrix(1, 2048);
  EXPECT_TRUE(has_status(matmul(stub(), m), grpc::RESOURCE_EXHAUSTED,
                         {"result C would be 2048x2048 f32", "more than 1048576 elements"}));
  v1::SvdRequest s;  // 1 x 1100: fine as input, but full Vt is 1100 x 1100
  *s.mutable_a()->mutable_inline_() = f32_matrix(1, 1100);
  s.set_full_matrices(true);
  EXPECT_TRUE(
      has_status(svd(stub(), s), grpc::RESOURCE_EXHAUSTED, {"SVD factor would be 1100x1100 f32"}));
  v1::ApspRequest e;
  e.mutable_edges()->set_num_vertices(1025);
  EXPECT_TRUE(has_status(apsp(stub(), e), grpc::RESOURCE_EXHAUSTED, {"1025x1025"}));
}

TEST_F(ServiceLimits, InlineResultTooLarge) {
  v1::MatMulRequest m;
  *m.mutable_a()->mutable_inline_() = f32_matrix(512, 2);
  *m.mutable_b()->mutable_inline_() = f32_matrix(2, 512);
  m.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_INLINE);
  EXPECT_TRUE(has_status(matmul(stub(), m), grpc::RESOURCE_EXHAUSTED,
                         {"result c (512x512 f32, 1048576 bytes) does not fit"}));
  // One factor that fits is fine; two that each fit but not together are refused.
  v1::SvdRequest s;
  *s.mutable_a()->mutable_inline_() = f32_matrix(1, 400, 0.0f);
  s.set_full_matrices(true);  // Vt is 400x400 f32 = 640000 bytes
  s.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_INLINE);
  EXPECT_TRUE(is_ok(svd(stub(), s)));
  *s.mutable_a()->mutable_inline_() = f32_matrix(400, 400, 0.0f);  // U and Vt: 1280000 bytes
  EXPECT_TRUE(has_status(svd(stub(), s), grpc::RESOURCE_EXHAUSTED,
                         {"result vt (400x400 f32, 640000 bytes) does not fit"}));
  s.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_AUTO);  // vt goes to the store
  v1::SvdResponse auto_resp;
  ASSERT_TRUE(
      is_ok(call<v1::SvdRequest, v1::SvdResponse>(stub(), &v1::Compute::Stub::Svd, s, &auto_resp)));
  EXPECT_TRUE(auto_resp.u().has_inline_());
  EXPECT_TRUE(auto_resp.vt().has_stored());
}

TEST_F(ServiceLimits, StoredQuotaOnUploadAndOnStoredResults) {
  GC_SEEDED_RNG(rng);
  const auto values = gcompute::testing::random_uniform<float>(rng, 512 * 512);
  v1::UploadMatrixResponse first;
  ASSERT_TRUE(is_ok(upload_matrix(stub(), make_matrix(512, 512, values), 256 << 10, &first)));
  EXPECT_TRUE(has_status(
      upload_matrix(stub(), make_matrix(512, 512, values), 256 << 10), grpc::RESOURCE_EXHAUSTED,
      {"stored-matrix quota exceeded", "1048576 bytes requested", "of 1572864"}));
  v1::TransposeRequest t;
  *t.mutable_a()->mutable_inline_() =
      make_matrix(400, 400, std::vector<float>(400 * 400, 2.0f));  // 640000 bytes
  t.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  EXPECT_TRUE(has_status(
      transpose(stub(), t), grpc::RESOURCE_EXHAUSTED,
      {"stored-matrix quota exceeded", "640000 bytes requested", "1048576 of 1572864 in use"}));
  // AUTO that has to store (result over the message size) hits the quota the same way.
  v1::MatMulRequest m;
  *m.mutable_a()->mutable_inline_() = f32_matrix(512, 1);
  *m.mutable_b()->mutable_inline_() = f32_matrix(1, 512);
  EXPECT_TRUE(has_status(matmul(stub(), m), grpc::RESOURCE_EXHAUSTED, {"quota"}));
  // Deleting the first frees its bytes and the failed attempts left no reservation behind.
  v1::DeleteMatrixRequest del;
  *del.mutable_ref() = first.matrix().ref();
  ASSERT_TRUE(is_ok(call<v1::DeleteMatrixRequest, v1::DeleteMatrixResponse>(
      stub(), &v1::Compute::Stub::DeleteMatrix, del)));
  v1::TransposeResponse stored;
  ASSERT_TRUE(is_ok(call<v1::TransposeRequest, v1::TransposeResponse>(
      stub(), &v1::Compute::Stub::Transpose, t, &stored)));
  ASSERT_TRUE(stored.at().has_stored());
  v1::UploadMatrixResponse again;  // 640000 + 262144 bytes fit, 640000 + 1048576 would not
  EXPECT_TRUE(is_ok(upload_matrix(
      stub(), make_matrix(256, 256, std::vector<float>(values.begin(), values.begin() + 256 * 256)),
      64 << 10, &again)));
  EXPECT_TRUE(has_status(upload_matrix(stub(), make_matrix(512, 512, values), 256 << 10),
                         grpc::RESOURCE_EXHAUSTED, {"902144 of 1572864 in use"}));
  const auto samples = parse_metrics(http_get(ts_->server->metrics_port(), "/metrics"));
  EXPECT_EQ(metric_value(samples, "gcompute_stored_matrix_bytes", {}), 640000 + 262144);
}

// ---- slow jobs: queue, deadline, cancellation, drain ---------------------------------------

/// An n x n f64 SVD by QDWH (SVD_METHOD_POLAR): several iterations, each a cancellation point
/// (the LAPACK methods are single calls that cannot be interrupted). "Sweeps" below are QDWH
/// iterations.
v1::SvdRequest big_svd(std::int64_t n, std::uint64_t seed, int max_sweeps = 0) {
  Rng rng(seed);
  v1::SvdRequest r;
  *r.mutable_a()->mutable_inline_() =
      make_matrix(n, n, gcompute::testing::random_normal<double>(rng, n * n));
  r.set_method(v1::SVD_METHOD_POLAR);
  r.set_max_sweeps(max_sweeps);
  return r;
}
constexpr std::int64_t kBigSvdN = 1000;

/// A unary call on its own thread, cancellable from the test thread.
struct Pending {
  grpc::ClientContext ctx;
  v1::SvdResponse resp;
  grpc::Status status;
  std::atomic<bool> done{false};
  std::thread thread;
  Pending(v1::Compute::Stub& stub, const v1::SvdRequest& req, double timeout_s = 120) {
    deadline(ctx, timeout_s);
    thread = std::thread([this, &stub, req] {
      status = stub.Svd(&ctx, req, &resp);
      done = true;
    });
  }
  ~Pending() {
    if (thread.joinable()) thread.join();
  }
};

double scrape(const TestServer& ts, const std::string& name,
              const std::map<std::string, std::string>& labels) {
  return metric_value(parse_metrics(http_get(ts.server->metrics_port(), "/metrics")), name, labels);
}

/// Polls until the metric reaches `value` or `timeout_s` passes.
bool wait_metric(const TestServer& ts, const std::string& name,
                 const std::map<std::string, std::string>& labels, double value,
                 double timeout_s = 30) {
  const auto start = Clock::now();
  while (seconds_since(start) < timeout_s) {
    if (scrape(ts, name, labels) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// Time of a cheap Transpose; with one worker it waits for whatever occupies the worker.
double transpose_latency(v1::Compute::Stub& stub) {
  v1::TransposeRequest r;
  *r.mutable_a()->mutable_inline_() = f32_matrix(3, 5);
  const auto start = Clock::now();
  EXPECT_TRUE(is_ok(transpose(stub, r)));
  return seconds_since(start);
}

class ServiceSlow : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o = test_options();
    o.workers = 1;
    o.queue_depth = 1;
    ts_ = start_server(o);
    ASSERT_NE(ts_, nullptr);
    // One sweep of the big SVD, measured: cancellation must act within about one sweep,
    // while the whole decomposition takes many.
    v1::SvdResponse resp;
    const auto start = Clock::now();
    ASSERT_TRUE(is_ok(call<v1::SvdRequest, v1::SvdResponse>(stub(), &v1::Compute::Stub::Svd,
                                                            big_svd(kBigSvdN, 1, 1), &resp)));
    sweep_s_ = seconds_since(start);
    ASSERT_FALSE(resp.converged());
    std::printf("one sweep of a %ldx%ld f64 SVD: %.3f s\n", static_cast<long>(kBigSvdN),
                static_cast<long>(kBigSvdN), sweep_s_);
  }
  void TearDown() override {
    if (ts_) {
      EXPECT_TRUE(still_serving(stub()));
    }
  }
  v1::Compute::Stub& stub() { return *ts_->stub; }
  std::unique_ptr<TestServer> ts_;
  double sweep_s_ = 0;
};

TEST_F(ServiceSlow, DeadlineStopsTheSvdBetweenSweeps) {
  // One iteration plus the final eigensolver, times 6, must exceed 1 s for the latency bound
  // below to mean anything.
  ASSERT_GT(6 * sweep_s_, 1.0) << "the big SVD is too fast on this machine; raise kBigSvdN";
  const auto start = Clock::now();
  grpc::Status st;
  {
    grpc::ClientContext ctx;
    deadline(ctx, 0.05);
    v1::SvdResponse resp;
    st = stub().Svd(&ctx, big_svd(kBigSvdN, 2), &resp);
  }
  EXPECT_TRUE(has_status(st, grpc::DEADLINE_EXCEEDED));
  EXPECT_LT(seconds_since(start), 1.0);
  // The worker is free again once the server noticed: within about a sweep, not the whole SVD.
  const double latency = transpose_latency(stub());
  EXPECT_LT(latency, std::max(1.0, 2 * sweep_s_)) << "sweep " << sweep_s_ << " s";
  // The server reports the call as DEADLINE_EXCEEDED, unless (slow builds) the deadline
  // passed before the handler ran, in which case gRPC drops the call and the server saw
  // only the setup call.
  auto server_saw_deadline = [&](double expected) {
    if (wait_metric(*ts_, "gcompute_requests_total",
                    {{"method", "Svd"}, {"code", "DEADLINE_EXCEEDED"}}, expected, 5)) {
      return true;
    }
    const double seen =
        scrape(*ts_, "gcompute_request_duration_seconds_count", {{"method", "Svd"}});
    const double ok = scrape(*ts_, "gcompute_requests_total", {{"method", "Svd"}, {"code", "OK"}});
    const double cancelled =
        scrape(*ts_, "gcompute_requests_total", {{"method", "Svd"}, {"code", "CANCELLED"}});
    const double deadline =
        scrape(*ts_, "gcompute_requests_total", {{"method", "Svd"}, {"code", "DEADLINE_EXCEEDED"}});
    std::printf("Svd calls seen by the server: %g (OK %g, CANCELLED %g, DEADLINE_EXCEEDED %g)\n",
                seen, ok, cancelled, deadline);
    return seen == ok + cancelled + deadline;  // no other outcome recorded
  };
  EXPECT_TRUE(server_saw_deadline(1));
  // A deadline that passed while queued is also DEADLINE_EXCEEDED, before any work.
  {
    Pending running(stub(), big_svd(kBigSvdN, 3));
    ASSERT_TRUE(wait_metric(*ts_, "gcompute_running_jobs", {}, 1));
    grpc::ClientContext ctx;
    deadline(ctx, 0.1);
    v1::SvdResponse resp;
    EXPECT_TRUE(has_status(stub().Svd(&ctx, big_svd(kBigSvdN, 4), &resp), grpc::DEADLINE_EXCEEDED));
    running.ctx.TryCancel();
  }
  EXPECT_TRUE(
      wait_metric(*ts_, "gcompute_requests_total", {{"method", "Svd"}, {"code", "CANCELLED"}}, 1));
  EXPECT_TRUE(server_saw_deadline(2));
}

TEST_F(ServiceSlow, ClientCancelStopsTheSvd) {
  ASSERT_GT(6 * sweep_s_, 1.0) << "the big SVD is too fast on this machine; raise kBigSvdN";
  const auto start = Clock::now();
  {
    Pending p(stub(), big_svd(kBigSvdN, 5));
    ASSERT_TRUE(wait_metric(*ts_, "gcompute_running_jobs", {}, 1));
    p.ctx.TryCancel();
    p.thread.join();
    EXPECT_TRUE(has_status(p.status, grpc::CANCELLED));
  }
  const double latency = transpose_latency(stub());
  EXPECT_LT(latency, std::max(1.0, 2 * sweep_s_)) << "sweep " << sweep_s_ << " s";
  EXPECT_LT(seconds_since(start), 6 * sweep_s_);
  EXPECT_TRUE(
      wait_metric(*ts_, "gcompute_requests_total", {{"method", "Svd"}, {"code", "CANCELLED"}}, 1));
}

TEST_F(ServiceSlow, QueueFullIsResourceExhausted) {
  Pending running(stub(), big_svd(kBigSvdN, 6));
  ASSERT_TRUE(wait_metric(*ts_, "gcompute_running_jobs", {}, 1));
  Pending queued(stub(), big_svd(kBigSvdN, 7));
  ASSERT_TRUE(wait_metric(*ts_, "gcompute_queue_depth", {}, 1));
  // Worker busy, queue (depth 1) full: every further job is refused at once.
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    v1::TransposeRequest r;
    *r.mutable_a()->mutable_inline_() = f32_matrix(2, 2);
    EXPECT_TRUE(has_status(transpose(stub(), r), grpc::RESOURCE_EXHAUSTED,
                           {"queue full: 1 requests waiting (--queue-depth=1)"}));
    EXPECT_LT(seconds_since(start), 1.0);
  }
  // Store-only calls do not queue and still work.
  EXPECT_TRUE(still_serving(stub()));
  queued.ctx.TryCancel();
  running.ctx.TryCancel();
  queued.thread.join();
  running.thread.join();
  EXPECT_TRUE(has_status(queued.status, grpc::CANCELLED));
  EXPECT_TRUE(has_status(running.status, grpc::CANCELLED));
  EXPECT_TRUE(wait_metric(*ts_, "gcompute_requests_total",
                          {{"method", "Transpose"}, {"code", "RESOURCE_EXHAUSTED"}}, 3));
  // A cancelled call keeps its queue slot until a worker pops it; both are gone within
  // about one sweep of the running SVD.
  const auto cancelled = Clock::now();
  EXPECT_TRUE(
      wait_metric(*ts_, "gcompute_requests_total", {{"method", "Svd"}, {"code", "CANCELLED"}}, 2));
  EXPECT_LT(seconds_since(cancelled), std::max(1.0, 2 * sweep_s_));
  EXPECT_LT(transpose_latency(stub()), 1.0);
}

TEST_F(ServiceSlow, DrainRefusesNewCallsFinishesRunningOnesAndReportsNotServing) {
  EXPECT_EQ(health_check(ts_->channel, ""), 1);
  Pending running(stub(), big_svd(kBigSvdN, 8, 5));  // five sweeps, then returns
  ASSERT_TRUE(wait_metric(*ts_, "gcompute_running_jobs", {}, 1));
  std::thread drainer([&] { ts_->server->drain(absl::Seconds(60)); });
  // While the engine drains, health says NOT_SERVING and new work is UNAVAILABLE.
  const auto start = Clock::now();
  int health = -1;
  while (seconds_since(start) < 10 && (health = health_check(ts_->channel, "")) != 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(health, 2) << "health must be NOT_SERVING while draining";
  if (!running.done) {
    v1::TransposeRequest r;
    *r.mutable_a()->mutable_inline_() = f32_matrix(2, 2);
    EXPECT_TRUE(has_status(transpose(stub(), r), grpc::UNAVAILABLE, {"draining"}));
    EXPECT_TRUE(has_status(raw_upload(stub(), {header_part(1, 1, v1::DTYPE_F32)}),
                           grpc::UNAVAILABLE, {"draining"}));
    v1::CreateGraphRequest c;
    c.set_num_vertices(1);
    EXPECT_TRUE(has_status(call<v1::CreateGraphRequest, v1::CreateGraphResponse>(
                               stub(), &v1::Compute::Stub::CreateGraph, c),
                           grpc::UNAVAILABLE, {"draining"}));
  } else {
    ADD_FAILURE() << "the running SVD finished before the drain could be observed";
  }
  running.thread.join();
  EXPECT_TRUE(is_ok(running.status)) << "running work finishes during a drain";
  EXPECT_EQ(running.resp.sweeps(), 5);
  drainer.join();
  // After the drain the server is gone: calls are UNAVAILABLE.
  v1::TransposeRequest r;
  *r.mutable_a()->mutable_inline_() = f32_matrix(2, 2);
  EXPECT_TRUE(has_status(transpose(stub(), r), grpc::UNAVAILABLE));
  ts_.reset();  // nothing to check in TearDown
}

// ---- metrics and health ------------------------------------------------------------------

TEST(ServiceMetrics, CountersAndHistogramsMove) {
  auto ts = start_server();
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(health_check(ts->channel, ""), 1);
  const int port = ts->server->metrics_port();
  ASSERT_GT(port, 0);
  const auto before = parse_metrics(http_get(port, "/metrics"));
  ASSERT_FALSE(before.empty()) << "GET /metrics returned nothing";

  v1::TransposeRequest ok;
  *ok.mutable_a()->mutable_inline_() = f32_matrix(4, 6);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(is_ok(transpose(*ts->stub, ok)));
  v1::TransposeRequest bad;
  *bad.mutable_a()->mutable_inline_() = f32_matrix(4, 6);
  bad.mutable_a()->mutable_inline_()->set_cols(5);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(has_status(transpose(*ts->stub, bad), grpc::INVALID_ARGUMENT));
  }
  v1::GetGraphRequest g;
  g.set_graph_id("nope");
  ASSERT_TRUE(has_status(
      call<v1::GetGraphRequest, v1::GetGraphResponse>(*ts->stub, &v1::Compute::Stub::GetGraph, g),
      grpc::NOT_FOUND));

  const auto after = parse_metrics(http_get(port, "/metrics"));
  auto delta = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    return metric_value(after, name, labels) - metric_value(before, name, labels);
  };
  EXPECT_EQ(delta("gcompute_requests_total", {{"method", "Transpose"}, {"code", "OK"}}), 3);
  EXPECT_EQ(
      delta("gcompute_requests_total", {{"method", "Transpose"}, {"code", "INVALID_ARGUMENT"}}), 2);
  EXPECT_EQ(delta("gcompute_requests_total", {{"method", "GetGraph"}, {"code", "NOT_FOUND"}}), 1);
  EXPECT_EQ(delta("gcompute_request_duration_seconds_count", {{"method", "Transpose"}}), 5);
  EXPECT_GT(delta("gcompute_request_duration_seconds_sum", {{"method", "Transpose"}}), 0);
  EXPECT_GT(delta("gcompute_received_bytes_total", {{"method", "Transpose"}}), 5 * 4 * 4 * 5);
  EXPECT_GE(delta("gcompute_sent_bytes_total", {{"method", "Transpose"}}), 3 * 4 * 6 * 4);
  // Only the three accepted calls reached the engine (and its phases).
  for (const char* phase : {"queue", "compute"}) {
    const double d =
        delta("gcompute_phase_duration_seconds_count", {{"method", "Transpose"}, {"phase", phase}});
    EXPECT_GE(d, 1) << phase;
    EXPECT_LE(d, 3) << phase;
  }

  // Buckets of the Transpose duration histogram: exactly 50 us .. 600 s plus +Inf,
  // cumulative, and +Inf equals the count.
  const std::vector<double> want = {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
                                    25e-3, 50e-3,  0.1,    0.25,   0.5,  1,      2.5,  5,
                                    10,    30,     60,     120,    300,  600};
  std::vector<std::pair<double, double>> buckets;  // (le, value)
  for (const Sample& s : after) {
    if (s.name != "gcompute_request_duration_seconds_bucket") continue;
    auto m = s.labels.find("method");
    if (m == s.labels.end() || m->second != "Transpose") continue;
    const std::string le = s.labels.at("le");
    buckets.emplace_back(le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr), s.value);
  }
  std::sort(buckets.begin(), buckets.end());
  ASSERT_EQ(buckets.size(), want.size() + 1);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(buckets[i].first, want[i], want[i] * 1e-9) << "bucket " << i;
    if (i > 0) {
      EXPECT_GE(buckets[i].second, buckets[i - 1].second);
    }
  }
  EXPECT_TRUE(std::isinf(buckets.back().first));
  EXPECT_EQ(buckets.back().second, metric_value(after, "gcompute_request_duration_seconds_count",
                                                {{"method", "Transpose"}}));
  EXPECT_GE(buckets.back().second, 5);
  EXPECT_TRUE(still_serving(*ts->stub));
}

TEST(ServiceMetrics, UnparsableRequestsAreInvalidArgumentNamingTheTypeAndCounted) {
  auto ts = start_server();
  ASSERT_NE(ts, nullptr);
  const int port = ts->server->metrics_port();
  const auto before = parse_metrics(http_get(port, "/metrics"));
  // Field 1 with wire type 7 (there is none), and a length-delimited field 1 that claims
  // 100 bytes of which 2 follow.
  const std::string bad_wire_type("\x0f", 1);
  const std::string truncated("\x0a\x64\x01\x02", 4);
  for (const auto& [method, type] : std::vector<std::pair<std::string, std::string>>{
           {"Svd", "gcompute.v1.SvdRequest"},
           {"Transpose", "gcompute.v1.TransposeRequest"},  // raw methods parse it themselves
           {"MatMul", "gcompute.v1.MatMulRequest"},
           {"GetJob", "gcompute.v1.GetJobRequest"},
           {"DownloadMatrix", "gcompute.v1.DownloadMatrixRequest"},
           {"WatchJob", "gcompute.v1.WatchJobRequest"},
           {"CreateGraph", "gcompute.v1.CreateGraphRequest"}}) {
    for (const std::string& bytes : {bad_wire_type, truncated}) {
      EXPECT_TRUE(has_status(raw_unary_call(ts->channel, "/gcompute.v1.Compute/" + method, bytes),
                             grpc::INVALID_ARGUMENT, {"does not parse as " + type}))
          << method;
    }
  }
  // Real UNIMPLEMENTED answers stay: an unknown method.
  EXPECT_TRUE(has_status(raw_unary_call(ts->channel, "/gcompute.v1.Compute/NoSuchMethod", ""),
                         grpc::UNIMPLEMENTED));
  const auto after = parse_metrics(http_get(port, "/metrics"));
  auto delta = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    return metric_value(after, name, labels) - metric_value(before, name, labels);
  };
  EXPECT_EQ(delta("gcompute_unparsable_requests_total", {{"method", "Svd"}}), 2);
  EXPECT_EQ(delta("gcompute_unparsable_requests_total", {{"method", "WatchJob"}}), 2);
  EXPECT_EQ(delta("gcompute_unparsable_requests_total", {{"method", "Transpose"}}), 2);
  // Counted once each, whether gRPC or the method's own reactor parsed them.
  for (const char* method : {"MatMul", "DownloadMatrix", "Svd"}) {
    EXPECT_EQ(delta("gcompute_requests_total", {{"method", method}, {"code", "INVALID_ARGUMENT"}}),
              2)
        << method;
  }
  EXPECT_EQ(delta("gcompute_requests_total", {{"method", "GetJob"}, {"code", "INVALID_ARGUMENT"}}),
            2);
  EXPECT_TRUE(still_serving(*ts->stub));
}

TEST(ServiceHealth, ServingThenNotServingAfterDrainStarts) {
  auto ts = start_server();
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(health_check(ts->channel, ""), 1);
  grpc::Status st;
  EXPECT_EQ(health_check(ts->channel, "no.such.Service", &st), -1);
  EXPECT_TRUE(has_status(st, grpc::NOT_FOUND));
  // drain() with an idle engine returns after shutting gRPC down: health is gone with it.
  ts->server->drain(absl::Seconds(5));
  EXPECT_NE(health_check(ts->channel, ""), 1);
}

}  // namespace
}  // namespace gcompute::service_test
