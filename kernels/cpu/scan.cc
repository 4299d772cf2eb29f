// SPDX-License-Identifier: Apache-2.0
#include "gcompute/kernels/cpu/scan.hpp"

#include <cmath>
#include <limits>

#include "gcompute/kernels/apsp_types.hpp"

namespace gcompute::kernels::cpu {
namespace {

template <typename T, typename Bad>
ScanResult find(const void* data, std::uint64_t count, Bad bad) {
  const T* p = static_cast<const T*>(data);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (bad(p[i])) return ScanResult{static_cast<std::int64_t>(i), static_cast<double>(p[i])};
  }
  return ScanResult{};
}

}  // namespace

ScanResult first_violation(const void* data, std::uint64_t count, DType dtype, ValueCheck check) {
  switch (check) {
    case ValueCheck::kFinite:
      if (dtype == DType::kF32)
        return find<float>(data, count, [](float v) { return !std::isfinite(v); });
      if (dtype == DType::kF64)
        return find<double>(data, count, [](double v) { return !std::isfinite(v); });
      return ScanResult{};
    case ValueCheck::kApspWeight:
      if (dtype == DType::kF32) {
        return find<float>(data, count, [](float v) {
          return std::isnan(v) || v == -std::numeric_limits<float>::infinity();
        });
      }
      if (dtype == DType::kI32) {
        return find<std::int32_t>(data, count, [](std::int32_t v) {
          return v != kI32NoEdge && (v > kI32MaxAbsWeight || v < -kI32MaxAbsWeight);
        });
      }
      return ScanResult{};
  }
  return ScanResult{};
}

}  // namespace gcompute::kernels::cpu
