// SPDX-License-Identifier: Apache-2.0
// cpu::svd_jacobi: every result is checked for what an SVD must be (orthonormal U and V,
// A = U S Vt, S descending and non-negative) and its singular values against LAPACK's dgesvd
// in f64 or against the planted values of a constructed matrix.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "gcompute/kernels/cpu/svd.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::kernels {
namespace {

using ::gcompute::testing::lapack_svd;
using ::gcompute::testing::matrix_with_singular_values;
using ::gcompute::testing::orthonormal_columns_error;
using ::gcompute::testing::orthonormal_rows_error;
using ::gcompute::testing::reconstruction_error;
using ::gcompute::testing::Rng;

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::kF32 : DType::kF64;
}

struct Result {
  std::vector<double> s, u, vt;
  SvdInfo info;
};

// Runs the SVD of `a` (batch matrices, given in double and converted to T) with every output
// poisoned (NaN), and returns the outputs in double.
template <typename T>
Result run_svd(const std::vector<double>& a, const SvdShape& shape) {
  const std::int64_t p = std::min(shape.m, shape.n);
  std::vector<T> at(a.begin(), a.end());
  auto s = ::gcompute::testing::poisoned<T>(static_cast<std::size_t>(shape.batch * p));
  auto u = ::gcompute::testing::poisoned<T>(
      static_cast<std::size_t>(shape.batch * shape.m * svd_u_cols(shape)));
  auto vt = ::gcompute::testing::poisoned<T>(
      static_cast<std::size_t>(shape.batch * svd_vt_rows(shape) * shape.n));
  absl::StatusOr<SvdInfo> info =
      cpu::svd_jacobi(at.data(), s.data(), shape.compute_uv ? u.data() : nullptr,
                      shape.compute_uv ? vt.data() : nullptr, shape);
  Result r;
  EXPECT_TRUE(info.ok()) << info.status();
  if (info.ok()) r.info = *info;
  r.s.assign(s.begin(), s.end());
  if (shape.compute_uv) {
    r.u.assign(u.begin(), u.end());
    r.vt.assign(vt.begin(), vt.end());
  } else {
    // Not to be written: still all poison.
    for (T x : u) {
      EXPECT_TRUE(std::isnan(x));
    }
    for (T x : vt) {
      EXPECT_TRUE(std::isnan(x));
    }
  }
  return r;
}

struct Tolerances {
  double orth;     // max |Q^T Q - I|
  double recon;    // |A - U S Vt| / |A|
  double sv_rel;   // |s_i - oracle_i| <= sv_rel * oracle_i   (when per_value)
  double sv_norm;  // |s_i - oracle_i| <= sv_norm * oracle_1 (always)
  bool per_value;
};

template <typename T>
Tolerances default_tolerances(std::int64_t m, std::int64_t n, bool well_conditioned) {
  const double eps = std::numeric_limits<T>::epsilon();
  const double size = static_cast<double>(std::max<std::int64_t>({m, n, 1}));
  const double sv = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  return {50 * size * eps, 50 * size * eps, sv, sv, well_conditioned};
}

// Checks matrix `index` of a batch result. `oracle_s` are the true singular values.
void check_one(const double* a, const Result& r, std::int64_t index, const SvdShape& shape,
               const std::vector<double>& oracle_s, const Tolerances& tol) {
  SCOPED_TRACE(::testing::Message()
               << "matrix " << index << " of " << shape.m << "x" << shape.n
               << (shape.full_matrices ? " full" : " thin") << (shape.compute_uv ? "" : " S only"));
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
    const double bound =
        tol.sv_norm * oracle_s[0] + (tol.per_value ? tol.sv_rel * oracle_s[i] : 0.0) + 1e-300;
    EXPECT_LE(std::fabs(s[i] - oracle_s[i]), bound)
        << "s[" << i << "] = " << s[i] << ", oracle " << oracle_s[i];
    if (tol.per_value) {
      EXPECT_LE(std::fabs(s[i] - oracle_s[i]), tol.sv_rel * oracle_s[i] + 1e-300)
          << "s[" << i << "] = " << s[i] << ", oracle " << oracle_s[i];
    }
  }
  if (!shape.compute_uv) return;
  const double* u = r.u.data() + index * m * uc;
  const double* vt = r.vt.data() + index * vr * n;
  EXPECT_LE(orthonormal_columns_error(u, m, uc), tol.orth) << "U columns not orthonormal";
  EXPECT_LE(orthonormal_rows_error(vt, vr, n), tol.orth) << "Vt rows not orthonormal";
  EXPECT_LE(reconstruction_error(a, u, s, vt, m, n, uc), tol.recon) << "A != U S Vt";
}

