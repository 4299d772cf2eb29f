// SPDX-License-Identifier: Apache-2.0
// Relative accuracy of small singular values on graded matrices, where JACOBI (?gejsv) must
// keep every singular value to a few eps * n relative, while QR- and bidiagonalisation-based
// methods (AUTO: ?gesdd; POLAR) are only accurate to eps * sigma_1 and lose the small ones.
//
// Known values: A = Q * D (m >= n) and A = D * Q^T (m <= n) with Q orthonormal columns and D
// diagonal have singular values |d_i| (A^T A = D^2, resp. A A^T = D^2); rounding A elementwise
// perturbs them only by about n * eps relative (a multiplicative perturbation of the
// well-conditioned factor). For A = D1 * Q * D2 (square) the values are not known one by one,
// but their product is |det A|, computed here by LU with partial pivoting in long double on the
// stored matrix; f32 results are also compared one by one with dgejsv in double on the same
// (exactly representable) matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/cpu/svd_check.hpp"
#include "support/dtype_param.hpp"

namespace gcompute::kernels::svd_test {
namespace {

using ::gcompute::testing::random_orthonormal_columns;
using ::gcompute::testing::Rng;

// n values log-uniform in [1/cond, 1], in random order.
std::vector<double> graded_diagonal(Rng& rng, std::int64_t n, double cond) {
  std::vector<double> d(static_cast<std::size_t>(n));
  for (double& x : d) x = std::pow(cond, -rng.uniform(0, 1));
  d[0] = 1.0;
  d[static_cast<std::size_t>(n - 1)] = 1.0 / cond;
  std::shuffle(d.begin(), d.end(), rng.engine());
  return d;
}

std::vector<double> sorted_descending(std::vector<double> v) {
  std::sort(v.rbegin(), v.rend());
  return v;
}

// max_i |s_i - want_i| / want_i over the first p values of matrix 0.
double max_relative_error(const std::vector<double>& s, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(s[i] - want[i]) / want[i]);
  }
  return worst;
}

struct Graded {
  const char* name;
  std::int64_t m, n;
  std::vector<double> a;     // row-major, already rounded to the element type
  std::vector<double> want;  // the singular values, descending (empty: not known one by one)
  long double log_det = 0;   // log |det A| for the two-sided square case
};

// log |det A| of a row-major n x n matrix: Gaussian elimination with partial pivoting in long
// double (for these matrices its error is far below the double rounding of A).
long double log_abs_det(const std::vector<double>& a, std::int64_t n) {
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

std::vector<Graded> graded_matrices(Rng& rng, DType t, double cond) {
  std::vector<Graded> out;
  // Column grading, tall and square: A = Q D (Q m x n); row grading, wide and square: A = D Q^T
  // (Q n x m).
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
    const auto d = graded_diagonal(rng, p, cond);
    std::vector<double> a(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        a[i * n + j] = g.columns ? q[i * n + j] * d[j] : d[i] * q[j * m + i];
      }
    }
    out.push_back({g.name, m, n, round_to(t, a), sorted_descending(d)});
  }
  // Both: A = D1 Q D2, each diagonal spanning sqrt(cond).
  const std::int64_t n = 40;
  const auto q = random_orthonormal_columns(rng, n, n);
  const auto d1 = graded_diagonal(rng, n, std::sqrt(cond));
  const auto d2 = graded_diagonal(rng, n, std::sqrt(cond));
  std::vector<double> a(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) a[i * n + j] = d1[i] * q[i * n + j] * d2[j];
  }
  a = round_to(t, a);
  out.push_back({"both graded", n, n, a, {}, log_abs_det(a, n)});
  return out;
}

using CpuSvdGraded = ::gcompute::testing::FloatTypeTest;

INSTANTIATE_TEST_SUITE_P(Types, CpuSvdGraded, ::testing::Values(DType::kF32, DType::kF64),
                         ::gcompute::testing::dtype_param_name);

TEST_P(CpuSvdGraded, JacobiKeepsSmallSingularValuesAccurate) {
  const double eps = epsilon(dtype_);
  const double cond = dtype_ == DType::kF64 ? 1e14 : 1e7;
  for (const Graded& g : graded_matrices(rng_, dtype_, cond)) {
    SCOPED_TRACE(::testing::Message() << g.name << " " << g.m << "x" << g.n << " cond " << cond);
    const double size = static_cast<double>(std::max(g.m, g.n));
    // Relative error bound for JACOBI: f(m, n) * eps * cond(B) with cond(B) ~ 1. (Measured:
    // 1 to 3 eps per value; the sum over 40 values in the two-sided case up to 20 eps.)
    const double jacobi_bound = 4 * size * eps;
    double errors[3] = {0, 0, 0};  // auto, jacobi, polar
    for (const SvdMethod method : {SvdMethod::kAuto, SvdMethod::kJacobi, SvdMethod::kPolar}) {
      const SvdShape shape = make_shape({dtype_, method}, g.m, g.n);
      const Result r = run(g.a, shape);
      ASSERT_TRUE(r.status.ok()) << r.status;
      EXPECT_TRUE(r.info.converged);
      const std::int64_t p = std::min(g.m, g.n);
      std::vector<double> s(r.s.begin(), r.s.begin() + p);
      double err = 0;
      if (!g.want.empty()) {
        // Every method is backward stable: values within 10 n eps sigma_1.
        check_one(g.a.data(), r, 0, shape, g.want, default_tolerances(dtype_, g.m, g.n));
        err = max_relative_error(s, g.want);
      } else {
        long double log_prod = 0;
        for (double x : s) log_prod += std::log(static_cast<long double>(x));
        err = static_cast<double>(std::fabs(log_prod - g.log_det));  // ~ sum of relative errors
        if (dtype_ == DType::kF32 && method == SvdMethod::kJacobi) {
          // And one by one against dgejsv in double on the same matrix.
          const auto ref = ::gcompute::testing::lapack_jacobi_singular_values(g.a, g.m, g.n);
          EXPECT_LE(max_relative_error(s, ref), jacobi_bound);
        }
      }
      errors[static_cast<int>(method)] = err;
      if (method == SvdMethod::kJacobi) {
        EXPECT_LE(err, jacobi_bound) << "JACOBI lost relative accuracy";
      }
    }
    std::printf(
        "%s %s %lldx%lld cond %.0e: worst relative error auto %.1e jacobi %.1e polar %.1e\n",
        dtype_name(dtype_), g.name, static_cast<long long>(g.m), static_cast<long long>(g.n), cond,
        errors[0], errors[1], errors[2]);
    // The premise of the test: these matrices are hard for the other methods, whose small
    // values are accurate only to eps * sigma_1 in absolute terms (measured for AUTO: 1e-11 to
    // 1e-6 relative in f64, 1e-4 to 1e-1 in f32; POLAR about the same or worse).
    if (!g.want.empty()) {
      EXPECT_GT(errors[0], jacobi_bound) << "AUTO kept the small values: not a graded case";
    }
  }
}

}  // namespace
}  // namespace gcompute::kernels::svd_test
