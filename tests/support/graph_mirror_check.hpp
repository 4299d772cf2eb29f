// SPDX-License-Identifier: Apache-2.0
// Helpers of the graph mirror tests (tests/ops/test_graph_mirror.cc on the host,
// tests/engine/test_cuda_graph_mirror.cc on the GPU): a journal that refuses on demand, random
// batches of every edit kind that stay valid (a model tracks ids within the batch), and the
// independent oracle: the pairwise least-weight edge set of a GraphStore snapshot, compared
// with a mirror's exported CSR.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/graph_mirror.hpp"
#include "store/graphs/graph_store.hpp"

namespace gcompute::testing {

using server::Edit;
using server::GraphSnapshot;

/// A write-ahead log stand-in that refuses the next change when asked to (the store must then
/// roll the change back and announce nothing).
class RefusingJournal : public server::GraphJournal {
 public:
  absl::Status on_create(const GraphSnapshot&) override { return take(); }
  absl::Status on_apply(const std::string&, std::span<const Edit>,
                        const server::ApplyResult&) override {
    return take();
  }
  absl::Status on_remove(const std::string&) override { return take(); }
  std::atomic<bool> refuse_next{false};

 private:
  absl::Status take() {
    if (refuse_next.exchange(false)) return absl::DataLossError("journal write refused");
    return absl::OkStatus();
  }
};

/// (tail id, head id) -> least weight as f32.
using PairMap = std::map<std::pair<std::uint64_t, std::uint64_t>, float>;

/// The oracle: every tail -> head pair of every hyperedge, least weight (double, then f32).
inline PairMap pairs_of(const GraphSnapshot& g) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, double> least;
  for (const server::Hyperedge& e : g.edges) {
    for (std::uint64_t t : e.tails) {
      for (std::uint64_t h : e.heads) {
        auto [it, fresh] = least.emplace(std::make_pair(t, h), e.weight);
        if (!fresh) it->second = std::min(it->second, e.weight);
      }
    }
  }
  PairMap out;
  for (const auto& [k, w] : least) out.emplace(k, static_cast<float>(w));
  return out;
}

/// The exported copy as pairs of vertex ids; a failure if a deleted vertex's slot has edges,
/// rows are not sorted, or the CSR is malformed.
inline PairMap pairs_of(const server::MirrorCsr& m) {
  PairMap out;
  const kernels::HostCsr& c = m.csr;
  EXPECT_EQ(c.num_vertices, m.slot_vertex.size());
  EXPECT_EQ(c.row_offsets.size(), std::size_t{c.num_vertices} + 1);
  if (c.row_offsets.size() != std::size_t{c.num_vertices} + 1) return out;
  EXPECT_EQ(c.row_offsets.back(), c.cols.size());
  EXPECT_EQ(c.cols.size(), c.weights.size());
  for (std::uint32_t r = 0; r < c.num_vertices; ++r) {
    for (std::uint64_t k = c.row_offsets[r]; k < c.row_offsets[r + 1]; ++k) {
      const std::uint32_t col = c.cols[k];
      if (k > c.row_offsets[r]) {
        EXPECT_LT(c.cols[k - 1], col) << "row " << r << " not sorted";
      }
      if (col >= m.slot_vertex.size()) {
        ADD_FAILURE() << "column " << col << " out of range";
        continue;
      }
      const std::uint64_t src = m.slot_vertex[r];
      const std::uint64_t dst = m.slot_vertex[col];
      if (src == server::DeviceGraphMirror::kNoVertex ||
          dst == server::DeviceGraphMirror::kNoVertex) {
        ADD_FAILURE() << "edge at the slot of a deleted vertex: " << r << " -> " << col;
        continue;
      }
      out.emplace(std::make_pair(src, dst), c.weights[k]);
    }
  }
  return out;
}

