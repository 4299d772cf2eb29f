// SPDX-License-Identifier: Apache-2.0
// The one placement decision of an operation: which results go inline in the response, which
// are stored on the server and which are written into the caller's shared memory. Made once the
// result shapes are known and before the backend runs, so the backend can leave stored results on
// the device, an inline result too large for a response fails before any work, and stored results
// have their quota reserved up front.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/backend.hpp"
#include "ops/caller.hpp"
#include "ops/inputs.hpp"
#include "ops/limits.hpp"
#include "ops/op_env.hpp"
#include "ops/requests.hpp"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server::ops {

class ResultPlan {
 public:
  /// A result the operation will produce, in response order.
  struct Output {
    MatrixDesc desc;
    std::string field;  ///< names it in messages ("distances")
  };

  /// AUTO: each result inline while the response stays under the max message size, the rest
  /// stored. INLINE: all inline, else RESOURCE_EXHAUSTED naming the result. STORED: all
  /// stored. Stored results reserve their quota now (RESOURCE_EXHAUSTED when over it).
  /// SHARED_MEMORY: one after another in the caller's region from the given offset, each at a
  /// multiple of kSharedMemoryAlignment; INVALID_ARGUMENT now when they do not fit.
  static absl::StatusOr<ResultPlan> make(const OutputOptions& options, std::vector<Output> outputs,
                                         const OpEnv& env, const Limits& limits,
                                         const Caller& caller);

  /// The bytes of all `outputs` together.
  static std::uint64_t total_bytes(const std::vector<Output>& outputs);

  /// Where each result written to shared memory starts: a multiple of this many bytes.
  static constexpr std::uint64_t kSharedMemoryAlignment = 256;

  /// Whether any result stays out of the response (stored, or written into shared memory):
  /// the backend may then leave results on the device and let place() copy them from there.
  bool keeps_any() const { return keeps_any_; }

  /// Places result `index` (as listed in make()) as planned: host bytes for an inline result
  /// (copied back from the device if needed), a store entry for a stored one, the bytes
  /// written into the region for a shared-memory one.
  absl::StatusOr<ResultMatrix> place(std::size_t index, Matrix m, Backend& backend);

  /// Where result `index` (of `desc`) goes when that is page-locked host memory (a pinned
  /// shared-memory region), its span checked again now, for a backend to write while it still
  /// reads its operands; null for any other placement, and where the destination may overlap
  /// one of `reads` (the operands then have to be read whole first).
  absl::StatusOr<std::byte*> pinned_host_destination(std::size_t index, const MatrixDesc& desc,
                                                     std::span<const RegionRead> reads) const;
  /// Result `index` (of `desc`) once written at pinned_host_destination().
  ResultMatrix written_in_place(std::size_t index, const MatrixDesc& desc) const;

 private:
  struct Slot {
    Output output;
    bool stored = false;
    MatrixStore::Reservation reservation;
    std::shared_ptr<const SharedRegion> region;  ///< set for a shared-memory result
    std::uint64_t region_offset = 0;
  };
  /// The first byte of a shared-memory slot's result, checked against the region as it is now
  /// (the object may have shrunk since the plan was made).
  static absl::StatusOr<std::byte*> region_destination(const Slot& slot, const MatrixDesc& desc);

  MatrixStore* store_ = nullptr;
  absl::Duration ttl_;
  std::vector<Slot> slots_;
  bool keeps_any_ = false;
};

}  // namespace gcompute::server::ops
