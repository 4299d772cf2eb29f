// SPDX-License-Identifier: Apache-2.0
#include "ops/graph_mirror.hpp"

#include <algorithm>
#include <bit>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"

namespace gcompute::server {

// ---- fan-out ----------------------------------------------------------------------------

GraphListenerFanout::GraphListenerFanout(std::vector<GraphStoreListener*> first,
                                         GraphStoreListener* last)
    : listeners_(std::move(first)) {
  listeners_.push_back(last);
}

absl::Status GraphListenerFanout::run(const std::string& graph_id,
                                      absl::FunctionRef<absl::Status(GraphStoreListener&)> call) {
  for (std::size_t i = 0; i < listeners_.size(); ++i) {
    absl::Status s = call(*listeners_[i]);
    if (s.ok()) continue;
    // The store rolls the change back: the listeners that already accepted it must forget it.
    for (std::size_t j = 0; j < i; ++j) {
      if (auto* r = dynamic_cast<RevocableGraphStoreListener*>(listeners_[j]); r != nullptr) {
        r->on_cancelled(graph_id);
      }
    }
    return s;
  }
  return absl::OkStatus();
}

absl::Status GraphListenerFanout::on_create(const GraphSnapshot& graph) {
  return run(graph.info.graph_id, [&](GraphStoreListener& l) { return l.on_create(graph); });
}

absl::Status GraphListenerFanout::on_apply(const std::string& graph_id, std::span<const Edit> edits,
                                           const ApplyResult& result) {
  return run(graph_id, [&](GraphStoreListener& l) { return l.on_apply(graph_id, edits, result); });
}

absl::Status GraphListenerFanout::on_remove(const std::string& graph_id) {
  return run(graph_id, [&](GraphStoreListener& l) { return l.on_remove(graph_id); });
}

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
      HostEdge edge{e.tails, e.heads, e.weight};
      if (absl::Status s = g->attach(e.id, edge, nullptr); !s.ok()) return s;
      g->edges_.emplace(e.id, std::move(edge));
    }
    g->queued_.reserve(g->pairs_.size());
    for (const auto& [key, contribs] : g->pairs_) g->queued_.emplace(key, g->least(key));
    return g;
  }

  /// Replays one applied batch on the index and queues the pairs whose weight changed.
  absl::Status apply(std::span<const Edit> edits, const ApplyResult& result) {
    if (edits.size() != result.results.size()) {
      return absl::InternalError("graph mirror: a result per edit expected");
    }
    Touched touched;
    for (std::size_t i = 0; i < edits.size(); ++i) {
      const EditResult& r = result.results[i];
      absl::Status s =
          std::visit([&](const auto& edit) { return apply_edit(edit, r, touched); }, edits[i]);
      if (!s.ok())
        return absl::InternalError(absl::StrCat("graph mirror: edits[", i, "]: ", s.message()));
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
  struct HostEdge {
    std::vector<std::uint64_t> tails;
    std::vector<std::uint64_t> heads;
    double weight = 0.0;
  };
  struct Contrib {
    double weight;
    std::uint64_t edge;
  };
  /// Pairs touched by a batch -> their weight before it.
  using Touched = absl::flat_hash_map<std::uint64_t, std::optional<float>>;

  absl::Status add_vertex(std::uint64_t id) {
    if (slot_vertex_.size() >= kernels::kMaxGraphVertices) {
      return absl::ResourceExhaustedError("graph mirror: out of vertex slots");
    }
    const auto slot = static_cast<std::uint32_t>(slot_vertex_.size());
    if (!slot_.emplace(id, slot).second) {
      return absl::InternalError(absl::StrCat("vertex ", id, " exists"));
    }
    slot_vertex_.push_back(id);
    incident_.emplace_back();
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

  void touch(std::uint64_t key, Touched* touched) const {
    if (touched != nullptr && !touched->contains(key)) touched->emplace(key, least(key));
  }

  /// Calls on_vertex(slot) for every tail and head of `edge` and on_pair(key) for every
  /// tail -> head pair, touching each pair first. Shared by attach() and detach().
  template <typename OnVertex, typename OnPair>
  absl::Status walk(const HostEdge& edge, Touched* touched, OnVertex on_vertex, OnPair on_pair) {
    std::vector<std::uint32_t> heads;
    heads.reserve(edge.heads.size());
    for (std::uint64_t h : edge.heads) {
      absl::StatusOr<std::uint32_t> s = slot(h);
      if (!s.ok()) return s.status();
      heads.push_back(*s);
      on_vertex(*s);
    }
    for (std::uint64_t t : edge.tails) {
      absl::StatusOr<std::uint32_t> s = slot(t);
      if (!s.ok()) return s.status();
      on_vertex(*s);
      for (std::uint32_t h : heads) {
        const std::uint64_t key = pair_key(*s, h);
        touch(key, touched);
        if (absl::Status st = on_pair(key); !st.ok()) return st;
      }
    }
    return absl::OkStatus();
  }

  /// Adds edge `id`'s pairs and incidences.
  absl::Status attach(std::uint64_t id, const HostEdge& edge, Touched* touched) {
    return walk(
        edge, touched, [&](std::uint32_t v) { incident_[v].insert(id); },
        [&](std::uint64_t key) {
          pairs_[key].push_back(Contrib{edge.weight, id});
          return absl::OkStatus();
        });
  }

  /// Removes edge `id`'s pairs and incidences (the edge stays in edges_).
  absl::Status detach(std::uint64_t id, const HostEdge& edge, Touched* touched) {
    return walk(
        edge, touched, [&](std::uint32_t v) { incident_[v].erase(id); },
        [&](std::uint64_t key) {
          auto it = pairs_.find(key);
          if (it == pairs_.end()) return absl::InternalError("pair without contributors");
          auto& c = it->second;
          auto pos =
              std::find_if(c.begin(), c.end(), [&](const Contrib& x) { return x.edge == id; });
          if (pos == c.end()) return absl::InternalError("pair without this edge");
          *pos = c.back();
          c.pop_back();
          if (c.empty()) pairs_.erase(it);
          return absl::OkStatus();
        });
  }

  HostEdge* find_edge(std::uint64_t id) {
    auto it = edges_.find(id);
    return it == edges_.end() ? nullptr : &it->second;
  }

  absl::Status apply_edit(const AddVertex&, const EditResult& r, Touched&) {
    return add_vertex(r.vertex_id);
  }

  absl::Status apply_edit(const DeleteVertex& edit, const EditResult& r, Touched& touched) {
    absl::StatusOr<std::uint32_t> vs = slot(edit.vertex_id);
    if (!vs.ok()) return vs.status();
    const std::uint64_t v = edit.vertex_id;
    std::vector<std::uint64_t> incident(incident_[*vs].begin(), incident_[*vs].end());
    std::vector<std::uint64_t> deleted;
    for (std::uint64_t id : incident) {
      HostEdge* e = find_edge(id);
      if (e == nullptr) return absl::InternalError(absl::StrCat("no edge ", id));
      if (absl::Status s = detach(id, *e, &touched); !s.ok()) return s;
      std::erase(e->tails, v);
      std::erase(e->heads, v);
      if (e->tails.empty() || e->heads.empty()) {
        deleted.push_back(id);
        // The other vertices' incidences went with detach(); the edge itself goes now.
        edges_.erase(id);
      } else if (absl::Status s = attach(id, *e, &touched); !s.ok()) {
        return s;
      }
    }
    std::sort(deleted.begin(), deleted.end());
    if (deleted != r.deleted_edge_ids) {
      return absl::InternalError("deleted edges differ from the store's");
    }
    slot_vertex_[*vs] = kNoVertex;
    slot_.erase(v);
    return absl::OkStatus();
  }

  absl::Status apply_edit(const AddEdge& edit, const EditResult& r, Touched& touched) {
    HostEdge edge{edit.tails, edit.heads, edit.weight};
    if (absl::Status s = attach(r.edge_id, edge, &touched); !s.ok()) return s;
    if (!edges_.emplace(r.edge_id, std::move(edge)).second) {
      return absl::InternalError(absl::StrCat("edge ", r.edge_id, " exists"));
    }
    return absl::OkStatus();
  }

  absl::Status apply_edit(const DeleteEdge& edit, const EditResult&, Touched& touched) {
    HostEdge* e = find_edge(edit.edge_id);
    if (e == nullptr) return absl::InternalError(absl::StrCat("no edge ", edit.edge_id));
    if (absl::Status s = detach(edit.edge_id, *e, &touched); !s.ok()) return s;
    edges_.erase(edit.edge_id);
    return absl::OkStatus();
  }

  absl::Status apply_edit(const SetWeight& edit, const EditResult&, Touched& touched) {
    HostEdge* e = find_edge(edit.edge_id);
    if (e == nullptr) return absl::InternalError(absl::StrCat("no edge ", edit.edge_id));
    if (absl::Status s = detach(edit.edge_id, *e, &touched); !s.ok()) return s;
    e->weight = edit.weight;
    return attach(edit.edge_id, *e, &touched);
  }

  absl::Status apply_edit(const DecomposeVertex& edit, const EditResult& r, Touched& touched) {
    const std::uint64_t v = edit.vertex_id;
    const std::uint64_t x = r.vertex_id;
    if (absl::Status s = add_vertex(x); !s.ok()) return s;
    for (std::uint64_t id : edit.move_edge_ids) {
      HostEdge* e = find_edge(id);
      if (e == nullptr) return absl::InternalError(absl::StrCat("no edge ", id));
      if (absl::Status s = detach(id, *e, &touched); !s.ok()) return s;
      std::replace(e->tails.begin(), e->tails.end(), v, x);
      std::replace(e->heads.begin(), e->heads.end(), v, x);
      if (absl::Status s = attach(id, *e, &touched); !s.ok()) return s;
    }
    return apply_edit(AddEdge{{v}, {x}, edit.joining_weight}, r, touched);
  }

  absl::flat_hash_map<std::uint64_t, std::uint32_t> slot_;    // live vertex id -> slot
  std::vector<std::uint64_t> slot_vertex_;                    // slot -> id or kNoVertex
  std::vector<absl::flat_hash_set<std::uint64_t>> incident_;  // slot -> edges (tail or head)
  absl::flat_hash_map<std::uint64_t, HostEdge> edges_;
  absl::flat_hash_map<std::uint64_t, absl::InlinedVector<Contrib, 1>> pairs_;
  absl::flat_hash_map<std::uint64_t, std::optional<float>> queued_;  // nullopt: delete
  std::uint32_t device_slots_ = 0;                                   // slots the copy has
  std::unique_ptr<MirrorTarget> target_;
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

absl::Status DeviceGraphMirror::on_create(const GraphSnapshot& graph) {
  std::shared_ptr<Entry> e = entry(graph.info.graph_id, true);
  absl::MutexLock lock(&e->mu);
  ++e->changes;
  e->version = graph.info.version;
  absl::StatusOr<std::unique_ptr<Graph>> g = Graph::build(graph);
  if (!g.ok()) {
    mark_stale(*e, g.status());
    return absl::OkStatus();
  }
  e->graph = *std::move(g);
  flush(*e, options_.min_device_batch);
  return absl::OkStatus();
}

absl::Status DeviceGraphMirror::on_apply(const std::string& graph_id, std::span<const Edit> edits,
                                         const ApplyResult& result) {
  std::shared_ptr<Entry> e = entry(graph_id, true);
  absl::MutexLock lock(&e->mu);
  ++e->changes;
  e->version = result.version;
  if (e->graph == nullptr) return absl::OkStatus();  // stale or not seen yet: rebuilt on read
  if (absl::Status s = e->graph->apply(edits, result); !s.ok()) {
    mark_stale(*e, s);  // a half-replayed index is never used again
    return absl::OkStatus();
  }
  flush(*e, options_.min_device_batch);
  return absl::OkStatus();
}

absl::Status DeviceGraphMirror::on_remove(const std::string& graph_id) {
  std::shared_ptr<Entry> e;
  {
    absl::MutexLock lock(&mu_);
    auto it = graphs_.find(graph_id);
    if (it == graphs_.end()) return absl::OkStatus();
    e = std::move(it->second);
    graphs_.erase(it);
  }
  absl::MutexLock lock(&e->mu);
  ++e->changes;  // a rebuild of this entry in progress must not install itself
  e->graph.reset();
  return absl::OkStatus();
}

void DeviceGraphMirror::on_cancelled(const std::string& graph_id) {
  // The copy may hold a change the store rolled back (or lack a graph whose removal was
  // refused): drop it, and let the next read rebuild it from the store.
  std::shared_ptr<Entry> e = entry(graph_id, true);
  absl::MutexLock lock(&e->mu);
  ++e->changes;
  e->graph.reset();
}

absl::StatusOr<MirrorCsr> DeviceGraphMirror::export_csr(const std::string& graph_id) {
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::shared_ptr<Entry> e = entry(graph_id, true);
    std::uint64_t seen = 0;
    {
      absl::MutexLock lock(&e->mu);
      if (e->graph != nullptr) {
        flush(*e, 0);
        if (e->graph != nullptr) {
          absl::StatusOr<MirrorCsr> out = e->graph->export_csr();
          if (!out.ok()) {
            mark_stale(*e, out.status());
            return out.status();
          }
          out->version = e->version;
          return out;
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
    // Next iteration flushes and exports.
  }
  return absl::UnavailableError(absl::StrCat(
      "graph mirror: graph ", graph_id, " kept changing during ", kAttempts, " rebuild attempts"));
}

DeviceGraphMirror::Stats DeviceGraphMirror::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace gcompute::server
