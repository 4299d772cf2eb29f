// SPDX-License-Identifier: Apache-2.0
// Shape validation shared by the CPU and CUDA implementations.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gcompute/kernels/apsp_types.hpp"
#include "gcompute/kernels/eigh_types.hpp"
#include "gcompute/kernels/graph_batch_types.hpp"
#include "gcompute/kernels/matmul_types.hpp"
#include "gcompute/kernels/svd_types.hpp"
#include "gcompute/kernels/transpose_types.hpp"

namespace gcompute::kernels {

absl::Status validate(const TransposeShape& s) {
  if (s.batch < 0 || s.rows < 0 || s.cols < 0) {
    return absl::InvalidArgumentError(absl::StrCat("transpose: negative shape batch=", s.batch,
                                                   " rows=", s.rows, " cols=", s.cols));
  }
  if (s.element_bytes != 1 && s.element_bytes != 2 && s.element_bytes != 4 &&
      s.element_bytes != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("transpose: element size must be 1, 2, 4 or 8 bytes, got ", s.element_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<Precision> resolve_precision(DType dtype, Precision requested) {
  switch (dtype) {
    case DType::kF32:
      if (requested == Precision::kDefault) return Precision::kF32;
      if (requested == Precision::kF64) break;
      return requested;
    case DType::kF64:
      if (requested == Precision::kDefault || requested == Precision::kF64) return Precision::kF64;
      break;
    case DType::kF16:
      if (requested == Precision::kDefault || requested == Precision::kF16) return Precision::kF16;
      break;
    case DType::kBF16:
      if (requested == Precision::kDefault || requested == Precision::kBF16)
        return Precision::kBF16;
      break;
    case DType::kI32:
      return absl::InvalidArgumentError("matmul does not take i32 operands");
  }
  const char* needs = requested == Precision::kF64    ? "f64 operands"
                      : requested == Precision::kF32  ? "f32 operands"
                      : requested == Precision::kTF32 ? "f32 operands"
                      : requested == Precision::kBF16 ? "bf16 or f32 operands"
                                                      : "f16 or f32 operands";
  return absl::InvalidArgumentError(absl::StrCat("precision ", precision_name(requested), " needs ",
                                                 needs, ", got ", dtype_name(dtype)));
}

absl::Status validate(const MatmulShape& s) {
  if (s.batch < 0 || s.a_batch < 0 || s.b_batch < 0 || s.m < 0 || s.n < 0 || s.k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul: negative shape m=", s.m, " n=", s.n, " k=", s.k, " batch=", s.batch));
  }
  const bool a_ok = s.a_batch == s.batch || s.a_batch == 1;
  const bool b_ok = s.b_batch == s.batch || s.b_batch == 1;
  if (!a_ok || !b_ok || s.batch != std::max(s.a_batch, s.b_batch)) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: batch sizes ", s.a_batch, " (A) and ",
                                                   s.b_batch, " (B) neither match nor broadcast"));
  }
  if (!std::isfinite(s.alpha) || !std::isfinite(s.beta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul: alpha and beta must be finite, got ", s.alpha, " and ", s.beta));
  }
  return resolve_precision(s.dtype, s.precision).status();
}

double effective_tolerance(const SvdShape& s) {
  if (s.tolerance > 0) return s.tolerance;
  const double eps = s.dtype == DType::kF32 ? std::numeric_limits<float>::epsilon()
                                            : std::numeric_limits<double>::epsilon();
  return std::sqrt(static_cast<double>(std::max<std::int64_t>({s.m, s.n, 1}))) * eps;
}

absl::Status validate(const SvdShape& s) {
  if (s.batch < 0 || s.m < 0 || s.n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("svd: negative shape m=", s.m, " n=", s.n, " batch=", s.batch));
  }
  if (s.dtype != DType::kF32 && s.dtype != DType::kF64) {
    return absl::InvalidArgumentError(
        absl::StrCat("svd takes f32 or f64 matrices, got ", dtype_name(s.dtype)));
  }
  if (s.method != SvdMethod::kAuto && s.method != SvdMethod::kJacobi &&
      s.method != SvdMethod::kPolar) {
    return absl::InvalidArgumentError(absl::StrCat(
        "svd: method must be auto, jacobi or polar, got ", static_cast<int>(s.method)));
  }
  if (!(s.tolerance >= 0 && s.tolerance < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("svd: tolerance must be in [0, 1) (0 = default), got ", s.tolerance));
  }
  if (s.max_sweeps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("svd: max_sweeps must be >= 0 (0 = default), got ", s.max_sweeps));
  }
  return absl::OkStatus();
}

