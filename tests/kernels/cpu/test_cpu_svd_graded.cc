// SPDX-License-Identifier: Apache-2.0
// Relative accuracy of small singular values on graded matrices, where JACOBI (?gejsv) must
// keep every singular value to a few eps * n relative, while QR- and bidiagonalisation-based
// methods (AUTO: ?gesdd; POLAR) are only accurate to eps * sigma_1 and lose the small ones.
// The matrices and their known values: support/graded_svd.hpp. f32 results of the two-sided
// case are also compared one by one with dgejsv in double on the same (exactly representable)
// matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/cpu/svd_check.hpp"
#include "support/dtype_param.hpp"
#include "support/graded_svd.hpp"

namespace gcompute::kernels::svd_test {
namespace {

namespace gt = ::gcompute::testing;

using CpuSvdGraded = gt::FloatTypeTest;

INSTANTIATE_TEST_SUITE_P(Types, CpuSvdGraded, ::testing::Values(DType::kF32, DType::kF64),
                         gt::dtype_param_name);

TEST_P(CpuSvdGraded, JacobiKeepsSmallSingularValuesAccurate) {
  const double eps = epsilon(dtype_);
  const double cond = gt::graded_condition(dtype_);
  for (const gt::GradedMatrix& g : gt::graded_matrices(rng_, dtype_, cond)) {
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
      const std::vector<double> s(r.s.begin(), r.s.begin() + p);
      if (!g.want.empty()) {
        // Every method is backward stable: values within 10 n eps sigma_1.
        check_one(g.a.data(), r, 0, shape, g.want, default_tolerances(dtype_, g.m, g.n));
      } else if (dtype_ == DType::kF32 && method == SvdMethod::kJacobi) {
        // And one by one against dgejsv in double on the same matrix.
        const auto ref = gt::lapack_jacobi_singular_values(g.a, g.m, g.n);
        EXPECT_LE(gt::max_relative_error(s, ref), jacobi_bound);
      }
      const double err = g.relative_error(s);
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
