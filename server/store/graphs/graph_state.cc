// SPDX-License-Identifier: Apache-2.0
#include "store/graphs/graph_state.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server {

std::string format_weight(double weight) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), weight);
  if (ec != std::errc()) return absl::StrCat(weight);
  return std::string(buf, end);
}

namespace {

/// INVALID_ARGUMENT naming the first repeated id in `ids` ("<field>[3] = 7 repeats
/// <field>[1]"), OK if all differ.
absl::Status check_distinct(const std::vector<std::uint64_t>& ids, const std::string& field) {
  absl::flat_hash_map<std::uint64_t, std::size_t> first;
  first.reserve(ids.size());
  for (std::size_t j = 0; j < ids.size(); ++j) {
    auto [it, inserted] = first.emplace(ids[j], j);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", j, "] = ", ids[j], " repeats ", field, "[", it->second, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status check_finite(double weight, const std::string& field) {
  if (!std::isfinite(weight)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " = ", format_weight(weight), " is not finite"));
  }
  return absl::OkStatus();
}

}  // namespace

// ---- construction and reads -------------------------------------------------------------

absl::StatusOr<GraphState> GraphState::create(std::uint64_t num_vertices,
                                              std::vector<Hyperedge> edges,
                                              const GraphLimits& limits) {
  if (num_vertices > limits.max_vertices) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "num_vertices = ", num_vertices, " is more than the limit of ", limits.max_vertices));
  }
  if (edges.size() > limits.max_edges) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the graph has ", edges.size(), " edges, more than the limit of ", limits.max_edges));
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const Hyperedge& e = edges[i];
    const std::string prefix = absl::StrCat("edges[", i, "]");
    if (e.tails.empty()) return absl::InvalidArgumentError(absl::StrCat(prefix, ".tails is empty"));
    if (e.heads.empty()) return absl::InvalidArgumentError(absl::StrCat(prefix, ".heads is empty"));
    for (const auto& [ids, name] : {std::pair{&e.tails, ".tails"}, std::pair{&e.heads, ".heads"}}) {
      for (std::size_t j = 0; j < ids->size(); ++j) {
        if ((*ids)[j] >= num_vertices) {
          return absl::InvalidArgumentError(absl::StrCat(prefix, name, "[", j, "] = ", (*ids)[j],
                                                         " but the graph has ", num_vertices,
                                                         " vertices"));
        }
      }
      if (absl::Status s = check_distinct(*ids, absl::StrCat(prefix, name)); !s.ok()) return s;
    }
    if (absl::Status s = check_finite(e.weight, absl::StrCat(prefix, ".weight")); !s.ok()) {
      return s;
    }
  }

  GraphState g;
  g.vertices_.reserve(num_vertices);
  for (std::uint64_t v = 0; v < num_vertices; ++v) g.vertices_.emplace(v, Vertex{});
  g.edges_.reserve(edges.size());
  for (std::size_t i = 0; i < edges.size(); ++i) {
    Edge edge{std::move(edges[i].tails), std::move(edges[i].heads), edges[i].weight};
    g.attach(i, edge);
    g.edges_.emplace(i, std::move(edge));
  }
  g.next_vertex_id_ = num_vertices;
  g.next_edge_id_ = edges.size();
  g.version_ = 1;
  return g;
}

GraphInfo GraphState::info(const std::string& graph_id) const {
  return GraphInfo{graph_id, version_, vertices_.size(), edges_.size()};
}

