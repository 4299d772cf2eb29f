// SPDX-License-Identifier: Apache-2.0
#include "ops/graph_mirror.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server {

// ---- one graph's host index -------------------------------------------------------------

namespace {

std::uint64_t pair_key(std::uint32_t src, std::uint32_t dst) {
  return (std::uint64_t{src} << 32) | dst;
}

bool same_weight(const std::optional<float>& a, const std::optional<float>& b) {
  if (a.has_value() != b.has_value()) return false;
  // Bitwise: -0 and +0 are different values for the copy to hold.
  return !a.has_value() || std::bit_cast<std::uint32_t>(*a) == std::bit_cast<std::uint32_t>(*b);
}

bool beyond_f32(double weight) {
  return std::abs(weight) > static_cast<double>(std::numeric_limits<float>::max());
}

}  // namespace

class DeviceGraphMirror::Graph {
 public:
  /// The index of `graph`, with every pair queued for the copy.
  static absl::StatusOr<std::unique_ptr<Graph>> build(const GraphSnapshot& graph) {
    auto g = std::make_unique<Graph>();
    for (std::uint64_t v : graph.vertices) {
      if (absl::Status s = g->add_vertex(v); !s.ok()) return s;
    }
    for (const Hyperedge& e : graph.edges) {
      if (absl::Status s = g->attach(e, nullptr); !s.ok()) return s;
    }
    g->queued_.reserve(g->pairs_.size());
    for (const auto& [key, contribs] : g->pairs_) g->queued_.emplace(key, g->least(key));
    return g;
  }

  /// Applies one committed batch's net effect and queues the pairs whose weight changed.
  /// Old edges leave first (they may name removed vertices), new ones come last (they may
  /// name added ones).
  absl::Status apply(const GraphDelta& delta) {
    Touched touched;
    for (const EdgeDelta& d : delta.edges) {
      if (d.before) GC_RETURN_IF_ERROR(detach(*d.before, &touched));
    }
    for (std::uint64_t v : delta.removed_vertices) GC_RETURN_IF_ERROR(remove_vertex(v));
    for (std::uint64_t v : delta.added_vertices) GC_RETURN_IF_ERROR(add_vertex(v));
    for (const EdgeDelta& d : delta.edges) {
      if (d.after) GC_RETURN_IF_ERROR(attach(*d.after, &touched));
    }
    for (const auto& [key, before] : touched) {
      std::optional<float> now = least(key);
      if (!same_weight(before, now)) queued_.insert_or_assign(key, now);
    }
    return absl::OkStatus();
  }

  /// Pair changes waiting for the copy (at least 1 while there is no copy or it lacks slots).
  std::size_t queued() const {
    const bool pending_slots = target_ == nullptr || slot_vertex_.size() > device_slots_;
    return std::max<std::size_t>(queued_.size(), pending_slots ? 1 : 0);
  }

  /// Sends the queued changes (creating the copy first if there is none).
  absl::Status flush(MirrorTargetFactory& targets, std::uint64_t& pairs_sent) {
    const auto slots = static_cast<std::uint32_t>(slot_vertex_.size());
    if (target_ == nullptr) {
      absl::StatusOr<std::unique_ptr<MirrorTarget>> t = targets.create(slots);
      if (!t.ok()) return t.status();
      target_ = *std::move(t);
      device_slots_ = slots;
    } else if (slots > device_slots_) {
      if (absl::Status s = target_->add_vertices(slots - device_slots_); !s.ok()) return s;
      device_slots_ = slots;
    }
    std::vector<kernels::GraphEdge> deletes;
    std::vector<kernels::GraphEdge> upserts;
    for (const auto& [key, weight] : queued_) {
      kernels::GraphEdge e{static_cast<std::uint32_t>(key >> 32), static_cast<std::uint32_t>(key),
                           weight.value_or(0.0f)};
      (weight.has_value() ? upserts : deletes).push_back(e);
    }
    if (!deletes.empty()) {
      if (absl::Status s = target_->delete_edges(deletes); !s.ok()) return s;
    }
    if (!upserts.empty()) {
      if (absl::Status s = target_->upsert_edges(upserts); !s.ok()) return s;
    }
    pairs_sent += queued_.size();
    queued_.clear();
    return absl::OkStatus();
  }

  /// The dense weight matrix of the live vertices, rows in ascending id order.
  absl::StatusOr<MirrorDense> dense_weights() {
    GC_RETURN_IF_ERROR(weights_within_f32());
    MirrorDense out;
    const std::vector<std::int32_t> slot_rows = live_rows(out.vertex_ids);
    absl::StatusOr<Matrix> w =
        target_->dense_weights(slot_rows, static_cast<std::int64_t>(out.vertex_ids.size()));
    if (!w.ok()) return w.status();
    out.weights = *std::move(w);
    return out;
  }

