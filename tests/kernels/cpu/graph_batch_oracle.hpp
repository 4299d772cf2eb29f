// SPDX-License-Identifier: Apache-2.0
// Independent oracle for the batch-edit graph contract (graph_batch_types.hpp): a std::map from
// (src, dst) to weight, with the batch semantics written out the plain way. Shared by the CPU
// twin's and the device graph's tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "gcompute/kernels/graph_batch_types.hpp"

namespace gcompute::testing {

enum class GraphOp { kInsert, kDelete, kUpdate };

/// The member of GraphBatchResult that counts the elements of status `s` (any but kInvalid).
inline std::uint64_t kernels::GraphBatchResult::*count_of(kernels::EdgeStatus s) {
  using Result = kernels::GraphBatchResult;
  // In the order of EdgeStatus's values.
  static constexpr std::uint64_t Result::*kCounts[] = {
      &Result::inserted, &Result::updated, &Result::superseded, &Result::removed, &Result::missing};
  static_assert(std::size(kCounts) == static_cast<std::size_t>(kernels::EdgeStatus::kMissing) + 1);
  return kCounts[static_cast<std::size_t>(s)];
}

class GraphOracle {
 public:
  explicit GraphOracle(std::uint32_t n) : n_(n) {}

  /// Applies a valid batch; fills the expected per-element statuses and counts.
  kernels::GraphBatchResult apply(GraphOp op, std::span<const kernels::GraphEdge> edges,
                                  std::vector<kernels::EdgeStatus>& status) {
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> last;
    for (std::size_t i = 0; i < edges.size(); ++i) last[{edges[i].src, edges[i].dst}] = i;
    status.assign(edges.size(), kernels::EdgeStatus::kInvalid);
    kernels::GraphBatchResult r;
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const auto key = std::make_pair(edges[i].src, edges[i].dst);
      status[i] =
          last[key] != i ? kernels::EdgeStatus::kSuperseded : apply_one(op, key, edges[i].weight);
      ++(r.*count_of(status[i]));
    }
    return r;
  }

  void add_vertices(std::uint32_t count) { n_ += count; }
  std::uint32_t num_vertices() const { return n_; }
  std::size_t num_edges() const { return edges_.size(); }
  const std::map<std::pair<std::uint32_t, std::uint32_t>, float>& edges() const { return edges_; }

  /// A random existing edge (the map must not be empty).
  std::pair<std::uint32_t, std::uint32_t> pick(std::mt19937_64& rng) const {
    auto it = edges_.lower_bound({static_cast<std::uint32_t>(rng() % n_), 0});
    if (it == edges_.end()) it = edges_.begin();
    return it->first;
  }

 private:
  // One element that no later element of its batch supersedes.
  kernels::EdgeStatus apply_one(GraphOp op, std::pair<std::uint32_t, std::uint32_t> key,
                                float weight) {
    using kernels::EdgeStatus;
    const auto it = edges_.find(key);
    const bool present = it != edges_.end();
    switch (op) {
      case GraphOp::kInsert:
        edges_[key] = weight;
        return present ? EdgeStatus::kUpdated : EdgeStatus::kInserted;
      case GraphOp::kUpdate:
        if (!present) return EdgeStatus::kMissing;
        it->second = weight;
        return EdgeStatus::kUpdated;
      case GraphOp::kDelete:
        if (!present) return EdgeStatus::kMissing;
        edges_.erase(it);
        return EdgeStatus::kRemoved;
    }
    return EdgeStatus::kInvalid;
  }

  std::uint32_t n_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, float> edges_;
};

/// Expects the same counts of each outcome (the diagnostics are backend-specific).
inline void expect_result(const kernels::GraphBatchResult& got,
                          const kernels::GraphBatchResult& want) {
  EXPECT_EQ(got.inserted, want.inserted);
  EXPECT_EQ(got.updated, want.updated);
  EXPECT_EQ(got.removed, want.removed);
  EXPECT_EQ(got.missing, want.missing);
  EXPECT_EQ(got.superseded, want.superseded);
}

/// Asserts the CSR holds exactly the oracle's edges with bit-identical weights.
inline void expect_csr_equals(const kernels::HostCsr& csr, const GraphOracle& oracle) {
  ASSERT_EQ(csr.num_vertices, oracle.num_vertices());
  ASSERT_EQ(csr.row_offsets.size(), static_cast<std::size_t>(csr.num_vertices) + 1);
  ASSERT_EQ(csr.row_offsets.back(), oracle.num_edges());
  ASSERT_EQ(csr.cols.size(), oracle.num_edges());
  ASSERT_EQ(csr.weights.size(), oracle.num_edges());
  std::size_t k = 0;
  std::uint32_t v = 0;
  std::size_t mismatches = 0;
  for (const auto& [key, w] : oracle.edges()) {
    while (csr.row_offsets[v + 1] <= k) ++v;  // row containing entry k
    if (v != key.first || csr.cols[k] != key.second ||
        std::memcmp(&csr.weights[k], &w, sizeof(float)) != 0) {
      if (++mismatches <= 5) {
        ADD_FAILURE() << "entry " << k << ": got (" << v << "," << csr.cols[k] << ","
                      << csr.weights[k] << ") want (" << key.first << "," << key.second << "," << w
                      << ")";
      }
    }
    ++k;
  }
  EXPECT_EQ(mismatches, 0u);
}

/// Random batch over n vertices: `dup_frac` of the elements repeat an earlier element of the
/// batch (same key, new weight), `existing_frac` hit edges the oracle already has; sources
/// are skewed (power-law-ish) so that a few vertices receive many edges and overflow.
inline std::vector<kernels::GraphEdge> random_batch(std::mt19937_64& rng, const GraphOracle& oracle,
                                                    std::size_t count, double dup_frac,
                                                    double existing_frac) {
  const std::uint32_t n = oracle.num_vertices();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<kernels::GraphEdge> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    kernels::GraphEdge e;
    const double r = u(rng);
    if (!out.empty() && r < dup_frac) {
      e = out[rng() % out.size()];
    } else if (oracle.num_edges() > 0 && r < dup_frac + existing_frac) {
      auto [s, d] = oracle.pick(rng);
      e.src = s;
      e.dst = d;
    } else {
      const double x = u(rng);
      e.src = std::min<std::uint32_t>(n - 1, static_cast<std::uint32_t>(n * x * x * x));
      e.dst = static_cast<std::uint32_t>(rng() % n);
    }
    // Distinct weights per element, so a wrong "which duplicate wins" shows up.
    e.weight = static_cast<float>(static_cast<std::int64_t>(rng() % 2000001) - 1000000) / 64.0f;
    out.push_back(e);
  }
  return out;
}

}  // namespace gcompute::testing
