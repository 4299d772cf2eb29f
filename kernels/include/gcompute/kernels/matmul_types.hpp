// SPDX-License-Identifier: Apache-2.0
// Matrix multiply: C = alpha * op(A) * op(B) + beta * C, batched, row-major.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "gcompute/kernels/dtype.hpp"
#include "gcompute/kernels/enum_table.hpp"

namespace gcompute::kernels {

/// Arithmetic used for the product. Inputs are read in their dtype, converted to this
/// precision for the multiplications, and accumulated in f32 (f64 for kF64).
///   f32 operands: kF32 (default), kTF32, kBF16 or kF16 (inputs rounded; output stays f32)
///   f64 operands: kF64 only; f16 operands: kF16 only; bf16 operands: kBF16 only.
enum class Precision : std::uint8_t { kDefault, kF32, kF64, kTF32, kBF16, kF16 };

constexpr const char* precision_name(Precision p) {
  return enum_name<Precision::kF16>(p, {"default", "f32", "f64", "tf32", "bf16", "f16"});
}

/// Shape and options of a (batched) product. Row-major storage:
///   A is m x k (k x m when transpose_a), B is k x n (n x k when transpose_b), C is m x n.
/// A, B and C share `dtype`. Batches are contiguous; a_batch or b_batch may be 1 to broadcast
/// that operand over the batch (batch = max of the two). C is read only when beta != 0.
struct MatmulShape {
  std::int64_t batch = 1;
  std::int64_t a_batch = 1;
  std::int64_t b_batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  bool transpose_a = false;
  bool transpose_b = false;
  DType dtype = DType::kF32;
  Precision precision = Precision::kDefault;
  double alpha = 1.0;
  double beta = 0.0;
};

/// The precision actually used for `dtype` and the requested one (kDefault resolved), or
/// INVALID_ARGUMENT naming the incompatible pair ("precision f64 needs f64 operands, got f32").
absl::StatusOr<Precision> resolve_precision(DType dtype, Precision requested);

/// INVALID_ARGUMENT for negative sizes, a dtype matmul does not take (i32), batch sizes that
/// neither match nor broadcast, or an incompatible precision.
absl::Status validate(const MatmulShape& shape);

}  // namespace gcompute::kernels
