// SPDX-License-Identifier: Apache-2.0
// cpu::DynamicGraph against the std::map oracle: random batches with in-batch duplicates,
// hits on existing edges, deletions, weight updates, table growth and tombstone reuse, on one
// and on several threads.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gcompute/kernels/cpu/graph_batch.hpp"
#include "kernels/cpu/graph_batch_oracle.hpp"

namespace gcompute::kernels::cpu {
namespace {

using testing::expect_result;
using testing::GraphOp;
using testing::GraphOracle;

absl::StatusOr<GraphBatchResult> run(DynamicGraph& g, GraphOp op,
                                     const std::vector<GraphEdge>& batch,
                                     std::vector<EdgeStatus>& status, int threads) {
  status.assign(batch.size(), static_cast<EdgeStatus>(0xEE));  // poison
  switch (op) {
    case GraphOp::kInsert:
      return g.insert_edges(batch, status, threads);
    case GraphOp::kDelete:
      return g.delete_edges(batch, status, threads);
    case GraphOp::kUpdate:
      return g.update_weights(batch, status, threads);
  }
  return absl::InternalError("unreachable");
}

void random_rounds(std::uint32_t n, int threads, std::uint64_t seed, int rounds,
                   std::size_t max_batch, GraphOptions options = {}) {
  std::mt19937_64 rng(seed);
  auto g = DynamicGraph::create(n, options);
  ASSERT_TRUE(g.ok()) << g.status();
  GraphOracle oracle(n);
  std::vector<EdgeStatus> status, want_status;
  std::uint64_t grown = 0;
  for (int round = 0; round < rounds; ++round) {
    const int kind = static_cast<int>(rng() % 10);
    const GraphOp op = kind < 6 ? GraphOp::kInsert : kind < 8 ? GraphOp::kDelete : GraphOp::kUpdate;
    const std::size_t count = 1 + rng() % max_batch;
    auto batch =
        testing::random_batch(rng, oracle, count, 0.15, op == GraphOp::kInsert ? 0.2 : 0.6);
    auto got = run(*g, op, batch, status, threads);
    ASSERT_TRUE(got.ok()) << got.status();
    const GraphBatchResult want = oracle.apply(op, batch, want_status);
    expect_result(*got, want);
    ASSERT_EQ(status, want_status) << "round " << round;
    EXPECT_EQ(g->num_edges(), oracle.num_edges());
    grown += got->grown_vertices;
    if (round % 7 == 6 || round == rounds - 1) {
      testing::expect_csr_equals(g->export_csr(), oracle);
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(grown, 0u);  // the sizes were chosen so that tables must grow
}

TEST(CpuGraphBatch, RandomBatchesOneThread) {
  random_rounds(97, 1, 1, 60, 400);
}
TEST(CpuGraphBatch, RandomBatchesManyThreads) {
  random_rounds(1009, 8, 2, 40, 5000);
}
TEST(CpuGraphBatch, RandomBatchesAutoThreadsLarge) {
  random_rounds(20011, 0, 3, 6, 100000);
}
TEST(CpuGraphBatch, TinyTablesGrowOften) {
  GraphOptions o;
  o.min_capacity = 1;
  o.max_load = 0.9f;
  o.grow_load = 0.9f;
  random_rounds(5, 1, 4, 80, 30, o);
  random_rounds(1, 3, 5, 40, 10, o);  // one vertex: every edge is a self-loop
}

TEST(CpuGraphBatch, DuplicatesLastOneWins) {
  auto g = DynamicGraph::create(4);
  ASSERT_TRUE(g.ok());
  std::vector<GraphEdge> b = {{1, 2, 1.0f}, {1, 2, 2.0f}, {3, 0, 5.0f}, {1, 2, 3.0f}};
  std::vector<EdgeStatus> st(b.size());
  auto r = g->insert_edges(b, st);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->inserted, 2u);
  EXPECT_EQ(r->superseded, 2u);
  EXPECT_EQ(st, (std::vector<EdgeStatus>{EdgeStatus::kSuperseded, EdgeStatus::kSuperseded,
                                         EdgeStatus::kInserted, EdgeStatus::kInserted}));
  HostCsr csr = g->export_csr();
  ASSERT_EQ(csr.cols.size(), 2u);
  EXPECT_EQ(csr.row_offsets, (std::vector<std::uint64_t>{0, 0, 1, 1, 2}));
  EXPECT_EQ(csr.cols[0], 2u);
  EXPECT_EQ(csr.weights[0], 3.0f);
  // Insert of an existing edge updates it; delete then re-insert reuses the deleted slot.
  std::vector<GraphEdge> again = {{1, 2, 7.0f}};
  for (const auto& [op, outcome] : {std::pair{GraphOp::kInsert, EdgeStatus::kUpdated},
                                    {GraphOp::kDelete, EdgeStatus::kRemoved},
                                    {GraphOp::kDelete, EdgeStatus::kMissing},
                                    {GraphOp::kInsert, EdgeStatus::kInserted}}) {
    r = op == GraphOp::kInsert ? g->insert_edges(again) : g->delete_edges(again);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r).*testing::count_of(outcome), 1u) << static_cast<int>(outcome);
  }
  EXPECT_EQ(r->grown_vertices, 0u);
  EXPECT_EQ(g->num_edges(), 2u);
}

TEST(CpuGraphBatch, InvalidBatchChangesNothing) {
  auto g = DynamicGraph::create(10);
  ASSERT_TRUE(g.ok());
  std::vector<GraphEdge> ok = {{0, 1, 1.0f}};
  ASSERT_TRUE(g->insert_edges(ok).ok());
  std::vector<GraphEdge> bad = {{2, 3, 1.0f}, {10, 0, 1.0f}, {0, 1, 9.0f}};
  std::vector<EdgeStatus> st(bad.size());
  auto r = g->insert_edges(bad, st);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st[1], EdgeStatus::kInvalid);
  HostCsr csr = g->export_csr();
  ASSERT_EQ(csr.cols.size(), 1u);
  EXPECT_EQ(csr.weights[0], 1.0f);
  EXPECT_EQ(g->delete_edges(bad).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<EdgeStatus> short_status(1);
  EXPECT_EQ(g->insert_edges(ok, std::span<EdgeStatus>(short_status.data(), 0)).status().code(),
            absl::StatusCode::kOk);
  std::vector<EdgeStatus> wrong(2);
  EXPECT_EQ(g->insert_edges(ok, wrong).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CpuGraphBatch, AddVerticesAndEmpty) {
  auto g = DynamicGraph::create(0);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->insert_edges({}).ok());
  EXPECT_EQ(g->export_csr().row_offsets.size(), 1u);
  auto first = g->add_vertices(3);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0u);
  std::vector<GraphEdge> b = {{2, 2, 1.5f}};
  EXPECT_TRUE(g->insert_edges(b).ok());
  EXPECT_EQ(g->num_edges(), 1u);
  EXPECT_FALSE(DynamicGraph::create(kMaxGraphVertices + 1u).ok());
  GraphOptions o;
  o.grow_load = 0.9f;
  o.max_load = 0.5f;
  EXPECT_FALSE(DynamicGraph::create(3, o).ok());
}

}  // namespace
}  // namespace gcompute::kernels::cpu