std::vector<std::uint64_t> GraphState::sorted_vertex_ids() const {
  std::vector<std::uint64_t> ids;
  ids.reserve(vertices_.size());
  for (const auto& [id, vertex] : vertices_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

GraphSnapshot GraphState::snapshot(const std::string& graph_id) const {
  GraphSnapshot snap;
  snap.info = info(graph_id);
  snap.vertices = sorted_vertex_ids();
  std::vector<std::uint64_t> edge_ids;
  edge_ids.reserve(edges_.size());
  for (const auto& [id, edge] : edges_) edge_ids.push_back(id);
  std::sort(edge_ids.begin(), edge_ids.end());
  snap.edges.reserve(edges_.size());
  for (std::uint64_t id : edge_ids) {
    const Edge& edge = edges_.find(id)->second;
    snap.edges.push_back(Hyperedge{id, edge.tails, edge.heads, edge.weight});
  }
  return snap;
}

// ---- persistence (graph_wal.hpp) ---------------------------------------------------------

absl::StatusOr<GraphState> GraphState::restore(const GraphImage& image, const GraphLimits& limits) {
  const GraphSnapshot& g = image.graph;
  if (g.info.version == 0) return absl::InvalidArgumentError("image: version is 0");
  if (g.vertices.size() > limits.max_vertices || g.edges.size() > limits.max_edges) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "image: ", g.vertices.size(), " vertices and ", g.edges.size(),
        " edges are more than the limits of ", limits.max_vertices, " and ", limits.max_edges));
  }
  GraphState out;
  out.vertices_.reserve(g.vertices.size());
  for (std::size_t i = 0; i < g.vertices.size(); ++i) {
    const std::uint64_t v = g.vertices[i];
    if ((i > 0 && v <= g.vertices[i - 1]) || v >= image.next_vertex_id) {
      return absl::InvalidArgumentError(
          absl::StrCat("image: vertices[", i, "] = ", v,
                       " is not ascending or not below next_vertex_id = ", image.next_vertex_id));
    }
    out.vertices_.emplace(v, Vertex{});
  }
  out.edges_.reserve(g.edges.size());
  for (std::size_t i = 0; i < g.edges.size(); ++i) {
    const Hyperedge& e = g.edges[i];
    const std::string field = absl::StrCat("image: edges[", i, "] (id ", e.id, ")");
    if ((i > 0 && e.id <= g.edges[i - 1].id) || e.id >= image.next_edge_id) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is not ascending or not below next_edge_id = ", image.next_edge_id));
    }
    if (e.tails.empty() || e.heads.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, " has no tails or no heads"));
    }
    for (const auto& [ids, name] : {std::pair{&e.tails, ".tails"}, std::pair{&e.heads, ".heads"}}) {
      for (std::uint64_t v : *ids) {
        if (!out.vertices_.contains(v)) {
          return absl::InvalidArgumentError(absl::StrCat(field, name, " names missing vertex ", v));
        }
      }
      if (absl::Status s = check_distinct(*ids, absl::StrCat(field, name)); !s.ok()) return s;
    }
    if (absl::Status s = check_finite(e.weight, absl::StrCat(field, ".weight")); !s.ok()) return s;
    Edge edge{e.tails, e.heads, e.weight};
    out.attach(e.id, edge);
    out.edges_.emplace(e.id, std::move(edge));
  }
  out.next_vertex_id_ = image.next_vertex_id;
  out.next_edge_id_ = image.next_edge_id;
  out.version_ = g.info.version;
  return out;
}

GraphImage GraphState::image(const std::string& graph_id) const {
  return GraphImage{snapshot(graph_id), next_vertex_id_, next_edge_id_};
}

// ---- primitive changes and undo ---------------------------------------------------------

void GraphState::attach(std::uint64_t id, const Edge& edge) {
  for (std::uint64_t t : edge.tails) vertices_.find(t)->second.tail_of.insert(id);
  for (std::uint64_t h : edge.heads) vertices_.find(h)->second.head_of.insert(id);
}

void GraphState::detach(std::uint64_t id, const Edge& edge) {
  for (std::uint64_t t : edge.tails) vertices_.find(t)->second.tail_of.erase(id);
  for (std::uint64_t h : edge.heads) vertices_.find(h)->second.head_of.erase(id);
}

void GraphState::add_vertex(Batch& batch, std::uint64_t id) {
  vertices_.emplace(id, Vertex{});
  batch.undo.emplace_back(UndoAddVertex{id});
}

void GraphState::erase_vertex(Batch& batch, std::uint64_t id) {
  vertices_.erase(id);
  batch.undo.emplace_back(UndoEraseVertex{id});
}

void GraphState::add_edge(Batch& batch, std::uint64_t id, Edge edge) {
  attach(id, edge);
  edges_.emplace(id, std::move(edge));
  batch.undo.emplace_back(UndoAddEdge{id});
}

void GraphState::erase_edge(Batch& batch, std::uint64_t id) {
  auto it = edges_.find(id);
  Edge edge = std::move(it->second);
  edges_.erase(it);
  detach(id, edge);
  batch.undo.emplace_back(UndoEraseEdge{id, std::move(edge)});
}

void GraphState::set_weight(Batch& batch, std::uint64_t id, double weight) {
  double& w = edges_.find(id)->second.weight;
  batch.undo.emplace_back(UndoSetWeight{id, w});
  w = weight;
}

