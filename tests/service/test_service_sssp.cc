// SPDX-License-Identifier: Apache-2.0
// Sssp through an in-process CPU server: answers against Bellman-Ford (sssp_service_check.hpp),
// negative cycles reachable or not, stored results, the same answer as a job, and every
// refusal a caller can cause.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "service_fixture.hpp"
#include "sssp_service_check.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {
namespace {

class ServiceSssp : public ::testing::Test {
 protected:
  void SetUp() override {
    ts_ = start_server();
    ASSERT_NE(ts_, nullptr);
  }
  grpc::Status sssp(const v1::SsspRequest& req, v1::SsspResponse* resp) {
    return call_sssp(*ts_, req, resp);
  }
  std::unique_ptr<TestServer> ts_;
};

TEST_F(ServiceSssp, EdgeListsMatchBellmanFord) {
  GC_SEEDED_RNG(rng);
  expect_sssp_of_edge_lists(*ts_, rng);
}

TEST_F(ServiceSssp, StoredGraphRowsFollowItsVertexIds) {
  GC_SEEDED_RNG(rng);
  expect_sssp_of_stored_graph(*ts_, rng, "sssp-graph");
}

TEST_F(ServiceSssp, StoredGraphWithConsecutiveIdsSendsNoIds) {
  v1::CreateGraphRequest create;
  create.set_graph_id("line");
  create.set_num_vertices(4);
  for (int v = 0; v < 3; ++v) {
    auto* e = create.add_edges();
    e->add_tails(v);
    e->add_heads(v + 1);
    e->set_weight(v + 1);
  }
  grpc::ClientContext ctx;
  v1::CreateGraphResponse created;
  ASSERT_TRUE(is_ok(ts_->stub->CreateGraph(&ctx, create, &created)));
  v1::SsspRequest req;
  req.set_graph_id("line");
  req.set_source(1);
  v1::SsspResponse resp;
  ASSERT_TRUE(is_ok(sssp(req, &resp)));
  EXPECT_EQ(resp.vertex_ids_size(), 0);
  const std::vector<WeightedEdge> edges = {{0, 1, 1}, {1, 2, 2}, {2, 3, 3}};
  expect_sssp_answer(resp, 4, edges, 1, {std::numeric_limits<double>::infinity(), 0, 2, 5});
}

TEST_F(ServiceSssp, NegativeCycleFailsOnlyWhenTheSourceReachesIt) {
  // 0 -> 1 -> 2 -> 1 with the cycle 1 -> 2 -> 1 of length -1; vertex 3 reaches nothing.
  const std::vector<WeightedEdge> edges = {{0, 1, 1}, {1, 2, 2}, {2, 1, -3}};
  v1::SsspResponse resp;
  EXPECT_TRUE(has_status(sssp(sssp_edges_request(4, edges, 0), &resp),
                         grpc::StatusCode::FAILED_PRECONDITION,
                         {"negative cycle through vertex", "reachable from the source"}));
  ASSERT_TRUE(is_ok(sssp(sssp_edges_request(4, edges, 3), &resp)));
  EXPECT_EQ(resp.reachable(), 1);
  EXPECT_TRUE(still_serving(*ts_->stub));
}

TEST_F(ServiceSssp, StoredPlacementGivesRefsOfTheSameValues) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 50;
  const auto edges = sssp_test_edges(rng, n, n, 200);
  v1::SsspRequest req = sssp_edges_request(n, edges, 0);
  v1::SsspResponse inline_resp, stored_resp;
  ASSERT_TRUE(is_ok(sssp(req, &inline_resp)));
  req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  ASSERT_TRUE(is_ok(sssp(req, &stored_resp)));
  ASSERT_TRUE(stored_resp.distances().has_stored());
  ASSERT_TRUE(stored_resp.parents().has_stored());
  EXPECT_EQ(download_values<float>(*ts_->stub, stored_resp.distances().stored().ref()),
            values_of<float>(inline_resp.distances().inline_()));
  EXPECT_EQ(download_values<std::int32_t>(*ts_->stub, stored_resp.parents().stored().ref()),
            values_of<std::int32_t>(inline_resp.parents().inline_()));
}

