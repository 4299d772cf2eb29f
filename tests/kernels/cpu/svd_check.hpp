// SPDX-License-Identifier: Apache-2.0
// Shared by the cpu::svd tests: runs an SVD with poisoned outputs and checks a result for what
// an SVD must be (S descending and non-negative, orthonormal U and V, A = U S Vt) and its
// singular values against an oracle's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gcompute/kernels/cpu/svd.hpp"
#include "support/graded_svd.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::kernels::svd_test {

/// One configuration the tests run over: element type and method.
struct Case {
  DType dtype;
  SvdMethod method;
};

inline std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(dtype_name(info.param.dtype)) + "_" + svd_method_name(info.param.method);
}

inline const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = {
      {DType::kF32, SvdMethod::kAuto},   {DType::kF32, SvdMethod::kJacobi},
      {DType::kF32, SvdMethod::kPolar},  {DType::kF64, SvdMethod::kAuto},
      {DType::kF64, SvdMethod::kJacobi}, {DType::kF64, SvdMethod::kPolar}};
  return cases;
}

inline double epsilon(DType t) {
  return t == DType::kF32 ? std::numeric_limits<float>::epsilon()
                          : std::numeric_limits<double>::epsilon();
}

using ::gcompute::testing::round_to;

struct Result {
  absl::Status status;
  std::vector<double> s, u, vt;
  SvdInfo info;
};

/// Runs cpu::svd on `a` (given in double, converted to the shape's type) with every output
/// poisoned (NaN); outputs come back in double. Without compute_uv, U and Vt must stay poison.
template <typename T>
Result run_typed(const std::vector<double>& a, const SvdShape& shape, StopToken stop) {
  const std::int64_t p = std::min(shape.m, shape.n);
  std::vector<T> at(a.begin(), a.end());
  auto s = ::gcompute::testing::poisoned<T>(static_cast<std::size_t>(shape.batch * p));
  auto u = ::gcompute::testing::poisoned<T>(
      static_cast<std::size_t>(shape.batch * shape.m * svd_u_cols(shape)));
  auto vt = ::gcompute::testing::poisoned<T>(
      static_cast<std::size_t>(shape.batch * svd_vt_rows(shape) * shape.n));
  absl::StatusOr<SvdInfo> info =
      cpu::svd(at.data(), s.data(), shape.compute_uv ? u.data() : nullptr,
               shape.compute_uv ? vt.data() : nullptr, shape, stop);
  Result r;
  r.status = info.status();
  if (info.ok()) r.info = *info;
  r.s.assign(s.begin(), s.end());
  if (shape.compute_uv) {
    r.u.assign(u.begin(), u.end());
    r.vt.assign(vt.begin(), vt.end());
  } else {
    for (T x : u) EXPECT_TRUE(std::isnan(x));
    for (T x : vt) EXPECT_TRUE(std::isnan(x));
  }
  return r;
}

inline Result run(const std::vector<double>& a, const SvdShape& shape, StopToken stop = {}) {
  return shape.dtype == DType::kF32 ? run_typed<float>(a, shape, stop)
                                    : run_typed<double>(a, shape, stop);
}

/// max |U^T U - I| over the columns of matrix `index`'s U.
inline double u_orthonormality_error(const Result& r, const SvdShape& shape, std::int64_t index) {
  const std::int64_t uc = svd_u_cols(shape);
  return ::gcompute::testing::orthonormal_columns_error(r.u.data() + index * shape.m * uc, shape.m,
                                                        uc);
}

/// max |Vt Vt^T - I| over the rows of matrix `index`'s Vt.
inline double vt_orthonormality_error(const Result& r, const SvdShape& shape, std::int64_t index) {
  const std::int64_t vr = svd_vt_rows(shape);
  return ::gcompute::testing::orthonormal_rows_error(r.vt.data() + index * vr * shape.n, vr,
                                                     shape.n);
}

/// Bounds of check_one.
struct Tolerances {
  double orth;     ///< max |Q^T Q - I| over entries
  double recon;    ///< |A - U S Vt|_F / |A|_F
  double sv_norm;  ///< |s_i - oracle_i| <= sv_norm * oracle_1
};

/// The bounds every method must meet: 50 * max(m, n) * eps for orthogonality and residual,
/// and singular values within 10 * max(m, n) * eps * sigma_1 of the oracle (backward stable
/// methods: errors of order eps * |A|).
inline Tolerances default_tolerances(DType t, std::int64_t m, std::int64_t n) {
  const double size = static_cast<double>(std::max<std::int64_t>({m, n, 1}));
  return {50 * size * epsilon(t), 50 * size * epsilon(t), 10 * size * epsilon(t)};
}

/// Checks matrix `index` of a batch result against the true singular values `oracle_s`.
inline void check_one(const double* a, const Result& r, std::int64_t index, const SvdShape& shape,
                      const std::vector<double>& oracle_s, const Tolerances& tol) {
  SCOPED_TRACE(::testing::Message()
               << "matrix " << index << " of " << shape.m << "x" << shape.n << " "
               << dtype_name(shape.dtype) << " " << svd_method_name(shape.method)
               << (shape.full_matrices ? " full" : " thin") << (shape.compute_uv ? "" : " S only"));
  ASSERT_TRUE(r.status.ok()) << r.status;
  const std::int64_t m = shape.m, n = shape.n, p = std::min(m, n);
  const std::int64_t uc = svd_u_cols(shape), vr = svd_vt_rows(shape);
  const double* s = r.s.data() + index * p;
  for (std::int64_t i = 0; i < p; ++i) {
    ASSERT_TRUE(std::isfinite(s[i]) && s[i] >= 0) << "s[" << i << "] = " << s[i];
    if (i > 0) {
      ASSERT_LE(s[i], s[i - 1]) << "not descending at " << i;
    }
  }
  ASSERT_EQ(static_cast<std::int64_t>(oracle_s.size()), p);
  for (std::int64_t i = 0; i < p; ++i) {
    EXPECT_LE(std::fabs(s[i] - oracle_s[i]), tol.sv_norm * oracle_s[0] + 1e-300)
        << "s[" << i << "] = " << s[i] << ", oracle " << oracle_s[i];
  }
  if (!shape.compute_uv) return;
  const double* u = r.u.data() + index * m * uc;
  const double* vt = r.vt.data() + index * vr * n;
  EXPECT_LE(u_orthonormality_error(r, shape, index), tol.orth) << "U columns not orthonormal";
  EXPECT_LE(vt_orthonormality_error(r, shape, index), tol.orth) << "Vt rows not orthonormal";
  EXPECT_LE(::gcompute::testing::reconstruction_error(a, u, s, vt, m, n, uc), tol.recon)
      << "A != U S Vt";
}

/// An SvdShape for one configuration.
inline SvdShape make_shape(const Case& c, std::int64_t m, std::int64_t n, std::int64_t batch = 1,
                           bool full = false, bool uv = true) {
  SvdShape shape;
  shape.batch = batch;
  shape.m = m;
  shape.n = n;
  shape.dtype = c.dtype;
  shape.method = c.method;
  shape.full_matrices = full;
  shape.compute_uv = uv;
  return shape;
}

}  // namespace gcompute::kernels::svd_test