/// Expects equal pair sets and weights (== on f32: +0 and -0 are equal, as for APSP).
inline void expect_same_pairs(const PairMap& want, const PairMap& got, const std::string& where) {
  EXPECT_EQ(want.size(), got.size()) << where;
  std::size_t shown = 0;
  for (const auto& [k, w] : want) {
    auto it = got.find(k);
    if (it == got.end()) {
      if (shown++ < 5) {
        ADD_FAILURE() << where << ": pair " << k.first << "->" << k.second << " (w " << w
                      << ") missing from the copy";
      }
    } else if (!(it->second == w)) {
      if (shown++ < 5) {
        ADD_FAILURE() << where << ": pair " << k.first << "->" << k.second << " has " << it->second
                      << ", want " << w;
      }
    }
  }
  for (const auto& [k, w] : got) {
    if (!want.contains(k) && shown++ < 5) {
      ADD_FAILURE() << where << ": extra pair " << k.first << "->" << k.second << " (w " << w
                    << ")";
    }
  }
}

/// Generates valid batches for one graph, tracking its ids (counters included) as the store
/// assigns them. Call committed() after a batch the store applied.
class RandomEdits {
 public:
  RandomEdits(std::uint64_t seed, std::uint64_t num_vertices, std::vector<server::Hyperedge> edges)
      : rng_(seed), next_vertex_(num_vertices), next_edge_(edges.size()) {
    for (std::uint64_t v = 0; v < num_vertices; ++v) vertices_.insert(v);
    for (std::size_t i = 0; i < edges.size(); ++i) edges_[i] = {edges[i].tails, edges[i].heads};
  }

  /// A random weight, with ties, signed zeros and values beyond f32 now and then.
  double weight() {
    static constexpr double kFew[] = {0.0, -0.0, 1.0, 2.0, 2.5, -1.0, 1e39, -3.25};
    if (std::uniform_int_distribution<int>(0, 2)(rng_) == 0) {
      return kFew[std::uniform_int_distribution<std::size_t>(0, std::size(kFew) - 1)(rng_)];
    }
    return std::uniform_real_distribution<double>(-10.0, 100.0)(rng_);
  }

  /// A batch of `count` edits of every kind. `fat` > 0 makes add_edge hyperedges of up to
  /// that many tails and heads (many pairs per edit).
  std::vector<Edit> batch(std::size_t count, int fat = 3) {
    pending_ = Model{vertices_, edges_, next_vertex_, next_edge_};
    Model& m = pending_;
    std::vector<Edit> out;
    for (std::size_t i = 0; i < count; ++i) {
      int kind = std::uniform_int_distribution<int>(0, 9)(rng_);
      if (m.vertices.size() < 2) kind = 0;
      if (m.edges.empty() && kind >= 4 && kind <= 6) kind = 3;
      switch (kind) {
        case 0: {
          out.push_back(server::AddVertex{});
          m.vertices.insert(m.next_vertex++);
          break;
        }
        case 1: {
          const std::uint64_t v = pick(m.vertices);
          out.push_back(server::DeleteVertex{v});
          m.vertices.erase(v);
          for (auto it = m.edges.begin(); it != m.edges.end();) {
            std::erase(it->second.first, v);
            std::erase(it->second.second, v);
            if (it->second.first.empty() || it->second.second.empty()) {
              it = m.edges.erase(it);
            } else {
              ++it;
            }
          }
          break;
        }
        case 2:
        case 3: {
          auto tails = some(m.vertices, fat);
          auto heads = some(m.vertices, fat);
          out.push_back(server::AddEdge{tails, heads, weight()});
          m.edges[m.next_edge++] = {tails, heads};
          break;
        }
        case 4: {
          const std::uint64_t e = pick_edge(m);
          out.push_back(server::DeleteEdge{e});
          m.edges.erase(e);
          break;
        }
        case 5:
        case 6: {
          out.push_back(server::SetWeight{pick_edge(m), weight()});
          break;
        }
        default: {
          const std::uint64_t v = pick(m.vertices);
          std::vector<std::uint64_t> move;
          for (auto& [id, e] : m.edges) {
            const bool incident = std::find(e.first.begin(), e.first.end(), v) != e.first.end() ||
                                  std::find(e.second.begin(), e.second.end(), v) != e.second.end();
            if (incident && std::uniform_int_distribution<int>(0, 1)(rng_) == 1) {
              move.push_back(id);
              std::replace(e.first.begin(), e.first.end(), v, m.next_vertex);
              std::replace(e.second.begin(), e.second.end(), v, m.next_vertex);
            }
          }
          std::shuffle(move.begin(), move.end(), rng_);
          out.push_back(server::DecomposeVertex{v, move, weight()});
          const std::uint64_t x = m.next_vertex++;
          m.vertices.insert(x);
          m.edges[m.next_edge++] = {{v}, {x}};
          break;
        }
      }
    }
    return out;
  }