TEST_F(ServiceSssp, AsAJobGivesTheUnaryAnswer) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 40;
  const auto edges = sssp_test_edges(rng, n, n, 160);
  const v1::SsspRequest req = sssp_edges_request(n, edges, 3);
  v1::SubmitJobRequest submit;
  *submit.mutable_sssp() = req;
  grpc::ClientContext ctx;
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(is_ok(ts_->stub->SubmitJob(&ctx, submit, &submitted)));
  std::vector<v1::Job> seen;
  ASSERT_TRUE(is_ok(watch_job(*ts_->stub, submitted.job_id(), 120, &seen)));
  ASSERT_FALSE(seen.empty());
  const v1::Job& last = seen.back();
  ASSERT_EQ(last.state(), v1::JOB_STATE_SUCCEEDED) << last.error_message();
  EXPECT_EQ(last.method(), "Sssp");
  expect_sssp_answer(last.result().sssp(), n, edges, 3, bellman_ford_reference(n, edges, 3));
}

TEST_F(ServiceSssp, RefusalsNameTheFieldAndValue) {
  const std::vector<WeightedEdge> edges = {{0, 1, 1}, {1, 2, 2}};
  v1::SsspResponse resp;
  const auto refused = [&](const v1::SsspRequest& req, grpc::StatusCode code,
                           const std::vector<std::string>& parts) {
    return has_status(sssp(req, &resp), code, parts);
  };
  EXPECT_TRUE(refused(v1::SsspRequest{}, grpc::StatusCode::INVALID_ARGUMENT,
                      {"graph is missing", "edges", "graph_id"}));
  EXPECT_TRUE(refused(sssp_edges_request(3, edges, 3), grpc::StatusCode::INVALID_ARGUMENT,
                      {"source = 3", "0..2"}));
  EXPECT_TRUE(refused(sssp_edges_request(3, edges, -1), grpc::StatusCode::INVALID_ARGUMENT,
                      {"source = -1"}));
  EXPECT_TRUE(refused(sssp_edges_request(0, {}, 0), grpc::StatusCode::INVALID_ARGUMENT,
                      {"edges.num_vertices = 0"}));
  v1::SsspRequest req = sssp_edges_request(3, edges, 0);
  req.mutable_edges()->set_dtype(v1::DTYPE_I32);
  EXPECT_TRUE(refused(req, grpc::StatusCode::INVALID_ARGUMENT, {"edges.dtype = i32", "f32"}));
  req = sssp_edges_request(3, edges, 0);
  req.mutable_edges()->set_dst(1, 7);
  EXPECT_TRUE(refused(req, grpc::StatusCode::INVALID_ARGUMENT, {"edges.dst[1] = 7", "0..2"}));
  req = sssp_edges_request(3, edges, 0);
  req.mutable_edges()->set_weight(0, std::nan(""));
  EXPECT_TRUE(refused(req, grpc::StatusCode::INVALID_ARGUMENT, {"edges.weight[0]"}));
  req = sssp_edges_request(3, edges, 0);
  req.mutable_edges()->set_weight(1, 1e300);
  EXPECT_TRUE(refused(req, grpc::StatusCode::INVALID_ARGUMENT, {"edges.weight[1]"}));
  req = sssp_edges_request(3, edges, 0);
  req.mutable_edges()->add_src(0);
  EXPECT_TRUE(refused(req, grpc::StatusCode::INVALID_ARGUMENT, {"src, dst and weight"}));

  v1::SsspRequest stored;
  stored.set_graph_id("no-such-graph");
  EXPECT_TRUE(refused(stored, grpc::StatusCode::NOT_FOUND, {"no-such-graph"}));
  {
    v1::CreateGraphRequest create;
    create.set_graph_id("g3");
    create.set_num_vertices(3);
    grpc::ClientContext ctx;
    v1::CreateGraphResponse created;
    ASSERT_TRUE(is_ok(ts_->stub->CreateGraph(&ctx, create, &created)));
  }
  stored.set_graph_id("g3");
  stored.set_source(9);
  EXPECT_TRUE(refused(stored, grpc::StatusCode::NOT_FOUND, {"source = 9", "no such vertex"}));
  EXPECT_TRUE(still_serving(*ts_->stub));
}

}  // namespace
}  // namespace gcompute::service_test
