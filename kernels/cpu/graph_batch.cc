// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cpu/graph_batch.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gcompute::kernels::cpu {
namespace {

// Slot layout, identical to the device: key (dst) in the high 32 bits, weight bits in the low.
constexpr std::uint32_t kEmptyKey = 0xFFFFFFFFu;
constexpr std::uint32_t kTombKey = 0xFFFFFFFEu;
constexpr std::uint64_t kEmptySlot = ~std::uint64_t{0};
constexpr std::uint64_t kTombSlot = std::uint64_t{kTombKey} << 32;

inline std::uint32_t slot_key(std::uint64_t s) {
  return static_cast<std::uint32_t>(s >> 32);
}
inline std::uint64_t make_slot(std::uint32_t key, float w) {
  return (std::uint64_t{key} << 32) | std::bit_cast<std::uint32_t>(w);
}
inline float slot_weight(std::uint64_t s) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(s));
}

// Open-addressing set of (src, dst) keys already seen in this batch (batch processed from the
// back, so the first time a key is seen is its last occurrence, the one that takes effect).
class SeenSet {
 public:
  explicit SeenSet(std::size_t expected) {
    std::size_t cap = 16;
    while (cap < 2 * expected) cap <<= 1;
    slots_.assign(cap, kEmptySlot);
  }
  /// True if the key was new (and is now recorded).
  bool insert(std::uint64_t key) {
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.size() * 2);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t p = hash(key) & mask;; p = (p + 1) & mask) {
      if (slots_[p] == key) return false;
      if (slots_[p] == kEmptySlot) {
        slots_[p] = key;
        ++size_;
        return true;
      }
    }
  }

 private:
  static std::size_t hash(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<std::size_t>(k);
  }
  void rehash(std::size_t cap) {
    std::vector<std::uint64_t> old(cap, kEmptySlot);
    old.swap(slots_);
    const std::size_t mask = cap - 1;
    for (std::uint64_t k : old) {
      if (k == kEmptySlot) continue;
      std::size_t p = hash(k) & mask;
      while (slots_[p] != kEmptySlot) p = (p + 1) & mask;
      slots_[p] = k;
    }
  }
  std::vector<std::uint64_t> slots_;
  std::size_t size_ = 0;
};

}  // namespace

absl::StatusOr<DynamicGraph> DynamicGraph::create(std::uint32_t num_vertices,
                                                  GraphOptions options) {
  if (num_vertices > kMaxGraphVertices) {
    return absl::InvalidArgumentError(
        absl::StrCat("DynamicGraph: num_vertices ", num_vertices, " > ", kMaxGraphVertices));
  }
  if (absl::Status s = validate(options); !s.ok()) return s;
  return DynamicGraph(num_vertices, options);
}

DynamicGraph::DynamicGraph(std::uint32_t num_vertices, GraphOptions options)
    : options_(options), rows_(num_vertices) {}

absl::StatusOr<std::uint32_t> DynamicGraph::add_vertices(std::uint32_t count) {
  const std::uint64_t n = rows_.size();
  if (n + count > kMaxGraphVertices) {
    return absl::ResourceExhaustedError(
        absl::StrCat("DynamicGraph: ", n + count, " vertices > ", kMaxGraphVertices));
  }
  rows_.resize(n + count);
  return static_cast<std::uint32_t>(n);
}

void DynamicGraph::grow(Row& row, std::uint32_t need) {
  const std::uint64_t cap = graph_table_size_for(need, options_);
  std::vector<std::uint64_t> fresh(cap, kEmptySlot);
  const std::uint64_t mask = cap - 1;
  for (std::uint64_t s : row.slots) {
    if (slot_key(s) >= kTombKey) continue;
    std::uint64_t p = graph_slot_hash(slot_key(s)) & mask;
    while (fresh[p] != kEmptySlot) p = (p + 1) & mask;
    fresh[p] = s;
  }
  row.slots.swap(fresh);
  row.used = row.live;
}

absl::StatusOr<GraphBatchResult> DynamicGraph::insert_edges(std::span<const GraphEdge> edges,
                                                            std::span<EdgeStatus> status,
                                                            int threads) {
  return apply(Op::kInsert, edges, status, threads);
}
absl::StatusOr<GraphBatchResult> DynamicGraph::delete_edges(std::span<const GraphEdge> edges,
                                                            std::span<EdgeStatus> status,
                                                            int threads) {
  return apply(Op::kDelete, edges, status, threads);
}
absl::StatusOr<GraphBatchResult> DynamicGraph::update_weights(std::span<const GraphEdge> edges,
                                                              std::span<EdgeStatus> status,
                                                              int threads) {
  return apply(Op::kUpdate, edges, status, threads);
}

