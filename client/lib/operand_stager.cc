// SPDX-License-Identifier: Apache-2.0
#include "operand_stager.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "proto_convert.hpp"

namespace gcompute::client {

uint64_t effective_inline_limit(const ClientOptions& options) {
  if (options.inline_limit_bytes != 0) return options.inline_limit_bytes;
  return std::min<uint64_t>(options.max_message_bytes / 2, 64 * kMiB);
}

OperandStager::~OperandStager() {
  const absl::Time cleanup = absl::Now() + kCleanupTimeout;
  for (const MatrixRef& ref : uploaded_) (void)delete_stored_matrix(target_.replica, ref, cleanup);
}

void OperandStager::add(const Operand& operand, std::function<pb::Matrix*()> as_matrix,
                        std::function<pb::MatrixRef*()> as_ref) {
  slots_.push_back(Slot{&operand, std::move(as_matrix), std::move(as_ref)});
}

void OperandStager::add(const Operand& operand, pb::Operand* field) {
  add(
      operand, [field] { return field->mutable_inline_(); },
      [field] { return field->mutable_ref(); });
}

void OperandStager::add_graph(const ApspGraph& graph, pb::ApspRequest* request) {
  if (const auto* dense = std::get_if<Operand>(&graph.source)) {
    add(
        *dense, [request] { return request->mutable_dense(); },
        [request] { return request->mutable_dense_ref(); });
  } else if (const auto* edges = std::get_if<EdgeList>(&graph.source)) {
    to_proto(*edges, request->mutable_edges());
  } else {
    request->set_graph_id(std::get<std::string>(graph.source));
  }
}

absl::Status OperandStager::place() {
  uint64_t inline_bytes = 0;
  std::vector<Slot*> host;
  for (Slot& s : slots_) {
    if (const MatrixRef* ref = s.operand->ref()) {
      s.as_ref()->set_id(ref->id);
    } else {
      inline_bytes += s.operand->matrix()->data.size();
      host.push_back(&s);
    }
  }
  std::sort(host.begin(), host.end(), [](const Slot* a, const Slot* b) {
    return a->operand->matrix()->data.size() > b->operand->matrix()->data.size();
  });
  for (Slot* s : host) {
    const HostMatrix& m = *s->operand->matrix();
    if (inline_bytes > inline_limit_bytes_) {
      absl::StatusOr<StoredMatrix> stored = upload_in_chunks(target_, m, 0);
      if (!stored.ok()) return stored.status();
      uploaded_.push_back(stored->ref);
      pb::MatrixRef* ref = s->as_ref();
      ref->set_id(stored->ref.id);
      // Gone from the store (and its quota) when the server reads it, before the operation
      // runs: a job's outputs never wait on this client's DeleteMatrix.
      ref->set_release(true);
      inline_bytes -= m.data.size();
    } else {
      to_proto(m, s->as_matrix());
    }
  }
  return absl::OkStatus();
}

}  // namespace gcompute::client