void GraphState::rollback(Batch& batch) {
  // Newest first: each record finds the graph exactly as its change left it.
  for (auto it = batch.undo.rbegin(); it != batch.undo.rend(); ++it) {
    if (auto* u = std::get_if<UndoAddVertex>(&*it)) {
      vertices_.erase(u->id);  // its later edges are already gone
    } else if (auto* u2 = std::get_if<UndoEraseVertex>(&*it)) {
      vertices_.emplace(u2->id, Vertex{});  // its edges come back as older records replay
    } else if (auto* u3 = std::get_if<UndoAddEdge>(&*it)) {
      auto e = edges_.find(u3->id);
      detach(u3->id, e->second);
      edges_.erase(e);
    } else if (auto* u4 = std::get_if<UndoEraseEdge>(&*it)) {
      attach(u4->id, u4->edge);
      edges_.emplace(u4->id, std::move(u4->edge));
    } else {
      const auto& u5 = std::get<UndoSetWeight>(*it);
      edges_.find(u5.id)->second.weight = u5.weight;
    }
  }
  batch.undo.clear();
  next_vertex_id_ = batch.next_vertex_id;
  next_edge_id_ = batch.next_edge_id;
}

// ---- edits ------------------------------------------------------------------------------

absl::StatusOr<ApplyResult> GraphState::apply(std::span<const Edit> edits,
                                              const GraphLimits& limits) {
  return apply(edits, limits, [](const ApplyResult&) { return absl::OkStatus(); });
}

absl::StatusOr<ApplyResult> GraphState::apply(std::span<const Edit> edits,
                                              const GraphLimits& limits, BeforeCommit before_commit,
                                              GraphDelta* delta) {
  ApplyResult out;
  out.version = version_;
  if (edits.empty()) return out;

  Batch batch;
  batch.next_vertex_id = next_vertex_id_;
  batch.next_edge_id = next_edge_id_;
  out.results.resize(edits.size());
  for (std::size_t i = 0; i < edits.size(); ++i) {
    absl::Status s = std::visit(
        [&](const auto& edit) {
          return apply_edit(EditContext{batch, i, limits, out.results[i]}, edit);
        },
        edits[i]);
    if (!s.ok()) {
      rollback(batch);
      return s;
    }
  }
  out.version = version_ + 1;
  if (absl::Status s = before_commit(out); !s.ok()) {
    rollback(batch);
    return s;
  }
  version_ = out.version;
  if (delta != nullptr) *delta = describe(batch);
  return out;
}

GraphDelta GraphState::describe(const Batch& batch) const {
  // The first undo record of an element holds its state before the batch; its state after is
  // the graph's now. A set_weight record keeps only the old weight: the edge's tails and heads
  // at that moment are those of its next erase record (only an erase and re-add changes them),
  // or, if there is none, its current ones.
  absl::flat_hash_map<std::uint64_t, std::size_t> first_edge, first_erase, first_vertex;
  for (std::size_t i = 0; i < batch.undo.size(); ++i) {
    std::visit(
        [&](const auto& u) {
          using U = std::decay_t<decltype(u)>;
          if constexpr (std::is_same_v<U, UndoAddVertex> || std::is_same_v<U, UndoEraseVertex>) {
            first_vertex.emplace(u.id, i);
          } else {
            first_edge.emplace(u.id, i);
            if constexpr (std::is_same_v<U, UndoEraseEdge>) first_erase.emplace(u.id, i);
          }
        },
        batch.undo[i]);
  }
  auto edge_of = [](std::uint64_t id, const Edge& e) {
    return Hyperedge{id, e.tails, e.heads, e.weight};
  };
  GraphDelta delta;
  for (const auto& [id, first] : first_edge) {
    EdgeDelta d{id, std::nullopt, std::nullopt};
    const Undo& u = batch.undo[first];
    if (const auto* erased = std::get_if<UndoEraseEdge>(&u)) {
      d.before = edge_of(id, erased->edge);
    } else if (const auto* reweighted = std::get_if<UndoSetWeight>(&u)) {
      auto erase = first_erase.find(id);
      const Edge& shape = erase != first_erase.end()
                              ? std::get<UndoEraseEdge>(batch.undo[erase->second]).edge
                              : edges_.find(id)->second;
      d.before = Hyperedge{id, shape.tails, shape.heads, reweighted->weight};
    }
    if (auto it = edges_.find(id); it != edges_.end()) d.after = edge_of(id, it->second);
    if (d.before != d.after) delta.edges.push_back(std::move(d));
  }
  std::sort(delta.edges.begin(), delta.edges.end(),
            [](const EdgeDelta& a, const EdgeDelta& b) { return a.id < b.id; });
  for (const auto& [id, first] : first_vertex) {
    const bool existed = std::holds_alternative<UndoEraseVertex>(batch.undo[first]);
    const bool exists = vertices_.contains(id);
    if (!existed && exists) delta.added_vertices.push_back(id);
    if (existed && !exists) delta.removed_vertices.push_back(id);
  }
  std::sort(delta.added_vertices.begin(), delta.added_vertices.end());
  std::sort(delta.removed_vertices.begin(), delta.removed_vertices.end());
  return delta;
}