// Random matrix, every option combination, checked against LAPACK.
template <typename T>
void check_random(Rng& rng, std::int64_t m, std::int64_t n, std::int64_t batch = 1) {
  const auto a = ::gcompute::testing::random_uniform<T>(rng, batch * m * n);
  const std::vector<double> ad(a.begin(), a.end());  // exactly the T values
  for (const bool full : {false, true}) {
    for (const bool uv : {true, false}) {
      if (!uv && full) continue;
      SvdShape shape;
      shape.batch = batch;
      shape.m = m;
      shape.n = n;
      shape.dtype = dtype_of<T>();
      shape.full_matrices = full;
      shape.compute_uv = uv;
      const Result r = run_svd<T>(ad, shape);
      EXPECT_TRUE(batch == 0 || r.info.converged) << m << "x" << n;
      EXPECT_LE(r.info.sweeps, kSvdDefaultMaxSweeps);
      for (std::int64_t b = 0; b < batch; ++b) {
        const std::vector<double> ab(ad.begin() + b * m * n, ad.begin() + (b + 1) * m * n);
        const auto lap = lapack_svd(ab, m, n, false);
        ASSERT_EQ(lap.info, 0);
        // Each value is checked to sv_rel relative to itself only where the matrix is well
        // conditioned (the errors are ~eps * sigma_1, so f32 needs sigma_p > ~sigma_1 / 20);
        // otherwise relative to sigma_1.
        const double well_ratio = std::is_same_v<T, float> ? 0.05 : 1e-3;
        const bool well = lap.s.empty() || lap.s.back() > well_ratio * lap.s.front();
        check_one(ab.data(), r, b, shape, lap.s, default_tolerances<T>(m, n, well));
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

const std::vector<std::pair<std::int64_t, std::int64_t>> kShapes = {
    {1, 1},   {1, 7},   {7, 1},   {2, 2},   {3, 2},   {2, 3},   {40, 7}, {7, 40},
    {33, 33}, {37, 29}, {29, 37}, {64, 64}, {100, 3}, {3, 100}, {65, 1}, {1, 65}};

TEST(CpuSvd, F64RandomShapesAgainstLapack) {
  GC_SEEDED_RNG(rng);
  for (const auto& [m, n] : kShapes) {
    check_random<double>(rng, m, n);
    if (HasFatalFailure()) return;
  }
}

TEST(CpuSvd, F32RandomShapesAgainstLapack) {
  GC_SEEDED_RNG(rng);
  for (const auto& [m, n] : kShapes) {
    check_random<float>(rng, m, n);
    if (HasFatalFailure()) return;
  }
}

TEST(CpuSvd, BatchedMatricesAreIndependent) {
  GC_SEEDED_RNG(rng);
  check_random<double>(rng, 13, 9, 7);
  check_random<float>(rng, 9, 13, 5);
  check_random<double>(rng, 4, 4, 1);
}

TEST(CpuSvd, ZeroSizeShapes) {
  for (const auto& [m, n] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 0}, {0, 5}, {5, 0}}) {
    for (const bool full : {false, true}) {
      SvdShape shape;
      shape.batch = 2;
      shape.m = m;
      shape.n = n;
      shape.full_matrices = full;
      const Result r = run_svd<double>({}, shape);
      EXPECT_TRUE(r.info.converged);
      // Full matrices of a zero-size A are still orthogonal (identity-like) squares.
      for (std::int64_t b = 0; b < 2; ++b) {
        EXPECT_LE(
            orthonormal_columns_error(r.u.data() + b * m * svd_u_cols(shape), m, svd_u_cols(shape)),
            1e-15);
        EXPECT_LE(
            orthonormal_rows_error(r.vt.data() + b * svd_vt_rows(shape) * n, svd_vt_rows(shape), n),
            1e-15);
      }
    }
  }
  SvdShape empty;
  empty.batch = 0;
  empty.m = empty.n = 4;
  EXPECT_TRUE(cpu::svd_jacobi(nullptr, nullptr, nullptr, nullptr, empty).ok());
}

TEST(CpuSvd, IllConditionedF64) {
  // Condition number 1e6, singular values spread log-uniformly (planted: A = Q1 S Q2^T).
  GC_SEEDED_RNG(rng);
  for (const auto& [m, n] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{60, 60}, {80, 45}, {45, 80}}) {
    const std::int64_t p = std::min(m, n);
    std::vector<double> sigma(static_cast<std::size_t>(p));
    for (std::int64_t i = 0; i < p; ++i) sigma[i] = std::pow(10.0, -6.0 * i / (p - 1));
    const auto a = matrix_with_singular_values(rng, m, n, sigma);
    for (const bool full : {false, true}) {
      SvdShape shape;
      shape.m = m;
      shape.n = n;
      shape.full_matrices = full;
      const Result r = run_svd<double>(a, shape);
      EXPECT_TRUE(r.info.converged);
      Tolerances tol = default_tolerances<double>(m, n, false);
      check_one(a.data(), r, 0, shape, sigma, tol);
      // And against LAPACK on the matrix as stored.
      check_one(a.data(), r, 0, shape, lapack_svd(a, m, n, false).s, tol);
      // Jacobi is accurate for the small values too: they are known to ~1e-9 relative here
      // (the stored A differs from the planted one by rounding, ~1e-16 |A|).
      for (std::int64_t i = 0; i < p; ++i) {
        EXPECT_NEAR(r.s[i], sigma[i], 1e-8 * sigma[i] + 1e-15) << i;
      }
    }
  }
}

TEST(CpuSvd, RankDeficientCompletesOrthonormalU) {
  GC_SEEDED_RNG(rng);
  for (const auto& [m, n, rank] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {30, 20, 5}, {20, 30, 5}, {25, 25, 1}, {12, 4, 3}}) {
    const std::int64_t p = std::min(m, n);
    std::vector<double> sigma(static_cast<std::size_t>(p), 0.0);
    for (std::int64_t i = 0; i < rank; ++i) sigma[i] = 1.0 + rng.uniform(0, 3);
    std::sort(sigma.rbegin(), sigma.rend());
    const auto a = matrix_with_singular_values(rng, m, n, sigma);
    for (const bool full : {false, true}) {
      SvdShape shape;
      shape.m = m;
      shape.n = n;
      shape.full_matrices = full;
      const Result r = run_svd<double>(a, shape);
      EXPECT_TRUE(r.info.converged);
      check_one(a.data(), r, 0, shape, sigma, default_tolerances<double>(m, n, false));
    }
  }
}