  /// Shortest paths from vertex `source` searched where the copy lives, rows in ascending id
  /// order; `check` sees the vertex ids before the search.
  absl::StatusOr<MirrorSssp> sssp(std::uint64_t source, const kernels::StopToken& stop,
                                  const MirrorVertexCheck& check) {
    GC_RETURN_IF_ERROR(weights_within_f32());
    MirrorSssp out;
    const std::vector<std::int32_t> slot_rows = live_rows(out.vertex_ids);
    GC_RETURN_IF_ERROR(check(out.vertex_ids));
    auto it = slot_.find(source);
    if (it == slot_.end() || it->second >= device_slots_) {
      return absl::NotFoundError(
          absl::StrCat("source = ", source, ": no such vertex in the graph"));
    }
    GC_ASSIGN_OR_RETURN(SlotSssp found, target_->sssp(it->second, stop));
    const std::size_t rows = out.vertex_ids.size();
    out.dist.assign(rows, std::numeric_limits<float>::infinity());
    out.parent.assign(rows, -1);
    for (std::uint32_t slot = 0; slot < device_slots_; ++slot) {
      const std::int32_t row = slot_rows[slot];
      if (row < 0) continue;
      out.dist[row] = found.dist[slot];
      const std::int32_t p = found.parent[slot];
      out.parent[row] = p >= 0 ? slot_rows[p] : -1;
    }
    out.info = found.info;
    if (out.info.negative_cycle) {
      out.info.cycle_vertex = slot_vertex_[static_cast<std::size_t>(out.info.cycle_vertex)];
    }
    out.seconds = found.seconds;
    out.where = target_->where();
    return out;
  }

  absl::StatusOr<MirrorCsr> export_csr() {
    absl::StatusOr<kernels::HostCsr> csr = target_->export_csr();
    if (!csr.ok()) return csr.status();
    MirrorCsr out;
    out.slot_vertex = slot_vertex_;
    out.csr = *std::move(csr);
    out.where = target_->where();
    return out;
  }

 private:
  struct Contrib {
    double weight;
    std::uint64_t edge;
  };
  /// Pairs touched by a batch -> their weight before it.
  using Touched = absl::flat_hash_map<std::uint64_t, std::optional<float>>;

  /// FAILED_PRECONDITION while an edge weight is beyond f32: the copy holds an infinity for
  /// it, so reads go to the store, which names the edge.
  absl::Status weights_within_f32() const {
    if (beyond_f32_ == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(beyond_f32_, " edge weights are beyond the range of f32"));
  }

  /// The row of each slot (-1: a deleted vertex's) with rows in ascending id order, and the
  /// ids of the rows into `vertex_ids`.
  std::vector<std::int32_t> live_rows(std::vector<std::uint64_t>& vertex_ids) const {
    std::vector<std::pair<std::uint64_t, std::uint32_t>> live;  // (id, slot)
    for (std::uint32_t slot = 0; slot < device_slots_; ++slot) {
      if (slot_vertex_[slot] != kNoVertex) live.emplace_back(slot_vertex_[slot], slot);
    }
    std::sort(live.begin(), live.end());
    std::vector<std::int32_t> slot_rows(device_slots_, -1);
    vertex_ids.clear();
    vertex_ids.reserve(live.size());
    for (std::size_t r = 0; r < live.size(); ++r) {
      slot_rows[live[r].second] = static_cast<std::int32_t>(r);
      vertex_ids.push_back(live[r].first);
    }
    return slot_rows;
  }

  absl::Status add_vertex(std::uint64_t id) {
    if (slot_vertex_.size() >= kernels::kMaxGraphVertices) {
      return absl::ResourceExhaustedError("graph mirror: out of vertex slots");
    }
    const auto slot = static_cast<std::uint32_t>(slot_vertex_.size());
    if (!slot_.emplace(id, slot).second) {
      return absl::InternalError(absl::StrCat("vertex ", id, " exists"));
    }
    slot_vertex_.push_back(id);
    return absl::OkStatus();
  }

  /// A removed vertex keeps its slot (slots are never reused), marked kNoVertex.
  absl::Status remove_vertex(std::uint64_t id) {
    GC_ASSIGN_OR_RETURN(const std::uint32_t s, slot(id));
    slot_vertex_[s] = kNoVertex;
    slot_.erase(id);
    return absl::OkStatus();
  }

  absl::StatusOr<std::uint32_t> slot(std::uint64_t id) const {
    auto it = slot_.find(id);
    if (it == slot_.end()) return absl::InternalError(absl::StrCat("no vertex ", id));
    return it->second;
  }