absl::StatusOr<GraphBatchResult> DynamicGraph::apply(Op op, std::span<const GraphEdge> edges,
                                                     std::span<EdgeStatus> status, int threads) {
  if (!status.empty() && status.size() != edges.size()) {
    return absl::InvalidArgumentError(absl::StrCat("DynamicGraph: status has ", status.size(),
                                                   " entries for ", edges.size(), " edges"));
  }
  // Validate everything first: a batch with one bad element changes nothing.
  const std::uint32_t n = num_vertices();
  std::size_t invalid = 0;
  for (const GraphEdge& e : edges) invalid += (e.src >= n) | (e.dst >= n);
  if (invalid != 0) {
    if (!status.empty()) {
      for (std::size_t i = 0; i < edges.size(); ++i) {
        status[i] =
            (edges[i].src >= n || edges[i].dst >= n) ? EdgeStatus::kInvalid : EdgeStatus::kMissing;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat("DynamicGraph: ", invalid, " of ", edges.size(),
                                                   " edges have src or dst >= ", n));
  }

  int t = threads;
  if (t <= 0) {
    // Threads cost tens of microseconds to start; below ~32k edges one thread is faster.
    t = edges.size() < 32768 ? 1
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  t = static_cast<int>(
      std::min<std::size_t>(static_cast<std::size_t>(t), std::max<std::size_t>(1, edges.size())));

  // Each worker owns the vertices with src % t == w, scans the batch from the back and applies
  // its elements; tables of different vertices are disjoint, so no synchronisation is needed.
  std::vector<GraphBatchResult> partial(t);
  auto work = [&](int w) {
    GraphBatchResult& out = partial[w];
    SeenSet seen(edges.size() / t + 1);
    for (std::size_t i = edges.size(); i-- > 0;) {
      const GraphEdge& e = edges[i];
      if (t > 1 && static_cast<int>(e.src % static_cast<std::uint32_t>(t)) != w) continue;
      EdgeStatus st;
      if (!seen.insert((std::uint64_t{e.src} << 32) | e.dst)) {
        st = EdgeStatus::kSuperseded;
        ++out.superseded;
      } else {
        Row& row = rows_[e.src];
        const std::uint64_t cap = row.slots.size();
        const std::uint64_t mask = cap - 1;
        std::int64_t found = -1, tomb = -1, empty = -1;
        if (cap != 0) {
          for (std::uint64_t p = graph_slot_hash(e.dst) & mask, k = 0; k < cap;
               ++k, p = (p + 1) & mask) {
            const std::uint32_t key = slot_key(row.slots[p]);
            if (key == e.dst) {
              found = static_cast<std::int64_t>(p);
              break;
            }
            if (key == kEmptyKey) {
              empty = static_cast<std::int64_t>(p);
              break;
            }
            if (key == kTombKey && tomb < 0) tomb = static_cast<std::int64_t>(p);
          }
        }
        if (found >= 0) {
          if (op == Op::kDelete) {
            row.slots[found] = kTombSlot;
            --row.live;
            st = EdgeStatus::kRemoved;
            ++out.removed;
          } else {
            row.slots[found] = make_slot(e.dst, e.weight);
            st = EdgeStatus::kUpdated;
            ++out.updated;
          }
        } else if (op != Op::kInsert) {
          st = EdgeStatus::kMissing;
          ++out.missing;
        } else {
          if (tomb >= 0) {
            row.slots[tomb] = make_slot(e.dst, e.weight);
          } else if (cap != 0 && row.used + 1 <= graph_table_threshold(cap, options_.max_load)) {
            row.slots[empty] = make_slot(e.dst, e.weight);
            ++row.used;
          } else {
            grow(row, row.live + 1);
            ++out.grown_vertices;
            const std::uint64_t m = row.slots.size() - 1;
            std::uint64_t p = graph_slot_hash(e.dst) & m;
            while (row.slots[p] != kEmptySlot) p = (p + 1) & m;
            row.slots[p] = make_slot(e.dst, e.weight);
            ++row.used;
          }
          ++row.live;
          st = EdgeStatus::kInserted;
          ++out.inserted;
        }
      }
      if (!status.empty()) status[i] = st;
    }
  };
  if (t == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(t);
    for (int w = 0; w < t; ++w) pool.emplace_back(work, w);
    for (std::thread& th : pool) th.join();
  }
  GraphBatchResult total;
  for (const GraphBatchResult& p : partial) {
    total.inserted += p.inserted;
    total.updated += p.updated;
    total.removed += p.removed;
    total.missing += p.missing;
    total.superseded += p.superseded;
    total.grown_vertices += p.grown_vertices;
  }
  num_edges_ += total.inserted;
  num_edges_ -= total.removed;
  return total;
}

HostCsr DynamicGraph::export_csr() const {
  HostCsr csr;
  csr.num_vertices = num_vertices();
  csr.row_offsets.resize(static_cast<std::size_t>(csr.num_vertices) + 1, 0);
  for (std::uint32_t v = 0; v < csr.num_vertices; ++v)
    csr.row_offsets[v + 1] = csr.row_offsets[v] + rows_[v].live;
  csr.cols.resize(csr.row_offsets.back());
  csr.weights.resize(csr.row_offsets.back());
  std::vector<std::uint64_t> row;
  for (std::uint32_t v = 0; v < csr.num_vertices; ++v) {
    row.clear();
    for (std::uint64_t s : rows_[v].slots) {
      if (slot_key(s) < kTombKey) row.push_back(s);
    }
    std::sort(row.begin(), row.end());  // by dst (high bits); dsts are unique within a row
    std::uint64_t o = csr.row_offsets[v];
    for (std::uint64_t s : row) {
      csr.cols[o] = slot_key(s);
      csr.weights[o] = slot_weight(s);
      ++o;
    }
  }
  return csr;
}

}  // namespace gcompute::kernels::cpu