TEST(CpuSvd, ExactlyZeroColumnsRowsAndMatrix) {
  GC_SEEDED_RNG(rng);
  for (const auto& [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {9, 6}, {6, 9}, {7, 7}, {1, 1}, {1, 5}, {5, 1}}) {
    std::vector<double> a = ::gcompute::testing::random_uniform<double>(rng, m * n);
    std::vector<double> zero(a.size(), 0.0);
    std::vector<double> dup = a;
    for (std::int64_t i = 0; i < m; ++i) {
      if (n > 2) a[i * n + 1] = a[i * n + n - 1] = 0;                                // zero columns
      for (std::int64_t j = 0; j < n; ++j) dup[i * n + j] = a[i * n + 0] * (j + 1);  // rank 1
    }
    if (m > 3) std::fill(a.begin() + 2 * n, a.begin() + 3 * n, 0.0);  // a zero row
    for (const auto* mat : {&a, &zero, &dup}) {
      for (const bool full : {false, true}) {
        for (const DType t : {DType::kF64, DType::kF32}) {
          SvdShape shape;
          shape.m = m;
          shape.n = n;
          shape.full_matrices = full;
          shape.dtype = t;
          const bool f32 = t == DType::kF32;
          std::vector<double> in = *mat;
          if (f32) {
            for (double& x : in) x = static_cast<float>(x);
          }
          const Result r = f32 ? run_svd<float>(in, shape) : run_svd<double>(in, shape);
          EXPECT_TRUE(r.info.converged);
          Tolerances tol = f32 ? default_tolerances<float>(m, n, false)
                               : default_tolerances<double>(m, n, false);
          check_one(in.data(), r, 0, shape, lapack_svd(in, m, n, false).s, tol);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(CpuSvd, ExtremeScalesKeepAccuracy) {
  GC_SEEDED_RNG(rng);
  const auto base = ::gcompute::testing::random_uniform<double>(rng, 12 * 8);
  const auto ref = lapack_svd(base, 12, 8, false).s;
  for (const double scale : {1e-300, 1e-200, 1e200, 1e300, 4.9e-324 * 1e6}) {
    std::vector<double> a(base);
    for (double& x : a) x *= scale;
    SvdShape shape;
    shape.m = 12;
    shape.n = 8;
    const Result r = run_svd<double>(a, shape);
    std::vector<double> want(ref);
    for (double& x : want) x *= scale;
    // The tiniest scale is subnormal: ~20 significant bits in the input and in S itself.
    Tolerances tol = default_tolerances<double>(12, 8, true);
    if (scale < 1e-300) tol.sv_rel = tol.sv_norm = tol.recon = 1e-5;
    check_one(a.data(), r, 0, shape, scale < 1e-300 ? lapack_svd(a, 12, 8, false).s : want, tol);
  }
  for (const double scale : {1e-30, 1e30}) {
    std::vector<double> a(base);
    for (double& x : a) x = static_cast<float>(x * scale);
    SvdShape shape;
    shape.m = 12;
    shape.n = 8;
    shape.dtype = DType::kF32;
    const Result r = run_svd<float>(a, shape);
    check_one(a.data(), r, 0, shape, lapack_svd(a, 12, 8, false).s,
              default_tolerances<float>(12, 8, true));
  }
}

TEST(CpuSvd, SweepLimitIsNotAnError) {
  GC_SEEDED_RNG(rng);
  const auto a = ::gcompute::testing::random_uniform<double>(rng, 30 * 30);
  SvdShape shape;
  shape.m = shape.n = 30;
  shape.max_sweeps = 1;
  const Result r = run_svd<double>(a, shape);
  EXPECT_EQ(r.info.sweeps, 1);
  EXPECT_FALSE(r.info.converged);
  for (std::int64_t i = 0; i < 30; ++i) {
    EXPECT_TRUE(std::isfinite(r.s[i]) && r.s[i] >= 0);
    if (i > 0) {
      EXPECT_LE(r.s[i], r.s[i - 1]);
    }
  }
  // A looser tolerance converges in no more sweeps than the default one.
  shape.max_sweeps = 0;
  const Result strict = run_svd<double>(a, shape);
  shape.tolerance = 1e-6;
  const Result loose = run_svd<double>(a, shape);
  EXPECT_TRUE(strict.info.converged && loose.info.converged);
  EXPECT_LE(loose.info.sweeps, strict.info.sweeps);
  EXPECT_GE(strict.info.sweeps, 3);
}

TEST(CpuSvd, CancelledByStopToken) {
  GC_SEEDED_RNG(rng);
  std::atomic<bool> flag{true};
  std::vector<double> a = ::gcompute::testing::random_uniform<double>(rng, 16);
  std::vector<double> s(4), u(16), vt(16);
  SvdShape shape;
  shape.m = shape.n = 4;
  absl::StatusOr<SvdInfo> r =
      cpu::svd_jacobi(a.data(), s.data(), u.data(), vt.data(), shape, StopToken(&flag));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();

  // Cancelled while running: a 400x400 matrix takes many sweeps of tens of milliseconds.
  const std::int64_t big = 400;
  a = ::gcompute::testing::random_uniform<double>(rng, big * big);
  s.resize(big);
  u.resize(big * big);
  vt.resize(big * big);
  shape.m = shape.n = big;
  shape.batch = 1;
  flag = false;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    flag = true;
  });
  const auto start = std::chrono::steady_clock::now();
  r = cpu::svd_jacobi(a.data(), s.data(), u.data(), vt.data(), shape, StopToken(&flag));
  canceller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(CpuSvd, RejectsInvalidInput) {
  double buf[16] = {};
  auto code = [&](SvdShape s) { return cpu::svd_jacobi(buf, buf, buf, buf, s).status().code(); };
  SvdShape s;
  s.m = s.n = 2;
  SvdShape bad = s;
  bad.m = -1;
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad = s;
  bad.dtype = DType::kF16;
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad = s;
  bad.tolerance = 1.0;
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  bad = s;
  bad.max_sweeps = -1;
  EXPECT_EQ(code(bad), absl::StatusCode::kInvalidArgument);
  double nan_input[4] = {1, 2, std::numeric_limits<double>::quiet_NaN(), 4};
  double out[16];
  const absl::Status st = cpu::svd_jacobi(nan_input, out, out, out, s).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("(1, 0)"), absl::string_view::npos) << st;
}

}  // namespace
}  // namespace gcompute::kernels