  /// The least weight over the hyperedges that induce the pair, as the copy holds it (f32).
  std::optional<float> least(std::uint64_t key) const {
    auto it = pairs_.find(key);
    if (it == pairs_.end() || it->second.empty()) return std::nullopt;
    double w = it->second.front().weight;
    for (const Contrib& c : it->second) w = std::min(w, c.weight);
    return static_cast<float>(w);
  }

  /// Calls on_pair(key) for every tail -> head pair of `edge`, noting each pair's weight
  /// before the first change in `touched` (when given). Shared by attach() and detach().
  template <typename OnPair>
  absl::Status walk(const Hyperedge& edge, Touched* touched, OnPair on_pair) {
    std::vector<std::uint32_t> heads;
    heads.reserve(edge.heads.size());
    for (std::uint64_t h : edge.heads) {
      GC_ASSIGN_OR_RETURN(const std::uint32_t s, slot(h));
      heads.push_back(s);
    }
    for (std::uint64_t t : edge.tails) {
      GC_ASSIGN_OR_RETURN(const std::uint32_t s, slot(t));
      for (std::uint32_t h : heads) {
        const std::uint64_t key = pair_key(s, h);
        if (touched != nullptr && !touched->contains(key)) touched->emplace(key, least(key));
        GC_RETURN_IF_ERROR(on_pair(key));
      }
    }
    return absl::OkStatus();
  }

  /// Adds the edge's pairs.
  absl::Status attach(const Hyperedge& edge, Touched* touched) {
    if (beyond_f32(edge.weight)) ++beyond_f32_;
    return walk(edge, touched, [&](std::uint64_t key) {
      pairs_[key].push_back(Contrib{edge.weight, edge.id});
      return absl::OkStatus();
    });
  }

  /// Removes the edge's pairs.
  absl::Status detach(const Hyperedge& edge, Touched* touched) {
    if (beyond_f32(edge.weight)) --beyond_f32_;
    return walk(edge, touched, [&](std::uint64_t key) {
      auto it = pairs_.find(key);
      if (it == pairs_.end()) return absl::InternalError("pair without contributors");
      auto& c = it->second;
      auto pos =
          std::find_if(c.begin(), c.end(), [&](const Contrib& x) { return x.edge == edge.id; });
      if (pos == c.end()) return absl::InternalError("pair without this edge");
      *pos = c.back();
      c.pop_back();
      if (c.empty()) pairs_.erase(it);
      return absl::OkStatus();
    });
  }

  absl::flat_hash_map<std::uint64_t, std::uint32_t> slot_;  // live vertex id -> slot
  std::vector<std::uint64_t> slot_vertex_;                  // slot -> id or kNoVertex
  absl::flat_hash_map<std::uint64_t, absl::InlinedVector<Contrib, 1>> pairs_;
  absl::flat_hash_map<std::uint64_t, std::optional<float>> queued_;  // nullopt: delete
  std::uint32_t device_slots_ = 0;                                   // slots the copy has
  std::unique_ptr<MirrorTarget> target_;
  std::uint64_t beyond_f32_ = 0;  // edges whose weight f32 cannot hold (the copy has +-inf)
};

// ---- the mirror -------------------------------------------------------------------------

DeviceGraphMirror::DeviceGraphMirror(MirrorTargetFactory* targets, Options options)
    : targets_(targets), options_(options) {}

DeviceGraphMirror::~DeviceGraphMirror() = default;

std::shared_ptr<DeviceGraphMirror::Entry> DeviceGraphMirror::entry(const std::string& graph_id,
                                                                   bool create) {
  absl::MutexLock lock(&mu_);
  auto it = graphs_.find(graph_id);
  if (it != graphs_.end()) return it->second;
  if (!create) return nullptr;
  return graphs_.emplace(graph_id, std::make_shared<Entry>()).first->second;
}

void DeviceGraphMirror::mark_stale(Entry& e, const absl::Status& status) {
  e.graph.reset();
  absl::MutexLock lock(&mu_);
  ++stats_.failures;
  last_failure_ = status;
}

void DeviceGraphMirror::flush(Entry& e, std::size_t min_pairs) {
  if (e.graph == nullptr || e.graph->queued() == 0 || e.graph->queued() < min_pairs) return;
  std::uint64_t sent = 0;
  if (absl::Status s = e.graph->flush(*targets_, sent); !s.ok()) {
    mark_stale(e, s);
    return;
  }
  absl::MutexLock lock(&mu_);
  ++stats_.flushes;
  stats_.pairs_flushed += sent;
}