  /// The last batch was applied by the store.
  void committed() {
    vertices_ = pending_.vertices;
    edges_ = pending_.edges;
    next_vertex_ = pending_.next_vertex;
    next_edge_ = pending_.next_edge;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  using EdgeIds =
      std::map<std::uint64_t, std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>>;
  struct Model {
    std::set<std::uint64_t> vertices;
    EdgeIds edges;
    std::uint64_t next_vertex = 0;
    std::uint64_t next_edge = 0;
  };

  std::uint64_t pick(const std::set<std::uint64_t>& s) {
    auto it = s.begin();
    std::advance(it, std::uniform_int_distribution<std::size_t>(0, s.size() - 1)(rng_));
    return *it;
  }
  std::uint64_t pick_edge(const Model& m) {
    auto it = m.edges.begin();
    std::advance(it, std::uniform_int_distribution<std::size_t>(0, m.edges.size() - 1)(rng_));
    return it->first;
  }
  std::vector<std::uint64_t> some(const std::set<std::uint64_t>& s, int most) {
    const auto k = std::min<std::size_t>(
        s.size(), std::uniform_int_distribution<std::size_t>(1, std::max(1, most))(rng_));
    std::set<std::uint64_t> chosen;
    while (chosen.size() < k) chosen.insert(pick(s));
    std::vector<std::uint64_t> out(chosen.begin(), chosen.end());
    std::shuffle(out.begin(), out.end(), rng_);
    return out;
  }

  std::mt19937_64 rng_;
  std::set<std::uint64_t> vertices_;
  EdgeIds edges_;
  std::uint64_t next_vertex_ = 0;
  std::uint64_t next_edge_ = 0;
  Model pending_;
};

/// Random initial hyperedges over n vertices.
inline std::vector<server::Hyperedge> random_hyperedges(std::mt19937_64& rng, std::uint64_t n,
                                                        std::size_t m, int fat) {
  std::vector<server::Hyperedge> out;
  for (std::size_t i = 0; i < m; ++i) {
    server::Hyperedge e;
    for (auto* side : {&e.tails, &e.heads}) {
      const auto k = std::min<std::uint64_t>(n, std::uniform_int_distribution<int>(1, fat)(rng));
      std::set<std::uint64_t> chosen;
      while (chosen.size() < k) {
        chosen.insert(std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng));
      }
      side->assign(chosen.begin(), chosen.end());
    }
    e.weight = std::uniform_real_distribution<double>(-5.0, 50.0)(rng);
    out.push_back(std::move(e));
  }
  return out;
}

/// Exports the mirror's copy of graph_id and compares it with the store's current version.
inline void expect_mirror_matches(server::DeviceGraphMirror& mirror,
                                  const server::GraphStore& store, const std::string& graph_id,
                                  const std::string& where) {
  absl::StatusOr<GraphSnapshot> snap = store.get(graph_id);
  ASSERT_TRUE(snap.ok()) << snap.status();
  absl::StatusOr<server::MirrorCsr> csr = mirror.export_csr(graph_id);
  ASSERT_TRUE(csr.ok()) << where << ": " << csr.status();
  EXPECT_EQ(csr->version, snap->info.version) << where;
  expect_same_pairs(pairs_of(*snap), pairs_of(*csr), where);
}

}  // namespace gcompute::testing
