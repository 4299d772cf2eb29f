// SPDX-License-Identifier: Apache-2.0
// Places the operands of one request on one replica: in shared memory when the replica runs on
// this host and the operands are large enough to gain from it; else inline, or uploaded as a
// chunk stream and referenced (operands of more than one chunk, and the largest others while
// the inline bytes would exceed the limit).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "gcompute/client/client.hpp"
#include "gcompute/v1/service.pb.h"
#include "matrix_transfer.hpp"
#include "shared_memory.hpp"

namespace gcompute::client {

/// Shared memory for one attempt: the pool, the replica's index, and the fewest operand bytes
/// worth it (smaller requests go inline).
struct SharedMemoryUse {
  SharedMemoryPool* pool = nullptr;  ///< null: never
  std::size_t replica_index = 0;
  uint64_t min_bytes = 0;
};

class OperandStager {
 public:
  /// `stream_results`: the results come back in this call's response (not a job's), so those
  /// larger than one chunk are asked for as stored matrices and fetched as a stream.
  OperandStager(const TransferTarget& target, uint64_t inline_limit_bytes,
                SharedMemoryUse shared = {}, bool stream_results = false)
      : target_(target),
        inline_limit_bytes_(inline_limit_bytes),
        shared_(shared),
        stream_results_(stream_results) {}
  /// Deletes the matrices place() uploaded, unless the server read (and so released) them:
  /// they served this request only. Returns the shared-memory arena to the pool.
  ~OperandStager();
  OperandStager(const OperandStager&) = delete;
  OperandStager& operator=(const OperandStager&) = delete;

  /// Registers an operand to be written through exactly one of `as_matrix` / `as_ref` /
  /// `as_shared` (empty: this field cannot name shared memory), which are called only for the
  /// form chosen (they may set a oneof).
  void add(const Operand& operand, std::function<::gcompute::v1::Matrix*()> as_matrix,
           std::function<::gcompute::v1::MatrixRef*()> as_ref,
           std::function<::gcompute::v1::SharedMemoryRef*()> as_shared = {});
  /// Registers an operand for an Operand field (inline_, ref or shared_memory).
  void add(const Operand& operand, ::gcompute::v1::Operand* field);
  /// The request's results need at most `bytes` (their sizes, each rounded up to 256 bytes):
  /// when the operands go through shared memory, `output` asks for the results there too.
  void expect_outputs(uint64_t bytes, ::gcompute::v1::OutputOptions* output);
  /// Registers the graph of an APSP request: a dense operand (dense or dense_ref); edge lists
  /// and graph ids are written at once.
  void add_graph(const ApspGraph& graph, ::gcompute::v1::ApspRequest* request);

  /// Writes every registered operand: through shared memory when it applies; else a host
  /// matrix of more than one chunk is uploaded as a chunk stream (a chunk stream moves bytes at
  /// the wire's speed, where an inline operand is coded by protobuf, copied into and out of one
  /// large message), as are the largest others while the inline bytes exceed the limit. With
  /// stream_results, results expected to exceed one chunk are asked for as stored matrices
  /// (PLACEMENT_STORED, where the caller left AUTO), which the response's reader downloads and
  /// deletes.
  absl::Status place();
  /// Whether place() asked for the results as stored matrices (stream_results).
  bool stores_results() const { return stores_results_; }
  /// The request succeeded, so the server has read every operand: the uploads, sent with
  /// MatrixRef.release, are gone already.
  void uploads_released() { uploaded_.clear(); }

  /// The arena place() put the operands in (results may lie there too), or null.
  const SharedArena* arena() const { return arena_.get(); }
  /// The server refused the arena (it restarted, or the results did not fit): drop it rather
  /// than keep it for later calls.
  void discard_arena() { arena_.reset(); }

 private:
  struct Slot {
    const Operand* operand;
    std::function<::gcompute::v1::Matrix*()> as_matrix;
    std::function<::gcompute::v1::MatrixRef*()> as_ref;
    std::function<::gcompute::v1::SharedMemoryRef*()> as_shared;
  };
  /// Writes the host operands into an arena when shared memory applies; false otherwise.
  bool place_in_shared_memory(const std::vector<Slot*>& host, uint64_t host_bytes);

  TransferTarget target_;
  uint64_t inline_limit_bytes_;
  SharedMemoryUse shared_;
  bool stream_results_;
  bool stores_results_ = false;
  std::vector<Slot> slots_;
  std::vector<MatrixRef> uploaded_;
  uint64_t output_bytes_ = 0;
  ::gcompute::v1::OutputOptions* output_ = nullptr;
  std::unique_ptr<SharedArena> arena_;
};

/// Rounds up to the 256-byte steps in which the server lays results into shared memory.
inline uint64_t shared_memory_slot_bytes(uint64_t bytes) {
  return (bytes + 255) / 256 * 256;
}

}  // namespace gcompute::client
