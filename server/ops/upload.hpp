// SPDX-License-Identifier: Apache-2.0
// A chunked upload of a server-resident matrix: quota reserved from the header, chunks staged
// as they arrive (on the CUDA backend straight on to the device), overlaps and gaps refused.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/backend.hpp"
#include "ops/caller.hpp"
#include "ops/limits.hpp"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server::ops {

/// The header of an upload as received.
struct UploadHeader {
  std::int64_t batch = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  DType dtype = DType::kF32;
  std::int64_t ttl_seconds = 0;
};

/// Tracks which byte ranges of an upload have arrived, to refuse overlaps and find gaps.
class Coverage {
 public:
  /// False when [begin, end) overlaps a range already received.
  bool add(std::uint64_t begin, std::uint64_t end);
  /// The first missing byte offset below `total`, or total when complete.
  std::uint64_t first_gap(std::uint64_t total) const;

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;  // begin -> end, disjoint, non-adjacent
};

class UploadSession {
 public:
  /// Checks the header, reserves the matrix's bytes in the store and starts the backend's sink.
  static absl::StatusOr<std::unique_ptr<UploadSession>> begin(const UploadHeader& header,
                                                              MatrixStore& store, Backend& backend,
                                                              const Limits& limits,
                                                              const Caller& caller);

  /// Bytes [offset, offset + size) of the matrix, in pieces whose sizes add up to `size`.
  /// INVALID_ARGUMENT past the end or over data already received.
  absl::Status write(std::uint64_t offset, std::uint64_t size, BytePieces pieces);

  /// Stores the matrix once every byte arrived (INVALID_ARGUMENT naming the first gap).
  absl::StatusOr<StoredMatrixInfo> finish();

  const MatrixDesc& desc() const { return desc_; }

 private:
  UploadSession() = default;
  MatrixStore* store_ = nullptr;
  MatrixDesc desc_;
  absl::Duration ttl_;
  MatrixStore::Reservation reservation_;
  std::unique_ptr<UploadSink> sink_;
  Coverage coverage_;
};

}  // namespace gcompute::server::ops