absl::Status validate(const SvdTuning& t) {
  if (t.block != 0 && (t.block < 8 || t.block > 64 || t.block % 8 != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "svd tuning: block must be 0 (automatic) or a multiple of 8 in 8..64, got ", t.block));
  }
  if (t.gram_products < 0 || t.gram_products > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "svd tuning: gram_products must be 0 (automatic) or in 1..65536, got ", t.gram_products));
  }
  if (t.inner_sweeps < 1 || t.inner_sweeps > 30) {
    return absl::InvalidArgumentError(
        absl::StrCat("svd tuning: inner_sweeps must be in 1..30, got ", t.inner_sweeps));
  }
  const int solver = static_cast<int>(t.inner_solver);
  if (solver < 0 || solver > static_cast<int>(SvdTuning::InnerSolver::kOneSided)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "svd tuning: inner_solver must be 0 (auto), 1 (two-sided) or 2 (one-sided), got ", solver));
  }
  return absl::OkStatus();
}

double effective_symmetry_tolerance(const EighShape& s) {
  if (s.symmetry_tolerance > 0) return s.symmetry_tolerance;
  const double eps = s.dtype == DType::kF32 ? std::numeric_limits<float>::epsilon()
                                            : std::numeric_limits<double>::epsilon();
  return static_cast<double>(std::max<std::int64_t>(s.n, 1)) * eps;
}

absl::Status validate(const EighShape& s) {
  if (s.batch < 0 || s.n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("eigh: negative shape n=", s.n, " batch=", s.batch));
  }
  if (s.dtype != DType::kF32 && s.dtype != DType::kF64) {
    return absl::InvalidArgumentError(
        absl::StrCat("eigh takes f32 or f64 matrices, got ", dtype_name(s.dtype)));
  }
  if (!(s.symmetry_tolerance >= 0 && s.symmetry_tolerance < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eigh: symmetry_tolerance must be in [0, 1) (0 = default), got ", s.symmetry_tolerance));
  }
  return absl::OkStatus();
}

absl::Status validate(const ApspTuning& t) {
  if (t.depth < 0 || t.depth > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp tuning: depth must be 0 (automatic), 1 or 2, got ", t.depth));
  }
  if (t.next_hop_candidates < 0 || t.next_hop_candidates > 2048) {
    return absl::InvalidArgumentError(absl::StrCat(
        "apsp tuning: next_hop_candidates must be within 0..2048, got ", t.next_hop_candidates));
  }
  return absl::OkStatus();
}

absl::Status validate(const GraphOptions& o) {
  if (o.min_capacity < 1 || !(o.grow_load > 0.0f) || !(o.grow_load <= o.max_load) ||
      !(o.max_load < 1.0f) || !(o.pool_slack >= 0.0f)) {
    return absl::InvalidArgumentError(
        "GraphOptions: need min_capacity >= 1, 0 < grow_load <= max_load < 1, pool_slack >= 0");
  }
  return absl::OkStatus();
}

namespace {

template <typename T>
Asymmetry max_asymmetry(const T* a, const EighShape& s) {
  const std::int64_t n = s.n;
  Asymmetry worst;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    const T* m = a + b * n * n;
    double max_abs = 0;
    for (std::int64_t i = 0; i < n * n; ++i) {
      const double v = std::abs(static_cast<double>(m[i]));
      if (std::isfinite(v)) max_abs = std::max(max_abs, v);
    }
    if (max_abs == 0) continue;
    for (std::int64_t i = 1; i < n; ++i) {
      for (std::int64_t j = 0; j < i; ++j) {
        const double lower = m[i * n + j], upper = m[j * n + i];
        if (!std::isfinite(lower) || !std::isfinite(upper)) continue;
        const double relative = std::abs(lower - upper) / max_abs;
        if (relative > worst.relative) worst = {b, i, j, lower, upper, max_abs, relative};
      }
    }
  }
  return worst;
}

}  // namespace

Asymmetry find_max_asymmetry(const void* a, const EighShape& s) {
  if (s.batch <= 0 || s.n <= 1) return {};
  return s.dtype == DType::kF32 ? max_asymmetry(static_cast<const float*>(a), s)
                                : max_asymmetry(static_cast<const double*>(a), s);
}

absl::Status check_symmetric(const void* a, const EighShape& s) {
  const Asymmetry w = find_max_asymmetry(a, s);
  const double tol = effective_symmetry_tolerance(s);
  if (w.relative <= tol) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "eigh: matrix ", w.batch_index, " is not symmetric: a[", w.row, "][", w.col, "] = ", w.lower,
      " but a[", w.col, "][", w.row, "] = ", w.upper, " (difference ", std::abs(w.lower - w.upper),
      " > tolerance ", tol, " x max |a_ij| ", w.max_abs, " = ", tol * w.max_abs, ")"));
}

absl::Status validate(const ApspShape& s) {
  if (s.n < 0) return absl::InvalidArgumentError(absl::StrCat("apsp: negative n=", s.n));
  if (s.dtype != DType::kF32 && s.dtype != DType::kI32) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp takes f32 or i32 weights, got ", dtype_name(s.dtype)));
  }
  return absl::OkStatus();
}

absl::Status validate(const ApspUpdateShape& s) {
  if (s.n_old < 0 || s.n < s.n_old) {
    return absl::InvalidArgumentError(
        absl::StrCat("apsp update: n_old=", s.n_old, " and n=", s.n, " need 0 <= n_old <= n"));
  }
  return absl::OkStatus();
}

}  // namespace gcompute::kernels
