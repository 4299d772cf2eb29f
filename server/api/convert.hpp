// SPDX-License-Identifier: Apache-2.0
// Proto <-> engine conversions. Every check here happens before allocation and names the
// field and values in its INVALID_ARGUMENT message.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "api/limits.hpp"
#include "common/matrix.hpp"
#include "engine/backend.hpp"
#include "gcompute/v1/types.pb.h"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server {

absl::StatusOr<DType> decode_dtype(v1::DType dtype, const std::string& field);
v1::DType encode_dtype(DType dtype);

/// Validates a shape: non-negative dims, known dtype, element count within limits.
absl::StatusOr<MatrixDesc> decode_desc(std::int64_t batch, std::int64_t rows, std::int64_t cols,
                                       v1::DType dtype, const std::string& field,
                                       const Limits& limits);

/// Validates `m` (shape and byte length) and moves its bytes out (no copy).
absl::StatusOr<Matrix> take_matrix(v1::Matrix* m, const std::string& field, const Limits& limits);

/// An operand, inline (moved out) or from the store. INVALID_ARGUMENT when unset.
absl::StatusOr<Matrix> take_operand(v1::Operand* op, const std::string& field,
                                    const MatrixStore& store, const Limits& limits);

/// Whether results of `output_bytes` in total will be stored rather than sent inline, so the
/// backend may leave them on the device.
bool results_stay_on_server(const v1::OutputOptions& options, std::uint64_t output_bytes,
                            const Limits& limits);

/// Places results inline or in the store following OutputOptions, keeping the response
/// under the max message size in total.
class ResultPlacer {
 public:
  ResultPlacer(const v1::OutputOptions& options, MatrixStore& store, const Limits& limits,
               Backend& backend);
  /// `field` names the result in errors ("distances").
  absl::Status place(Matrix m, const std::string& field, v1::MatrixResult* out);

 private:
  const v1::OutputOptions& options_;
  MatrixStore& store_;
  Backend& backend_;
  std::uint64_t inline_budget_;
};

void encode_shape(const MatrixDesc& d, v1::MatrixShape* out);
void encode_stored(const StoredMatrixInfo& info, v1::StoredMatrix* out);
void encode_stats(const JobContext& job, double total_seconds, v1::ExecutionStats* out);

/// Index of the first non-finite element of a float matrix, or -1.
std::int64_t first_non_finite(const Matrix& m);

}  // namespace gcompute::server