std::string GraphState::EditContext::field(const char* name) const {
  return absl::StrCat("edits[", index, "].", name);
}

absl::Status GraphState::require_room(const std::string& field, std::size_t new_vertices,
                                      std::size_t new_edges, const GraphLimits& limits) const {
  if (new_vertices > 0 && vertices_.size() + new_vertices > limits.max_vertices) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, ": the graph would have more than ", limits.max_vertices, " vertices"));
  }
  if (new_edges > 0 && edges_.size() + new_edges > limits.max_edges) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, ": the graph would have more than ", limits.max_edges, " edges"));
  }
  return absl::OkStatus();
}

absl::Status GraphState::apply_edit(const EditContext& at, const AddVertex&) {
  GC_RETURN_IF_ERROR(require_room(at.field("add_vertex"), 1, 0, at.limits));
  at.result.vertex_id = next_vertex_id_++;
  add_vertex(at.batch, at.result.vertex_id);
  return absl::OkStatus();
}

absl::Status GraphState::apply_edit(const EditContext& at, const DeleteVertex& edit) {
  const std::uint64_t v = edit.vertex_id;
  auto vit = vertices_.find(v);
  if (vit == vertices_.end()) {
    return absl::NotFoundError(
        absl::StrCat(at.field("delete_vertex.vertex_id"), " = ", v, ": no such vertex"));
  }
  // Only the incident edges are visited (a self-loop appears in both sets: once is enough).
  std::vector<std::uint64_t> incident(vit->second.tail_of.begin(), vit->second.tail_of.end());
  incident.insert(incident.end(), vit->second.head_of.begin(), vit->second.head_of.end());
  std::sort(incident.begin(), incident.end());
  incident.erase(std::unique(incident.begin(), incident.end()), incident.end());
  for (std::uint64_t e : incident) {
    Edge edge = edges_.find(e)->second;
    std::erase(edge.tails, v);
    std::erase(edge.heads, v);
    erase_edge(at.batch, e);
    if (edge.tails.empty() || edge.heads.empty()) {
      at.result.deleted_edge_ids.push_back(e);
    } else {
      add_edge(at.batch, e, std::move(edge));
    }
  }
  erase_vertex(at.batch, v);
  return absl::OkStatus();
}

absl::Status GraphState::apply_edit(const EditContext& at, const AddEdge& edit) {
  const std::string field = at.field("add_edge");
  if (edit.tails.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ".tails is empty"));
  if (edit.heads.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ".heads is empty"));
  for (const auto& [ids, name] :
       {std::pair{&edit.tails, ".tails"}, std::pair{&edit.heads, ".heads"}}) {
    for (std::size_t j = 0; j < ids->size(); ++j) {
      if (!vertices_.contains((*ids)[j])) {
        return absl::NotFoundError(
            absl::StrCat(field, name, "[", j, "] = ", (*ids)[j], ": no such vertex"));
      }
    }
    if (absl::Status s = check_distinct(*ids, absl::StrCat(field, name)); !s.ok()) return s;
  }
  if (absl::Status s = check_finite(edit.weight, absl::StrCat(field, ".weight")); !s.ok()) {
    return s;
  }
  GC_RETURN_IF_ERROR(require_room(field, 0, 1, at.limits));
  at.result.edge_id = next_edge_id_++;
  add_edge(at.batch, at.result.edge_id, Edge{edit.tails, edit.heads, edit.weight});
  return absl::OkStatus();
}

absl::Status GraphState::require_edge(std::uint64_t edge_id, const std::string& field) const {
  if (!edges_.contains(edge_id)) {
    return absl::NotFoundError(absl::StrCat(field, " = ", edge_id, ": no such edge"));
  }
  return absl::OkStatus();
}

