// SPDX-License-Identifier: Apache-2.0
#include "operand_stager.hpp"

#include <algorithm>
#include <cstring>
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
  if (arena_ != nullptr) shared_.pool->release(shared_.replica_index, std::move(arena_));
}

void OperandStager::add(const Operand& operand, std::function<pb::Matrix*()> as_matrix,
                        std::function<pb::MatrixRef*()> as_ref,
                        std::function<pb::SharedMemoryRef*()> as_shared) {
  slots_.push_back(Slot{&operand, std::move(as_matrix), std::move(as_ref), std::move(as_shared)});
}

void OperandStager::add(const Operand& operand, pb::Operand* field) {
  add(
      operand, [field] { return field->mutable_inline_(); },
      [field] { return field->mutable_ref(); }, [field] { return field->mutable_shared_memory(); });
}

void OperandStager::expect_outputs(uint64_t bytes, pb::OutputOptions* output) {
  output_bytes_ = bytes;
  output_ = output;
}

bool OperandStager::place_in_shared_memory(const std::vector<Slot*>& host, uint64_t host_bytes) {
  if (shared_.pool == nullptr || host.empty() || host_bytes < shared_.min_bytes) return false;
  uint64_t needed = 0;
  for (const Slot* s : host) {
    // A matrix whose bytes do not match its shape goes inline, for the server to name.
    const HostMatrix& m = *s->operand->matrix();
    if (!s->as_shared || m.data.size() != m.expected_bytes()) return false;
    needed += shared_memory_slot_bytes(s->operand->matrix()->data.size());
  }
  const uint64_t outputs_at = needed;
  if (output_ != nullptr) needed += output_bytes_;
  arena_ = shared_.pool->acquire(target_.replica, shared_.replica_index, needed, target_.deadline);
  if (arena_ == nullptr) return false;
  uint64_t at = 0;
  for (const Slot* s : host) {
    const HostMatrix& m = *s->operand->matrix();
    std::memcpy(arena_->data() + at, m.data.data(), m.data.size());
    pb::SharedMemoryRef* ref = s->as_shared();
    ref->set_region_id(arena_->region_id());
    ref->set_offset(at);
    ref->set_batch(m.batch);
    ref->set_rows(m.rows);
    ref->set_cols(m.cols);
    ref->set_dtype(static_cast<pb::DType>(m.dtype));
    at += shared_memory_slot_bytes(m.data.size());
  }
  if (output_ != nullptr) {
    output_->set_placement(pb::OutputOptions::PLACEMENT_SHARED_MEMORY);
    output_->mutable_shared_memory()->set_region_id(arena_->region_id());
    output_->mutable_shared_memory()->set_offset(outputs_at);
  }
  return true;
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
  if (place_in_shared_memory(host, inline_bytes)) return absl::OkStatus();
  std::sort(host.begin(), host.end(), [](const Slot* a, const Slot* b) {
    return a->operand->matrix()->data.size() > b->operand->matrix()->data.size();
  });
  for (Slot* s : host) {
    const HostMatrix& m = *s->operand->matrix();
    // A matrix whose bytes do not match its shape goes inline, for the server to name.
    const bool streamable = m.data.size() == m.expected_bytes();
    if (inline_bytes > inline_limit_bytes_ || (streamable && m.data.size() > target_.chunk_bytes)) {
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
  if (stream_results_ && output_ != nullptr && output_bytes_ > target_.chunk_bytes &&
      output_->placement() == pb::OutputOptions::PLACEMENT_AUTO) {
    output_->set_placement(pb::OutputOptions::PLACEMENT_STORED);
    stores_results_ = true;
  }
  return absl::OkStatus();
}

}  // namespace gcompute::client
