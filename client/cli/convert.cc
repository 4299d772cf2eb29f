// SPDX-License-Identifier: Apache-2.0
#include "cli/convert.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gcompute::cli {
namespace {

using client::DType;
constexpr int32_t kNoEdgeI32 = std::numeric_limits<int32_t>::max();

double load(const client::HostMatrix& m, std::size_t i) {
  switch (m.dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, m.data.data() + i * 4, 4);
      return v;
    }
    case DType::kF64: {
      double v;
      std::memcpy(&v, m.data.data() + i * 8, 8);
      return v;
    }
    default: {
      int32_t v;
      std::memcpy(&v, m.data.data() + i * 4, 4);
      return v == kNoEdgeI32 ? std::numeric_limits<double>::infinity() : v;
    }
  }
}

}  // namespace

absl::StatusOr<client::HostMatrix> convert_dtype(const client::HostMatrix& m, DType to,
                                                 const std::string& name) {
  const bool supported = [](DType d) {
    return d == DType::kF32 || d == DType::kF64 || d == DType::kI32;
  }(m.dtype);
  if (!supported || !(to == DType::kF32 || to == DType::kF64 || to == DType::kI32)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": cannot convert ", client::dtype_name(m.dtype), " to ", client::dtype_name(to)));
  }
  if (m.dtype == to) return m;
  client::HostMatrix out = m;
  out.dtype = to;
  const std::size_t n = static_cast<std::size_t>(m.elements());
  out.data.assign(n * client::dtype_size(to), '\0');
  for (std::size_t i = 0; i < n; ++i) {
    const double v = load(m, i);
    if (to == DType::kF32) {
      const float f = static_cast<float>(v);
      std::memcpy(out.data.data() + i * 4, &f, 4);
    } else if (to == DType::kF64) {
      std::memcpy(out.data.data() + i * 8, &v, 8);
    } else {
      int32_t w;
      if (v == std::numeric_limits<double>::infinity()) {
        w = kNoEdgeI32;
      } else if (std::isfinite(v) && v == std::trunc(v) && v >= -2147483648.0 && v < 2147483647.0) {
        w = static_cast<int32_t>(v);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": element ", i, " = ", v,
                         " is not an integer in int32 range (or +inf); --i32 needs integer "
                         "weights"));
      }
      std::memcpy(out.data.data() + i * 4, &w, 4);
    }
  }
  return out;
}

}  // namespace gcompute::cli
