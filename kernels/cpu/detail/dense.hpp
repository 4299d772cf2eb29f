// SPDX-License-Identifier: Apache-2.0
// Small dense-matrix helpers of the LAPACK-based CPU kernels: transposes between the row-major
// interface and LAPACK's column-major storage, identities, input scans.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace gcompute::kernels::cpu::detail {

constexpr std::int64_t kTransposeTile = 32;

/// dst (cols x rows) = src (rows x cols) transposed, both densely stored, cache-blocked.
/// Reading src as column-major instead, this turns a row-major matrix into a column-major
/// one of the same shape, or back.
template <typename T>
void transpose(const T* src, T* dst, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += kTransposeTile) {
    const std::int64_t i1 = std::min(rows, i0 + kTransposeTile);
    for (std::int64_t j0 = 0; j0 < cols; j0 += kTransposeTile) {
      const std::int64_t j1 = std::min(cols, j0 + kTransposeTile);
      for (std::int64_t j = j0; j < j1; ++j) {
        for (std::int64_t i = i0; i < i1; ++i) dst[j * rows + i] = src[i * cols + j];
      }
    }
  }
}

/// The first `cols` columns of the rows x rows identity, in a column-major array with leading
/// dimension ld (equally: the first `cols` rows of the identity, row-major, in rows of ld).
template <typename T>
void set_identity(T* x, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  for (std::int64_t j = 0; j < cols; ++j) {
    std::fill(x + j * ld, x + j * ld + rows, T(0));
    if (j < rows) x[j * ld + j] = T(1);
  }
}

/// Index of the first NaN or infinite value of x[0..count), or -1.
template <typename T>
std::int64_t first_non_finite(const T* x, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(x[i])) return i;
  }
  return -1;
}

/// A double converted to T, saturating to +-infinity where T cannot hold it (a plain
/// conversion of an out-of-range double to float is undefined).
template <typename T>
T saturate(double v) {
  if (v > static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::infinity();
  }
  if (v < -static_cast<double>(std::numeric_limits<T>::max())) {
    return -std::numeric_limits<T>::infinity();
  }
  return static_cast<T>(v);
}

}  // namespace gcompute::kernels::cpu::detail
