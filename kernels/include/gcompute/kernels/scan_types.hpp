// SPDX-License-Identifier: Apache-2.0
// Value checks run over a whole matrix before an operation that cannot accept some values.
#pragma once

#include <cstdint>

namespace gcompute::kernels {

/// What a scan looks for.
enum class ValueCheck : std::uint8_t {
  /// f32/f64: NaN or +-inf (SVD needs finite input). Other dtypes always pass.
  kFinite,
  /// APSP weights. f32: NaN or -inf (+inf means no edge). i32: anything but kI32NoEdge outside
  /// +-kI32MaxAbsWeight. Other dtypes always pass.
  kApspWeight,
};

/// The first element that fails a check: its index (-1 when every element passes) and value.
struct ScanResult {
  std::int64_t index = -1;
  double value = 0;
  bool found() const { return index >= 0; }
};

}  // namespace gcompute::kernels