absl::Status GraphState::apply_edit(const EditContext& at, const DeleteEdge& edit) {
  GC_RETURN_IF_ERROR(require_edge(edit.edge_id, at.field("delete_edge.edge_id")));
  erase_edge(at.batch, edit.edge_id);
  return absl::OkStatus();
}

absl::Status GraphState::apply_edit(const EditContext& at, const SetWeight& edit) {
  GC_RETURN_IF_ERROR(require_edge(edit.edge_id, at.field("set_weight.edge_id")));
  GC_RETURN_IF_ERROR(check_finite(edit.weight, at.field("set_weight.weight")));
  set_weight(at.batch, edit.edge_id, edit.weight);
  return absl::OkStatus();
}

absl::Status GraphState::apply_edit(const EditContext& at, const DecomposeVertex& edit) {
  const std::string field = at.field("decompose_vertex");
  const std::uint64_t v = edit.vertex_id;
  auto vit = vertices_.find(v);
  if (vit == vertices_.end()) {
    return absl::NotFoundError(absl::StrCat(field, ".vertex_id = ", v, ": no such vertex"));
  }
  const Vertex& vertex = vit->second;
  for (std::size_t j = 0; j < edit.move_edge_ids.size(); ++j) {
    const std::uint64_t e = edit.move_edge_ids[j];
    GC_RETURN_IF_ERROR(require_edge(e, absl::StrCat(field, ".move_edge_ids[", j, "]")));
    if (!vertex.tail_of.contains(e) && !vertex.head_of.contains(e)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".move_edge_ids[", j, "] = ", e, ": edge ", e, " is not incident to vertex ", v));
    }
  }
  if (absl::Status s = check_distinct(edit.move_edge_ids, absl::StrCat(field, ".move_edge_ids"));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = check_finite(edit.joining_weight, absl::StrCat(field, ".joining_weight"));
      !s.ok()) {
    return s;
  }
  GC_RETURN_IF_ERROR(require_room(field, 1, 1, at.limits));

  const std::uint64_t w = next_vertex_id_++;
  add_vertex(at.batch, w);  // invalidates vit and vertex
  for (std::uint64_t e : edit.move_edge_ids) {
    Edge edge = edges_.find(e)->second;
    std::replace(edge.tails.begin(), edge.tails.end(), v, w);
    std::replace(edge.heads.begin(), edge.heads.end(), v, w);
    erase_edge(at.batch, e);
    add_edge(at.batch, e, std::move(edge));
  }
  const std::uint64_t joining = next_edge_id_++;
  add_edge(at.batch, joining, Edge{{v}, {w}, edit.joining_weight});
  at.result.vertex_id = w;
  at.result.edge_id = joining;
  return absl::OkStatus();
}

// ---- invariants -------------------------------------------------------------------------

absl::Status GraphState::check_invariants() const {
  std::uint64_t incidences = 0;
  for (const auto& [id, edge] : edges_) {
    if (id >= next_edge_id_) {
      return absl::InternalError(
          absl::StrCat("edge ", id, " is not below the next edge id ", next_edge_id_));
    }
    if (edge.tails.empty() || edge.heads.empty()) {
      return absl::InternalError(absl::StrCat("edge ", id, " has no tails or no heads"));
    }
    for (const auto& [ids, tail] : {std::pair{&edge.tails, true}, std::pair{&edge.heads, false}}) {
      for (std::uint64_t v : *ids) {
        auto it = vertices_.find(v);
        if (it == vertices_.end()) {
          return absl::InternalError(absl::StrCat("edge ", id, " names missing vertex ", v));
        }
        const auto& set = tail ? it->second.tail_of : it->second.head_of;
        if (!set.contains(id)) {
          return absl::InternalError(absl::StrCat("vertex ", v, " does not list edge ", id,
                                                  tail ? " as tail" : " as head"));
        }
        ++incidences;
      }
    }
  }
  std::uint64_t listed = 0;
  for (const auto& [id, vertex] : vertices_) {
    if (id >= next_vertex_id_) {
      return absl::InternalError(
          absl::StrCat("vertex ", id, " is not below the next vertex id ", next_vertex_id_));
    }
    listed += vertex.tail_of.size() + vertex.head_of.size();
  }
  if (listed != incidences) {
    return absl::InternalError(
        absl::StrCat("vertices list ", listed, " incidences, edges have ", incidences));
  }
  return absl::OkStatus();
}

}  // namespace gcompute::server
