// SPDX-License-Identifier: Apache-2.0
// Places the operands of one request on one replica: inline, or, when the inline bytes would
// exceed the limit, uploaded (largest first) and referenced.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "gcompute/client/client.hpp"
#include "gcompute/v1/service.pb.h"
#include "matrix_transfer.hpp"

namespace gcompute::client {

class OperandStager {
 public:
  OperandStager(const TransferTarget& target, uint64_t inline_limit_bytes)
      : target_(target), inline_limit_bytes_(inline_limit_bytes) {}
  /// Deletes the matrices place() uploaded, unless the server read (and so released) them:
  /// they served this request only.
  ~OperandStager();
  OperandStager(const OperandStager&) = delete;
  OperandStager& operator=(const OperandStager&) = delete;

  /// Registers an operand to be written through exactly one of `as_matrix` / `as_ref`, which
  /// are called only for the form chosen (they may set a oneof).
  void add(const Operand& operand, std::function<::gcompute::v1::Matrix*()> as_matrix,
           std::function<::gcompute::v1::MatrixRef*()> as_ref);
  /// Registers an operand for an Operand field (inline_ or ref).
  void add(const Operand& operand, ::gcompute::v1::Operand* field);
  /// Registers the graph of an APSP request: a dense operand (dense or dense_ref); edge lists
  /// and graph ids are written at once.
  void add_graph(const ApspGraph& graph, ::gcompute::v1::ApspRequest* request);

  /// Writes every registered operand, uploading the largest host matrices first while the
  /// inline bytes exceed the limit.
  absl::Status place();
  /// The request succeeded, so the server has read every operand: the uploads, sent with
  /// MatrixRef.release, are gone already.
  void uploads_released() { uploaded_.clear(); }

 private:
  struct Slot {
    const Operand* operand;
    std::function<::gcompute::v1::Matrix*()> as_matrix;
    std::function<::gcompute::v1::MatrixRef*()> as_ref;
  };
  TransferTarget target_;
  uint64_t inline_limit_bytes_;
  std::vector<Slot> slots_;
  std::vector<MatrixRef> uploaded_;
};

}  // namespace gcompute::client
