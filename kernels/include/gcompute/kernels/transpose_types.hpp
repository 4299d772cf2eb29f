// SPDX-License-Identifier: Apache-2.0
// Transpose: out[b][j][i] = in[b][i][j] for every matrix b of a batch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace gcompute::kernels {

/// Shape of a (batched) transpose. `in` holds batch matrices of rows x cols, row-major and
/// contiguous; `out` receives batch matrices of cols x rows. Any element size of 1, 2, 4 or
/// 8 bytes (the operation only moves bytes). Zero-sized dimensions are valid (nothing to do).
struct TransposeShape {
  std::int64_t batch = 1;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::size_t element_bytes = 4;
};

/// INVALID_ARGUMENT unless dimensions are non-negative and element_bytes is 1, 2, 4 or 8.
absl::Status validate(const TransposeShape& shape);

}  // namespace gcompute::kernels
