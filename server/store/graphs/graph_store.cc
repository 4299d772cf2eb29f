// SPDX-License-Identifier: Apache-2.0
#include "store/graphs/graph_store.hpp"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/quote.hpp"
#include "common/random_id.hpp"

namespace gcompute::server {
namespace {

constexpr std::size_t kMaxGraphIdLength = 128;
constexpr std::size_t kMaxNamespaceLength = 64;

/// A key as messages show it: the graph id its owner knows (without the namespace), quoted.
std::string quote_key(const std::string& key) {
  const std::size_t slash = key.find('/');
  return quote_id(slash == std::string::npos ? key : key.substr(slash + 1));
}

/// The namespace of a key ("" for keys without one).
std::string namespace_of(const std::string& key) {
  const std::size_t slash = key.find('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash);
}

bool is_id_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

absl::Status not_found(const std::string& graph_id) {
  return absl::NotFoundError(absl::StrCat("graph ", quote_key(graph_id), " not found"));
}

/// `s` with the graph named first ("graph 'g': ..."), its code kept.
absl::Status about_graph(const std::string& graph_id, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("graph ", quote_key(graph_id), ": ", s.message()));
}

}  // namespace

GraphStore::GraphStore(Options options) : options_(std::move(options)) {}

std::string GraphStore::key(const std::string& ns, const std::string& graph_id) {
  return ns.empty() ? graph_id : absl::StrCat(ns, "/", graph_id);
}

std::string GraphStore::graph_id_of(const std::string& key) {
  const std::size_t slash = key.find('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

absl::Status GraphStore::validate_key(const std::string& key) {
  const std::string ns = namespace_of(key);
  if (!ns.empty() || key.find('/') != std::string::npos) {
    if (ns.empty() || ns.size() > kMaxNamespaceLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph key ", quote_id(key), " has an empty or overlong namespace"));
    }
    for (char c : ns) {
      if (!is_id_char(c)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph key ", quote_id(key), ": namespace has ", quote_id(std::string(1, c))));
      }
    }
  }
  return validate_graph_id(graph_id_of(key));
}

absl::Status GraphStore::validate_graph_id(const std::string& graph_id) {
  if (graph_id.empty() || graph_id.size() > kMaxGraphIdLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph_id ", quote_key(graph_id), " has ", graph_id.size(),
                     " characters; it must have 1 to ", kMaxGraphIdLength));
  }
  for (std::size_t i = 0; i < graph_id.size(); ++i) {
    if (!is_id_char(graph_id[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph_id ", quote_key(graph_id), " has ", quote_id(std::string(1, graph_id[i])),
          " at position ", i, "; only [A-Za-z0-9._-] are allowed"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<GraphInfo> GraphStore::create(std::string graph_id, std::uint64_t num_vertices,
                                             std::vector<Hyperedge> edges,
                                             const CreateOptions& create) {
  if (!graph_id.empty()) {
    if (absl::Status s = validate_key(graph_id); !s.ok()) return s;
    if (namespace_of(graph_id) != create.ns) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph_id ", quote_id(graph_id), " is outside the caller's namespace"));
    }
  }
  // Validation and construction, the expensive part, happen outside every lock.
  absl::StatusOr<GraphState> state =
      GraphState::create(num_vertices, std::move(edges), options_.limits);
  if (!state.ok()) return state.status();

  absl::MutexLock lock(&mu_);
  if (graph_id.empty()) {
    do {
      graph_id = key(create.ns, random_id("g-"));
    } while (graphs_.contains(graph_id));
  } else if (graphs_.contains(graph_id)) {
    return absl::AlreadyExistsError(absl::StrCat("graph ", quote_key(graph_id), " already exists"));
  }
  if (graphs_.size() >= options_.max_graphs) {
    return absl::ResourceExhaustedError(absl::StrCat("the store already holds ", graphs_.size(),
                                                     " graphs, the limit (--max-graphs)"));
  }
  if (create.max_graphs_in_ns != kUnlimited) {
    std::uint64_t mine = 0;
    for (const auto& [k, entry] : graphs_) mine += namespace_of(k) == create.ns ? 1 : 0;
    if (mine >= create.max_graphs_in_ns) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "tenant ", quote_id(create.ns), " already holds ", mine, " graphs, its quota (graphs)"));
    }
  }
  std::optional<GraphSnapshot> snapshot;
  if (options_.journal != nullptr || !options_.subscribers.empty()) {
    snapshot = state->snapshot(graph_id);
  }
  if (options_.journal != nullptr) {
    if (absl::Status s = options_.journal->on_create(*snapshot); !s.ok()) return s;
  }
  auto entry = std::make_shared<Entry>();
  GraphInfo info = state->info(graph_id);
  // Nobody else can see the entry yet; its lock orders the announcement before any batch.
  absl::MutexLock entry_lock(&entry->mu);
  entry->state = *std::move(state);
  graphs_.emplace(graph_id, entry);
  if (snapshot) {
    publish(GraphChange{GraphChange::Kind::kCreate, graph_id, info.version, &*snapshot, nullptr});
  }
  return info;
}

absl::StatusOr<std::shared_ptr<GraphStore::Entry>> GraphStore::find(
    const std::string& graph_id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = graphs_.find(graph_id);
  if (it == graphs_.end()) return not_found(graph_id);
  return it->second;
}

template <typename Result, typename Read>
absl::StatusOr<Result> GraphStore::read_state(const std::string& graph_id, Read read) const {
  absl::StatusOr<std::shared_ptr<Entry>> entry = find(graph_id);
  if (!entry.ok()) return entry.status();
  absl::ReaderMutexLock lock(&(*entry)->mu);
  if ((*entry)->removed) return not_found(graph_id);
  return read((*entry)->state);
}

absl::StatusOr<GraphSnapshot> GraphStore::get(const std::string& graph_id) const {
  return read_state<GraphSnapshot>(
      graph_id, [&](const GraphState& state) { return state.snapshot(graph_id); });
}

absl::StatusOr<GraphInfo> GraphStore::info(const std::string& graph_id) const {
  return read_state<GraphInfo>(graph_id,
                               [&](const GraphState& state) { return state.info(graph_id); });
}

std::vector<GraphInfo> GraphStore::list(const std::string& ns) const {
  std::vector<std::pair<std::string, std::shared_ptr<Entry>>> entries;
  {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [k, entry] : graphs_) {
      if (namespace_of(k) == ns) entries.emplace_back(k, entry);
    }
  }
  // Graph locks are taken one at a time, after the store mutex is released, so a listing
  // never stalls lookups while it waits for a batch to finish.
  std::vector<GraphInfo> out;
  out.reserve(entries.size());
  for (const auto& [id, entry] : entries) {
    absl::ReaderMutexLock lock(&entry->mu);
    if (!entry->removed) out.push_back(entry->state.info(id));
  }
  return out;
}

absl::Status GraphStore::remove(const std::string& graph_id) {
  absl::MutexLock lock(&mu_);
  auto it = graphs_.find(graph_id);
  if (it == graphs_.end()) return not_found(graph_id);
  // Waits for a batch in progress on this graph, so the removal is ordered after it.
  std::shared_ptr<Entry> entry = it->second;
  absl::MutexLock entry_lock(&entry->mu);
  if (options_.journal != nullptr) {
    if (absl::Status s = options_.journal->on_remove(graph_id); !s.ok()) return s;
  }
  entry->removed = true;
  graphs_.erase(it);
  publish(GraphChange{GraphChange::Kind::kRemove, graph_id, 0, nullptr, nullptr});
  return absl::OkStatus();
}

absl::StatusOr<ApplyResult> GraphStore::apply(const std::string& graph_id,
                                              std::optional<std::uint64_t> expected_version,
                                              std::span<const Edit> edits) {
  absl::StatusOr<std::shared_ptr<Entry>> found = find(graph_id);
  if (!found.ok()) return found.status();
  Entry& entry = **found;
  absl::MutexLock lock(&entry.mu);
  if (entry.removed) return not_found(graph_id);
  if (expected_version.has_value() && *expected_version != entry.state.version()) {
    return absl::AbortedError(absl::StrCat("graph ", quote_key(graph_id), " has version ",
                                           entry.state.version(), ", expected ",
                                           *expected_version));
  }
  GraphDelta delta;
  GraphDelta* wanted = options_.subscribers.empty() ? nullptr : &delta;
  absl::StatusOr<ApplyResult> result = entry.state.apply(
      edits, options_.limits,
      [&](const ApplyResult& r) {
        return options_.journal == nullptr ? absl::OkStatus()
                                           : options_.journal->on_apply(graph_id, edits, r);
      },
      wanted);
  if (result.ok() && wanted != nullptr && !edits.empty()) {
    publish(GraphChange{GraphChange::Kind::kApply, graph_id, result->version, nullptr, &delta});
  }
  return result;
}

void GraphStore::publish(const GraphChange& change) const {
  for (GraphSubscriber* s : options_.subscribers) s->on_change(change);
}

absl::StatusOr<DenseGraph> GraphStore::to_dense(const std::string& graph_id, kernels::DType dtype,
                                                std::uint64_t max_elements) const {
  return read_state<DenseGraph>(graph_id, [&](const GraphState& state) {
    absl::StatusOr<DenseGraph> dense = state.to_dense(dtype, max_elements);
    if (!dense.ok()) return absl::StatusOr<DenseGraph>(about_graph(graph_id, dense.status()));
    return dense;
  });
}

absl::StatusOr<CsrGraph> GraphStore::to_csr(const std::string& graph_id,
                                            std::uint64_t max_edges) const {
  return read_state<CsrGraph>(graph_id, [&](const GraphState& state) {
    absl::StatusOr<CsrGraph> csr = state.to_csr(max_edges);
    if (!csr.ok()) return absl::StatusOr<CsrGraph>(about_graph(graph_id, csr.status()));
    return csr;
  });
}

absl::Status GraphStore::restore(const GraphImage& image) {
  const std::string& graph_id = image.graph.info.graph_id;
  if (absl::Status s = validate_key(graph_id); !s.ok()) return s;
  absl::StatusOr<GraphState> state = GraphState::restore(image, options_.limits);
  if (!state.ok()) return about_graph(graph_id, state.status());
  absl::MutexLock lock(&mu_);
  if (graphs_.contains(graph_id)) {
    return absl::AlreadyExistsError(absl::StrCat("graph ", quote_key(graph_id), " already exists"));
  }
  auto entry = std::make_shared<Entry>();
  {
    absl::MutexLock entry_lock(&entry->mu);
    entry->state = *std::move(state);
  }
  graphs_.emplace(graph_id, std::move(entry));
  return absl::OkStatus();
}

absl::Status GraphStore::checkpoint(
    absl::FunctionRef<absl::Status(const std::vector<std::pair<std::string, const GraphState*>>&)>
        fn) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // Lock order as everywhere: the store mutex, then graph mutexes. A batch in progress holds
  // its graph's mutex until it has committed, so once every graph mutex is held shared,
  // nothing is half-done.
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::pair<std::string, const GraphState*>> graphs;
  graphs.reserve(graphs_.size());
  for (const auto& [id, entry] : graphs_) {
    entry->mu.ReaderLock();
    graphs.emplace_back(id, &entry->state);
  }
  absl::Status status = fn(graphs);
  for (const auto& [id, entry] : graphs_) entry->mu.ReaderUnlock();
  return status;
}

std::size_t GraphStore::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return graphs_.size();
}

absl::Status GraphStore::check_invariants() const {
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [id, entry] : graphs_) {
    absl::ReaderMutexLock entry_lock(&entry->mu);
    if (absl::Status s = entry->state.check_invariants(); !s.ok()) return about_graph(id, s);
  }
  return absl::OkStatus();
}

}  // namespace gcompute::server
