// SPDX-License-Identifier: Apache-2.0
// How the graph store tells the rest of the server about changes. Two roles:
//  - the journal (the write-ahead log) sees each change BEFORE it becomes visible and may refuse
//    it (the change is then rolled back and the caller gets the journal's status);
//  - subscribers (the device mirror, the APSP cache) see each committed change AFTER it became
//    visible, once, as its net effect (GraphDelta), so nobody interprets the six edit kinds a
//    second time. They are called under the graph's lock, in commit order per graph, and
//    cannot fail a change.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "store/graphs/graph_model.hpp"

namespace gcompute::server {

/// Sees every change before it becomes visible. Calls for one graph come in the order the
/// changes take effect (under that graph's lock); calls for different graphs may come
/// concurrently. A non-OK status cancels the change. Must not call back into the store.
class GraphJournal {
 public:
  virtual ~GraphJournal() = default;
  /// A graph is about to be created with these contents (version 1). Holds the store mutex.
  virtual absl::Status on_create(const GraphSnapshot& graph) = 0;
  /// A batch has been applied in memory and is about to be committed at result.version.
  /// Replaying the edits in order on the previous version reproduces this one exactly.
  virtual absl::Status on_apply(const std::string& graph_id, std::span<const Edit> edits,
                                const ApplyResult& result) = 0;
  /// A graph is about to be removed.
  virtual absl::Status on_remove(const std::string& graph_id) = 0;
};

/// One committed change, as subscribers see it.
struct GraphChange {
  enum class Kind { kCreate, kApply, kRemove };
  Kind kind = Kind::kCreate;
  const std::string& graph_id;
  std::uint64_t version = 0;             ///< after the change (kCreate: 1; kRemove: 0)
  const GraphSnapshot* graph = nullptr;  ///< kCreate: the new graph
  const GraphDelta* delta = nullptr;     ///< kApply: what the batch changed
};

/// Hears committed changes (see the file comment). Implementations must be thread-safe and
/// must not call back into the store.
class GraphSubscriber {
 public:
  virtual ~GraphSubscriber() = default;
  virtual void on_change(const GraphChange& change) = 0;
};

}  // namespace gcompute::server
