// SPDX-License-Identifier: Apache-2.0
// Graded matrices with known singular values, for the relative accuracy of small singular
// values that a Jacobi SVD keeps and QR- or bidiagonalisation-based methods lose (they are
// accurate only to eps * sigma_1). Used by the CPU and the GPU SVD tests.
//
// Known values: A = Q * D (m >= n) and A = D * Q^T (m <= n) with Q orthonormal columns and D
// diagonal have singular values |d_i| (A^T A = D^2, resp. A A^T = D^2); rounding A elementwise
// perturbs them only by about n * eps relative (a multiplicative perturbation of the
// well-conditioned factor). For A = D1 * Q * D2 (square) the values are not known one by one,
// but their product is |det A|, computed by LU with partial pivoting in long double on the
// stored matrix.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gcompute/kernels/dtype.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::testing {

/// Rounds every value to the element type (so that an oracle sees exactly the input).
inline std::vector<double> round_to(kernels::DType t, std::vector<double> a) {
  if (t == kernels::DType::kF32) {
    for (double& x : a) x = static_cast<float>(x);
  }
  return a;
}

/// n values log-uniform in [1/cond, 1], in random order, both ends included.
inline std::vector<double> graded_diagonal(Rng& rng, std::int64_t n, double cond) {
  std::vector<double> d(static_cast<std::size_t>(n));
  for (double& x : d) x = std::pow(cond, -rng.uniform(0, 1));
  d[0] = 1.0;
  d[static_cast<std::size_t>(n - 1)] = 1.0 / cond;
  std::shuffle(d.begin(), d.end(), rng.engine());
  return d;
}

/// log |det A| of a row-major n x n matrix: Gaussian elimination with partial pivoting in long
/// double (for these matrices its error is far below the double rounding of A).
inline long double log_abs_det(const std::vector<double>& a, std::int64_t n) {
  std::vector<long double> lu(a.begin(), a.end());
  long double sum = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t p = k;
    for (std::int64_t i = k + 1; i < n; ++i) {
      if (std::fabs(lu[i * n + k]) > std::fabs(lu[p * n + k])) p = i;
    }
    for (std::int64_t j = 0; j < n; ++j) std::swap(lu[k * n + j], lu[p * n + j]);
    sum += std::log(std::fabs(lu[k * n + k]));
    for (std::int64_t i = k + 1; i < n; ++i) {
      const long double f = lu[i * n + k] / lu[k * n + k];
      for (std::int64_t j = k; j < n; ++j) lu[i * n + j] -= f * lu[k * n + j];
    }
  }
  return sum;
}

/// max_i |s_i - want_i| / want_i over want's values.
inline double max_relative_error(const std::vector<double>& s, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(s[i] - want[i]) / want[i]);
  }
  return worst;
}

struct GradedMatrix {
  const char* name;
  std::int64_t m, n;
  std::vector<double> a;     ///< row-major, already rounded to the element type
  std::vector<double> want;  ///< the singular values, descending (empty: not known one by one)
  long double log_det = 0;   ///< log |det A| for the two-sided square case

  /// The worst relative error of singular values s (descending, min(m, n) of them): max_i
  /// |s_i - want_i| / want_i, or for the two-sided case |log prod s_i - log |det A||, about the
  /// sum of the relative errors.
  double relative_error(const std::vector<double>& s) const {
    if (!want.empty()) return max_relative_error(s, want);
    long double log_prod = 0;
    for (double x : s) log_prod += std::log(static_cast<long double>(x));
    return static_cast<double>(std::fabs(log_prod - log_det));
  }
};

/// Column grading, tall and square (A = Q D, Q m x n); row grading, wide and square (A = D Q^T,
/// Q n x m); and both (A = D1 Q D2, each diagonal spanning sqrt(cond)); condition number cond.
inline std::vector<GradedMatrix> graded_matrices(Rng& rng, kernels::DType t, double cond) {
  std::vector<GradedMatrix> out;
  struct OneSided {
    const char* name;
    std::int64_t m, n;
    bool columns;
  };
  for (const OneSided& g : {OneSided{"columns graded", 70, 40, true},
                            {"columns graded", 50, 50, true},
                            {"rows graded", 40, 70, false},
                            {"rows graded", 50, 50, false}}) {
    const std::int64_t m = g.m, n = g.n, p = g.columns ? n : m;
    const auto q = random_orthonormal_columns(rng, g.columns ? m : n, p);
    auto d = graded_diagonal(rng, p, cond);
    std::vector<double> a(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        a[i * n + j] = g.columns ? q[i * n + j] * d[j] : d[i] * q[j * m + i];
      }
    }
    std::sort(d.rbegin(), d.rend());
    out.push_back({g.name, m, n, round_to(t, a), d});
  }
  const std::int64_t n = 40;
  const auto q = random_orthonormal_columns(rng, n, n);
  const auto d1 = graded_diagonal(rng, n, std::sqrt(cond));
  const auto d2 = graded_diagonal(rng, n, std::sqrt(cond));
  std::vector<double> a(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) a[i * n + j] = d1[i] * q[i * n + j] * d2[j];
  }
  a = round_to(t, a);
  const long double log_det = log_abs_det(a, n);
  out.push_back({"both graded", n, n, std::move(a), {}, log_det});
  return out;
}

/// The condition number of the graded cases: large enough that a normwise accurate method keeps
/// at most a few digits of the smallest value (eps * cond is 0.02 in f64, 1.2 in f32).
inline double graded_condition(kernels::DType t) {
  return t == kernels::DType::kF64 ? 1e14 : 1e7;
}

}  // namespace gcompute::testing
