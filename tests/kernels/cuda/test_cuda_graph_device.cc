// SPDX-License-Identifier: Apache-2.0
// cuda::DeviceGraph against the std::map oracle (and the CPU twin): random batches with
// in-batch duplicates, hits on existing edges, deletions, weight updates, per-vertex table
// growth, pool repacks (no slack, so the pool overflows), tombstone reuse; per-element status
// compared after poisoning it; the export compared entry by entry with bit-identical weights.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gcompute/kernels/cpu/graph_batch.hpp"
#include "gcompute/kernels/cuda/graph_device.hpp"
#include "kernels/cpu/graph_batch_oracle.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/gpu.hpp"

namespace gcompute::kernels::cuda {
namespace {

using testing::expect_result;
using testing::GraphOp;
using testing::GraphOracle;

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

/// A batch in device memory with its per-element status array.
class DeviceBatch {
 public:
  explicit DeviceBatch(const ::gcompute::testing::TestDevice& device) : device_(device) {}
  /// Uploads the batch and poisons the status array.
  void upload(const std::vector<GraphEdge>& b) {
    if (b.size() > edges_.size()) {
      edges_.reset();
      status_.reset();
      auto edges = DeviceArray<GraphEdge>::create(b.size(), device_.stream(), device_.memory());
      ASSERT_TRUE(edges.ok()) << edges.status();
      auto status = DeviceArray<EdgeStatus>::create(b.size(), device_.stream(), device_.memory());
      ASSERT_TRUE(status.ok()) << status.status();
      edges_ = *std::move(edges);
      status_ = *std::move(status);
    }
    size_ = b.size();
    if (size_ == 0) return;
    ASSERT_CUDA(
        cudaMemcpy(edges_.data(), b.data(), size_ * sizeof(GraphEdge), cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(status_.data(), 0xEE, size_));
  }
  std::vector<EdgeStatus> status() const {
    std::vector<EdgeStatus> out(size_);
    if (size_ != 0) {
      EXPECT_EQ(cudaMemcpy(out.data(), status_.data(), size_, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
  }
  const GraphEdge* edges() const { return edges_.data(); }
  EdgeStatus* status_ptr() { return status_.data(); }
  std::size_t size() const { return size_; }

 private:
  const ::gcompute::testing::TestDevice& device_;
  DeviceArray<GraphEdge> edges_;
  DeviceArray<EdgeStatus> status_;
  std::size_t size_ = 0;
};

absl::StatusOr<GraphBatchResult> run(DeviceGraph& g, const Context& ctx, GraphOp op,
                                     DeviceBatch& b) {
  switch (op) {
    case GraphOp::kInsert:
      return g.insert_edges(ctx, b.edges(), b.size(), b.status_ptr());
    case GraphOp::kDelete:
      return g.delete_edges(ctx, b.edges(), b.size(), b.status_ptr());
    case GraphOp::kUpdate:
      return g.update_weights(ctx, b.edges(), b.size(), b.status_ptr());
  }
  return absl::InternalError("unreachable");
}

class CudaGraphDevice : public testing::DeviceTest {
 protected:
  CudaGraphDevice() : DeviceTest(/*priority_stream=*/false, /*libraries=*/false) {}

  absl::StatusOr<DeviceGraph> make_graph(std::uint32_t n, GraphOptions options = {}) {
    return DeviceGraph::create(ctx_, device_.memory(), n, options);
  }

  /// Random rounds against the oracle and the CPU twin. expect_rebuild: the pool must have
  /// been repacked more than once (only certain with pool_slack = 0).
  void random_rounds(std::uint32_t n, std::uint64_t seed, int rounds, std::size_t max_batch,
                     GraphOptions options, bool expect_rebuild) {
    std::mt19937_64 rng(seed);
    auto g = make_graph(n, options);
    ASSERT_TRUE(g.ok()) << g.status();
    auto twin = cpu::DynamicGraph::create(n, options);
    ASSERT_TRUE(twin.ok());
    GraphOracle oracle(n);
    DeviceBatch db(device_);
    std::vector<EdgeStatus> want_status;
    std::uint64_t grown = 0, rebuilds = 0;
    for (int round = 0; round < rounds; ++round) {
      const int kind = static_cast<int>(rng() % 10);
      const GraphOp op = kind < 6   ? GraphOp::kInsert
                         : kind < 8 ? GraphOp::kDelete
                                    : GraphOp::kUpdate;
      const std::size_t count = 1 + rng() % max_batch;
      auto batch =
          testing::random_batch(rng, oracle, count, 0.15, op == GraphOp::kInsert ? 0.2 : 0.6);
      db.upload(batch);
      auto got = run(*g, ctx_, op, db);
      ASSERT_TRUE(got.ok()) << got.status();
      const GraphBatchResult want = oracle.apply(op, batch, want_status);
      expect_result(*got, want);
      ASSERT_EQ(db.status(), want_status) << "round " << round;
      EXPECT_EQ(g->num_edges(), oracle.num_edges());
      EXPECT_LE(g->pool_used(), g->pool_capacity());
      grown += got->grown_vertices;
      rebuilds += got->rebuilt;
      // The CPU twin under the same batches must report the same counts.
      auto t = op == GraphOp::kInsert   ? twin->insert_edges(batch)
               : op == GraphOp::kDelete ? twin->delete_edges(batch)
                                        : twin->update_weights(batch);
      ASSERT_TRUE(t.ok());
      expect_result(*t, want);
      if (round % 5 == 4 || round == rounds - 1) {
        auto csr = g->export_csr(ctx_);
        ASSERT_TRUE(csr.ok()) << csr.status();
        testing::expect_csr_equals(*csr, oracle);
        if (HasFailure()) return;
      }
    }
    EXPECT_GT(grown, 0u);
    EXPECT_GE(rebuilds, 1u);  // the first insert always packs the (empty) pool
    if (expect_rebuild) {
      EXPECT_GT(rebuilds, 1u);
    }
  }
};

TEST_F(CudaGraphDevice, SmallGraphManyRebuilds) {
  GraphOptions o;
  o.pool_slack = 0.0f;  // every enlargement that does not fit repacks the pool
  random_rounds(37, 11, 60, 300, o, true);
}

TEST_F(CudaGraphDevice, TinyTables) {
  GraphOptions o;
  o.min_capacity = 1;
  o.max_load = 0.9f;
  o.grow_load = 0.9f;
  o.pool_slack = 0.5f;
  random_rounds(5, 12, 80, 40, o, false);
  random_rounds(1, 13, 30, 10, o, false);  // one vertex: only self-loops
}

TEST_F(CudaGraphDevice, MediumGraphDefaultOptions) {
  random_rounds(4099, 14, 40, 20000, {}, false);
}

TEST_F(CudaGraphDevice, LargeBatches) {
  random_rounds(100003, 15, 8, 400000, {}, false);
}

TEST_F(CudaGraphDevice, DuplicatesLastOneWinsAndTombstoneReuse) {
  auto g = make_graph(4);
  ASSERT_TRUE(g.ok());
  DeviceBatch db(device_);
  db.upload({{1, 2, 1.0f}, {1, 2, 2.0f}, {3, 0, 5.0f}, {1, 2, 3.0f}});
  auto r = g->insert_edges(ctx_, db.edges(), db.size(), db.status_ptr());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->inserted, 2u);
  EXPECT_EQ(r->superseded, 2u);
  EXPECT_EQ(db.status(), (std::vector<EdgeStatus>{EdgeStatus::kSuperseded, EdgeStatus::kSuperseded,
                                                  EdgeStatus::kInserted, EdgeStatus::kInserted}));
  auto csr = g->export_csr(ctx_);
  ASSERT_TRUE(csr.ok());
  EXPECT_EQ(csr->row_offsets, (std::vector<std::uint64_t>{0, 0, 1, 1, 2}));
  ASSERT_EQ(csr->cols.size(), 2u);
  EXPECT_EQ(csr->weights[0], 3.0f);
  db.upload({{1, 2, 7.0f}});
  r = g->delete_edges(ctx_, db.edges(), db.size(), db.status_ptr());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->removed, 1u);
  const std::uint64_t used = g->pool_used();
  r = g->insert_edges(ctx_, db.edges(), db.size(), db.status_ptr());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->inserted, 1u);
  EXPECT_EQ(r->grown_vertices, 0u);  // the tombstone was reused, nothing grew
  EXPECT_EQ(g->pool_used(), used);
  EXPECT_EQ(g->num_edges(), 2u);
}

TEST_F(CudaGraphDevice, InvalidBatchChangesNothing) {
  auto g = make_graph(10);
  ASSERT_TRUE(g.ok());
  DeviceBatch db(device_);
  db.upload({{0, 1, 1.0f}});
  ASSERT_TRUE(g->insert_edges(ctx_, db.edges(), db.size()).ok());
  db.upload({{2, 3, 1.0f}, {10, 0, 1.0f}, {0, 1, 9.0f}, {0, 4000000000u, 1.0f}});
  for (int op = 0; op < 3; ++op) {
    auto r = op == 0   ? g->insert_edges(ctx_, db.edges(), db.size(), db.status_ptr())
             : op == 1 ? g->delete_edges(ctx_, db.edges(), db.size(), db.status_ptr())
                       : g->update_weights(ctx_, db.edges(), db.size(), db.status_ptr());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << op;
    EXPECT_EQ(db.status(), (std::vector<EdgeStatus>{EdgeStatus::kMissing, EdgeStatus::kInvalid,
                                                    EdgeStatus::kMissing, EdgeStatus::kInvalid}));
  }
  auto csr = g->export_csr(ctx_);
  ASSERT_TRUE(csr.ok());
  ASSERT_EQ(csr->cols.size(), 1u);
  EXPECT_EQ(csr->weights[0], 1.0f);
  // A valid batch after the rejected ones still works (pending counters were left clean).
  db.upload({{2, 3, 4.0f}});
  auto r = g->insert_edges(ctx_, db.edges(), db.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->inserted, 1u);
  EXPECT_EQ(g->num_edges(), 2u);
}

TEST_F(CudaGraphDevice, AddVerticesAndEmpty) {
  auto g = make_graph(0);
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->insert_edges(ctx_, nullptr, 0).ok());
  auto csr = g->export_csr(ctx_);
  ASSERT_TRUE(csr.ok());
  EXPECT_EQ(csr->row_offsets.size(), 1u);
  GraphOracle oracle(0);
  DeviceBatch db(device_);
  std::mt19937_64 rng(21);
  std::vector<EdgeStatus> want;
  for (int round = 0; round < 6; ++round) {
    const std::uint32_t add = 1 + static_cast<std::uint32_t>(rng() % 3000);
    auto first = g->add_vertices(ctx_, add);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(*first, oracle.num_vertices());
    oracle.add_vertices(add);
    auto batch = testing::random_batch(rng, oracle, 5000, 0.1, 0.2);
    db.upload(batch);
    auto r = g->insert_edges(ctx_, db.edges(), db.size(), db.status_ptr());
    ASSERT_TRUE(r.ok()) << r.status();
    expect_result(*r, oracle.apply(GraphOp::kInsert, batch, want));
    ASSERT_EQ(db.status(), want);
  }
  csr = g->export_csr(ctx_);
  ASSERT_TRUE(csr.ok());
  testing::expect_csr_equals(*csr, oracle);
  EXPECT_FALSE(make_graph(kMaxGraphVertices + 1u).ok());
}

}  // namespace
}  // namespace gcompute::kernels::cuda
