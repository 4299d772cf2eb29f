// SPDX-License-Identifier: Apache-2.0
// Validation of SSSP inputs, shared by the CPU and CUDA implementations.
#include <cmath>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/sssp_types.hpp"

namespace gcompute::kernels {
namespace {

std::string format_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

absl::Status validate_sssp_shape(const CsrView& g, std::int64_t source) {
  if (g.n <= 0 || g.n > kSsspMaxVertices) {
    return absl::InvalidArgumentError(
        absl::StrCat("sssp: n = ", g.n, " vertices, must be in 1..", kSsspMaxVertices));
  }
  if (g.m < 0) {
    return absl::InvalidArgumentError(absl::StrCat("sssp: m = ", g.m, " edges, must be >= 0"));
  }
  if (g.row_offsets == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("sssp: row_offsets is null (needs n + 1 = ", g.n + 1, " entries)"));
  }
  if (g.m > 0 && (g.cols == nullptr || g.weights == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat("sssp: ", g.cols == nullptr ? "cols" : "weights",
                                                   " is null with m = ", g.m, " edges"));
  }
  if (source < 0 || source >= g.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("sssp: source ", source, " out of range 0..", g.n - 1));
  }
  return absl::OkStatus();
}

absl::Status csr_defect_status(const CsrDefect& d, const CsrView& g) {
  using Kind = CsrDefect::Kind;
  switch (d.kind) {
    case Kind::kFirstOffset:
      return absl::InvalidArgumentError(
          absl::StrCat("sssp: row_offsets[0] = ", d.value, ", must be 0"));
    case Kind::kOffsetOrder:
      return absl::InvalidArgumentError(absl::StrCat("sssp: row_offsets decrease: row_offsets[",
                                                     d.index, "] = ", d.value, " > row_offsets[",
                                                     d.index + 1, "] = ", d.next));
    case Kind::kLastOffset:
      return absl::InvalidArgumentError(
          absl::StrCat("sssp: row_offsets[n = ", g.n, "] = ", d.value, ", must equal m = ", g.m));
    case Kind::kColumn:
      return absl::InvalidArgumentError(
          absl::StrCat("sssp: cols[", d.index, "] = ", d.value, " out of range 0..", g.n - 1));
    case Kind::kWeight:
      return absl::InvalidArgumentError(absl::StrCat(
          "sssp: weights[", d.index, "] = ", format_float(d.weight), ", must not be NaN or -inf"));
  }
  return absl::InternalError("sssp: unknown CSR defect");
}

absl::Status validate_sssp(const CsrView& g, std::int64_t source) {
  if (absl::Status s = validate_sssp_shape(g, source); !s.ok()) return s;
  using Kind = CsrDefect::Kind;
  const std::uint64_t* off = g.row_offsets;
  if (off[0] != 0) return csr_defect_status({Kind::kFirstOffset, 0, off[0]}, g);
  for (std::int64_t v = 0; v < g.n; ++v) {
    if (off[v] > off[v + 1])
      return csr_defect_status({Kind::kOffsetOrder, v, off[v], off[v + 1]}, g);
  }
  if (off[g.n] != static_cast<std::uint64_t>(g.m)) {
    return csr_defect_status({Kind::kLastOffset, g.n, off[g.n]}, g);
  }
  for (std::int64_t e = 0; e < g.m; ++e) {
    if (static_cast<std::int64_t>(g.cols[e]) >= g.n) {
      return csr_defect_status({Kind::kColumn, e, g.cols[e]}, g);
    }
  }
  for (std::int64_t e = 0; e < g.m; ++e) {
    const float w = g.weights[e];
    if (std::isnan(w) || w == -INFINITY) {
      return csr_defect_status({Kind::kWeight, e, 0, 0, w}, g);
    }
  }
  return absl::OkStatus();
}

}  // namespace gcompute::kernels
