// SPDX-License-Identifier: Apache-2.0
// Turning request inputs into matrices: shapes checked against the limits before anything is
// allocated, byte lengths checked, stored refs resolved. Messages name the field and values.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/matrix.hpp"
#include "engine/backend.hpp"
#include "ops/caller.hpp"
#include "ops/limits.hpp"
#include "ops/op_env.hpp"
#include "ops/requests.hpp"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server::ops {

/// Validates a shape: non-negative dimensions (batch 0 means 1), a batch within --max-batch
/// and an element count within --max-matrix-elements (RESOURCE_EXHAUSTED past either).
absl::StatusOr<MatrixDesc> check_desc(std::int64_t batch, std::int64_t rows, std::int64_t cols,
                                      DType dtype, const std::string& field, const Limits& limits);

/// Validates an inline matrix (shape, then byte length) and takes its bytes (no copy).
absl::StatusOr<Matrix> take_matrix(MatrixInput input, const std::string& field,
                                   const Limits& limits);

/// Bytes of a shared-memory region that an operation reads.
struct RegionRead {
  std::shared_ptr<const SharedRegion> region;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/// An operand, inline, from the store (the caller's matrices only; a ref marked release
/// leaves the store as it is read) or a view of the caller's shared memory (bounds checked).
/// INVALID_ARGUMENT when unset. With `read_from`, an operand in a host shared-memory region
/// also tells which bytes of which region it is read from (left empty for any other operand).
absl::StatusOr<Matrix> take_operand(OperandInput input, const std::string& field, const OpEnv& env,
                                    const Caller& caller,
                                    std::optional<RegionRead>* read_from = nullptr);

/// FAILED_PRECONDITION for a shared-memory request to a server started with
/// --shared-memory=false; `field`, when given, leads the message.
absl::Status shared_memory_off(const std::string& field = {});

/// `caller`'s region `id` (NOT_FOUND naming `field` when it has none of that id, or
/// shared_memory_off(field)).
absl::StatusOr<std::shared_ptr<const SharedRegion>> find_region(const OpEnv& env,
                                                                const Caller& caller,
                                                                const std::string& id,
                                                                const std::string& field);

/// FAILED_PRECONDITION naming the first non-finite element of `m` ("a has a non-finite value
/// at row 2, column 0; this operation needs finite input"), scanned where `m` lives.
absl::Status check_finite(Backend& backend, const Matrix& m, const std::string& field);

/// INVALID_ARGUMENT with the message of a failed kernel shape check and the operand the shape
/// came from ("... (a is 3x4 f32)"); OK when the check passed.
absl::Status invalid_for_operand(const absl::Status& check, const std::string& field,
                                 const MatrixDesc& desc);

/// The TTL of stored results (0 selects the store's default).
absl::StatusOr<absl::Duration> output_ttl(const OutputOptions& output, const MatrixStore& store);

}  // namespace gcompute::server::ops
