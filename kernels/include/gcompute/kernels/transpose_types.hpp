// SPDX-License-Identifier: Apache-2.0
// Transpose: out[b][j][i] = in[b][i][j] for every matrix b of a batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

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

/// `f(word)` with `word` an unsigned integer of `element_bytes` bytes (1, 2, 4 or 8), for code
/// templated on the element size; nullopt for any other size.
template <typename F>
auto visit_element_word(std::size_t element_bytes, F&& f)
    -> std::optional<decltype(f(std::uint8_t{}))> {
  switch (element_bytes) {
    case 1:
      return f(std::uint8_t{});
    case 2:
      return f(std::uint16_t{});
    case 4:
      return f(std::uint32_t{});
    case 8:
      return f(std::uint64_t{});
    default:
      return std::nullopt;
  }
}

}  // namespace gcompute::kernels