void DeviceGraphMirror::on_change(const GraphChange& change) {
  if (change.kind == GraphChange::Kind::kRemove) {
    std::shared_ptr<Entry> e;
    {
      absl::MutexLock lock(&mu_);
      auto it = graphs_.find(change.graph_id);
      if (it == graphs_.end()) return;
      e = std::move(it->second);
      graphs_.erase(it);
    }
    absl::MutexLock lock(&e->mu);
    ++e->changes;  // a rebuild of this entry in progress must not install itself
    e->graph.reset();
    return;
  }
  std::shared_ptr<Entry> e = entry(change.graph_id, true);
  absl::MutexLock lock(&e->mu);
  ++e->changes;
  e->version = change.version;
  absl::Status s;
  if (change.kind == GraphChange::Kind::kCreate) {
    absl::StatusOr<std::unique_ptr<Graph>> g = Graph::build(*change.graph);
    if (g.ok()) e->graph = *std::move(g);
    s = g.status();
  } else if (e->graph != nullptr) {  // else stale or not seen yet: rebuilt on read
    s = e->graph->apply(*change.delta);
  }
  if (!s.ok()) {
    mark_stale(*e, s);  // a half-applied index is never used again
    return;
  }
  flush(*e, options_.min_device_batch);
}

absl::StatusOr<MirrorCsr> DeviceGraphMirror::export_csr(const std::string& graph_id) {
  absl::StatusOr<MirrorCsr> out;
  GC_RETURN_IF_ERROR(
      read_copy(graph_id, /*stale_on_failure=*/true, [&](Graph& g, std::uint64_t version) {
        out = g.export_csr();
        if (out.ok()) out->version = version;
        return out.status();
      }));
  return out;
}

absl::StatusOr<MirrorDense> DeviceGraphMirror::dense_weights(const std::string& graph_id) {
  absl::StatusOr<MirrorDense> out;
  // A failure here (no memory for the matrix) leaves the copy as good as it was.
  GC_RETURN_IF_ERROR(
      read_copy(graph_id, /*stale_on_failure=*/false, [&](Graph& g, std::uint64_t version) {
        out = g.dense_weights();
        if (out.ok()) out->version = version;
        return out.status();
      }));
  return out;
}

absl::StatusOr<MirrorSssp> DeviceGraphMirror::sssp(const std::string& graph_id,
                                                   std::uint64_t source, kernels::StopToken stop,
                                                   const MirrorVertexCheck& check) {
  absl::StatusOr<MirrorSssp> out;
  // A failed search (cancelled, a negative cycle's report is not a failure) leaves the copy
  // as good as it was.
  GC_RETURN_IF_ERROR(
      read_copy(graph_id, /*stale_on_failure=*/false, [&](Graph& g, std::uint64_t version) {
        out = g.sssp(source, stop, check);
        if (out.ok()) out->version = version;
        return out.status();
      }));
  return out;
}

absl::Status DeviceGraphMirror::read_copy(
    const std::string& graph_id, bool stale_on_failure,
    absl::FunctionRef<absl::Status(Graph&, std::uint64_t)> read) {
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::shared_ptr<Entry> e = entry(graph_id, true);
    std::uint64_t seen = 0;
    {
      absl::MutexLock lock(&e->mu);
      if (e->graph != nullptr) {
        flush(*e, 0);
        if (e->graph != nullptr) {
          absl::Status st = read(*e->graph, e->version);
          if (!st.ok() && stale_on_failure) mark_stale(*e, st);
          return st;
        }
        absl::MutexLock stats_lock(&mu_);
        return last_failure_;
      }
      seen = e->changes;
    }
    if (store_ == nullptr) return absl::FailedPreconditionError("graph mirror: no store attached");
    // Outside the entry's lock: a batch in progress holds the graph's lock and waits for it.
    absl::StatusOr<GraphSnapshot> snap = store_->get(graph_id);
    absl::MutexLock lock(&e->mu);
    if (e->changes != seen) continue;  // a change came in between: the snapshot may be older
    if (!snap.ok()) {
      if (snap.status().code() == absl::StatusCode::kNotFound) {
        absl::MutexLock map_lock(&mu_);
        auto it = graphs_.find(graph_id);
        if (it != graphs_.end() && it->second == e) graphs_.erase(it);
      }
      return snap.status();
    }
    absl::StatusOr<std::unique_ptr<Graph>> g = Graph::build(*snap);
    if (!g.ok()) {
      mark_stale(*e, g.status());
      return g.status();
    }
    e->graph = *std::move(g);
    e->version = snap->info.version;
    {
      absl::MutexLock stats_lock(&mu_);
      ++stats_.rebuilds;
    }
    // Next iteration flushes and reads.
  }
  return absl::UnavailableError(absl::StrCat(
      "graph mirror: graph ", graph_id, " kept changing during ", kAttempts, " rebuild attempts"));
}

DeviceGraphMirror::Stats DeviceGraphMirror::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace gcompute::server
