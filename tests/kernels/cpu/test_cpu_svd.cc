// SPDX-License-Identifier: Apache-2.0
// cpu::svd, every method in f32 and f64: results checked for what an SVD must be (orthonormal U
// and V, A = U S Vt, S descending) and singular values against LAPACK's dgesvd in double (a
// driver none of the methods uses) or against the planted values of a constructed matrix.
// Shapes: 1x1, single rows and columns, primes, tall, wide, batches, zero sizes, rank
// deficiency, exact zeros, extreme scales. Plus cancellation, the sweep limit and bad input.
#include <cblas.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <tuple>
#include <vector>

#include "kernels/cpu/lapack_cancel.hpp"
#include "kernels/cpu/svd_check.hpp"
#include "support/status_checks.hpp"
#include "support/stop_after.hpp"

namespace gcompute::kernels::svd_test {
namespace {

using ::gcompute::testing::lapack_svd;
using ::gcompute::testing::matrix_with_singular_values;
using ::gcompute::testing::Rng;

class CpuSvd : public ::testing::TestWithParam<Case> {
 protected:
  // A random matrix in every output mode, each matrix of the batch against dgesvd.
  void check_random(Rng& rng, std::int64_t m, std::int64_t n, std::int64_t batch = 1) {
    const Case c = GetParam();
    const auto a =
        round_to(c.dtype, ::gcompute::testing::random_uniform<double>(rng, batch * m * n));
    for (const bool full : {false, true}) {
      for (const bool uv : {true, false}) {
        if (!uv && full) continue;
        const SvdShape shape = make_shape(c, m, n, batch, full, uv);
        const Result r = run(a, shape);
        ASSERT_TRUE(r.status.ok()) << r.status;
        EXPECT_TRUE(r.info.converged) << m << "x" << n;
        for (std::int64_t b = 0; b < batch; ++b) {
          const std::vector<double> ab(a.begin() + b * m * n, a.begin() + (b + 1) * m * n);
          const auto lap = lapack_svd(ab, m, n, false);
          ASSERT_EQ(lap.info, 0);
          check_one(ab.data(), r, b, shape, lap.s, default_tolerances(c.dtype, m, n));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
};

INSTANTIATE_TEST_SUITE_P(Methods, CpuSvd, ::testing::ValuesIn(all_cases()), case_name);

const std::vector<std::pair<std::int64_t, std::int64_t>> kShapes = {
    {1, 1},  {1, 7},   {7, 1},   {2, 2},    {3, 2},    {2, 3},   {40, 7},
    {7, 40}, {33, 33}, {37, 29}, {29, 37},  {64, 64},  {100, 3}, {3, 100},
    {65, 1}, {1, 65},  {97, 97}, {131, 89}, {89, 131}, {211, 13}};

TEST_P(CpuSvd, RandomShapesAgainstLapack) {
  GC_SEEDED_RNG(rng);
  for (const auto& [m, n] : kShapes) {
    check_random(rng, m, n);
    if (HasFatalFailure()) return;
  }
}

// Small matrices run spread over threads, large ones one after another: both must keep the
// matrices of a batch apart.
TEST_P(CpuSvd, BatchedMatricesAreIndependent) {
  GC_SEEDED_RNG(rng);
  check_random(rng, 13, 9, 7);
  check_random(rng, 9, 13, 5);
  check_random(rng, 1, 1, 3);
  check_random(rng, 150, 110, 3);
}

TEST_P(CpuSvd, ZeroSizeShapes) {
  for (const auto& [m, n] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 0}, {0, 5}, {5, 0}}) {
    for (const bool full : {false, true}) {
      const SvdShape shape = make_shape(GetParam(), m, n, 2, full);
      const Result r = run({}, shape);
      ASSERT_TRUE(r.status.ok()) << r.status;
      EXPECT_TRUE(r.info.converged);
      // Full factors of a zero-size A are still orthogonal squares.
      for (std::int64_t b = 0; b < 2; ++b) {
        EXPECT_EQ(u_orthonormality_error(r, shape, b), 0.0);
        EXPECT_EQ(vt_orthonormality_error(r, shape, b), 0.0);
      }
    }
  }
  SvdShape empty = make_shape(GetParam(), 4, 4, 0);
  EXPECT_TRUE(cpu::svd(nullptr, nullptr, nullptr, nullptr, empty).ok());
}

TEST_P(CpuSvd, RankDeficientCompletesOrthonormalU) {
  GC_SEEDED_RNG(rng);
  const Case c = GetParam();
  for (const auto& [m, n, rank] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {30, 20, 5}, {20, 30, 5}, {25, 25, 1}, {12, 4, 3}, {40, 40, 39}}) {
    const std::int64_t p = std::min(m, n);
    std::vector<double> sigma(static_cast<std::size_t>(p), 0.0);
    for (std::int64_t i = 0; i < rank; ++i) sigma[i] = 1.0 + rng.uniform(0, 3);
    std::sort(sigma.rbegin(), sigma.rend());
    const auto a = round_to(c.dtype, matrix_with_singular_values(rng, m, n, sigma));
    for (const bool full : {false, true}) {
      const SvdShape shape = make_shape(c, m, n, 1, full);
      const Result r = run(a, shape);
      EXPECT_TRUE(r.info.converged);
      check_one(a.data(), r, 0, shape, sigma, default_tolerances(c.dtype, m, n));
    }
  }
}

TEST_P(CpuSvd, ExactlyZeroColumnsRowsAndMatrix) {
  GC_SEEDED_RNG(rng);
  const Case c = GetParam();
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
        const std::vector<double> in = round_to(c.dtype, *mat);
        const SvdShape shape = make_shape(c, m, n, 1, full);
        const Result r = run(in, shape);
        EXPECT_TRUE(r.info.converged);
        check_one(in.data(), r, 0, shape, lapack_svd(in, m, n, false).s,
                  default_tolerances(c.dtype, m, n));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(CpuSvd, ExtremeScalesKeepAccuracy) {
  GC_SEEDED_RNG(rng);
  const Case c = GetParam();
  const auto base = round_to(c.dtype, ::gcompute::testing::random_uniform<double>(rng, 12 * 8));
  const auto ref = lapack_svd(base, 12, 8, false).s;
  // Powers of two, so that the scaled input is exact and its values are ref * scale.
  const std::vector<int> exponents = c.dtype == DType::kF64 ? std::vector<int>{-990, -600, 600, 990}
                                                            : std::vector<int>{-100, -60, 60, 100};
  for (const int e : exponents) {
    std::vector<double> a(base);
    for (double& x : a) x = std::ldexp(x, e);
    for (const auto& [m, n] :
         std::vector<std::pair<std::int64_t, std::int64_t>>{{12, 8}, {8, 12}}) {
      SCOPED_TRACE(::testing::Message() << "scale 2^" << e << ", " << m << "x" << n);
      const SvdShape shape = make_shape(c, m, n);
      const Result r = run(a, shape);  // 8 x 12 reads the same 96 values as another matrix
      std::vector<double> want = m == 12 ? ref : lapack_svd(a, m, n, false).s;
      if (m == 12) {
        for (double& x : want) x = std::ldexp(x, e);
      }
      check_one(a.data(), r, 0, shape, want, default_tolerances(c.dtype, m, n));
    }
  }
}

// Condition numbers 1e6 .. 1e12 (f64) and 1e4 .. 1e6 (f32), singular values spread
// log-uniformly (planted: A = Q1 S Q2^T): every method keeps residual and orthogonality within
// 50 * n * eps and the values within 10 * n * eps * sigma_1.
TEST_P(CpuSvd, IllConditioned) {
  GC_SEEDED_RNG(rng);
  const Case c = GetParam();
  const std::vector<double> conditions =
      c.dtype == DType::kF64 ? std::vector<double>{1e6, 1e9, 1e12} : std::vector<double>{1e4, 1e6};
  for (const double cond : conditions) {
    for (const auto& [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {60, 60}, {80, 45}, {45, 80}, {150, 150}}) {
      SCOPED_TRACE(::testing::Message() << "cond " << cond);
      const std::int64_t p = std::min(m, n);
      std::vector<double> sigma(static_cast<std::size_t>(p));
      for (std::int64_t i = 0; i < p; ++i) {
        sigma[i] = std::pow(cond, -static_cast<double>(i) / static_cast<double>(p - 1));
      }
      const auto a = round_to(c.dtype, matrix_with_singular_values(rng, m, n, sigma));
      for (const bool full : {false, true}) {
        const SvdShape shape = make_shape(c, m, n, 1, full);
        const Result r = run(a, shape);
        EXPECT_TRUE(r.info.converged);
        // QDWH needs at most 6 iterations for cond <= 1e16 when its lower bound on sigma_min is
        // right; the condition estimate may cost one or two more.
        if (c.method == SvdMethod::kPolar) {
          EXPECT_GE(r.info.sweeps, 1);
          EXPECT_LE(r.info.sweeps, 8);
        }
        check_one(a.data(), r, 0, shape, sigma, default_tolerances(c.dtype, m, n));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(CpuSvd, CancelledBeforeStartAndBetweenMatrices) {
  GC_SEEDED_RNG(rng);
  std::atomic<bool> flag{true};
  SvdShape shape = make_shape(GetParam(), 4, 4);
  Result r = run(::gcompute::testing::random_uniform<double>(rng, 16), shape, StopToken(&flag));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kCancelled) << r.status;

  // A batch of 200 matrices of 140 x 140 (handled one after another) takes well over 100 ms;
  // cancelled after 20 ms it stops between two of them or during one.
  shape = make_shape(GetParam(), 140, 140, 200);
  const auto a = ::gcompute::testing::random_uniform<double>(rng, 200 * 140 * 140);
  const auto took = ::gcompute::testing::expect_cancelled_midway(
      std::chrono::milliseconds(20), [&](StopToken stop) { return run(a, shape, stop).status; });
  EXPECT_LT(took, std::chrono::seconds(30));
}

// One LAPACK call of a large matrix takes seconds and cannot be interrupted: the caller still
// gets CANCELLED at once, and the call finishes on its own copies in the background.
TEST(CpuSvdCancel, ALargeLapackCallAnswersACancelAtOnce) {
  GC_SEEDED_RNG(rng);
  const Case gesdd{DType::kF64, SvdMethod::kAuto};
  const std::int64_t n = 1500;  // ?gesdd: about 2 s on two cores
  const auto a = ::gcompute::testing::random_uniform<double>(rng, n * n);
  ASSERT_NO_FATAL_FAILURE(::gcompute::testing::expect_lapack_cancel_answered_at_once(
      [&](StopToken stop) { return run(a, make_shape(gesdd, n, n), stop).status; }));
  // The next call still gets right answers (it may wait for the abandoned one's core).
  const auto small = ::gcompute::testing::random_uniform<double>(rng, 300 * 200);
  const Result ok = run(small, make_shape(gesdd, 300, 200));
  ASSERT_TRUE(ok.status.ok()) << ok.status;
  const auto lap = lapack_svd(small, 300, 200, false);
  ASSERT_EQ(lap.info, 0);
  check_one(small.data(), ok, 0, make_shape(gesdd, 300, 200), lap.s,
            default_tolerances(DType::kF64, 300, 200));
}

// Invalid shapes and inputs give precise errors; LAPACK's own limits are not the caller's.
TEST_P(CpuSvd, RejectsInvalidInput) {
  double buf[16] = {};
  const SvdShape s = make_shape(GetParam(), 2, 2);
  ::gcompute::testing::expect_each_change_invalid(
      s,
      {[](SvdShape& bad) { bad.m = -1; }, [](SvdShape& bad) { bad.dtype = DType::kF16; },
       [](SvdShape& bad) { bad.tolerance = 1.0; }, [](SvdShape& bad) { bad.max_sweeps = -1; },
       [](SvdShape& bad) { bad.m = bad.n = std::int64_t{1} << 31; }},
      [&](const SvdShape& bad) { return cpu::svd(buf, buf, buf, buf, bad).status(); });
  SvdShape bad = s;
  bad.method = static_cast<SvdMethod>(7);
  ::gcompute::testing::expect_status(cpu::svd(buf, buf, buf, buf, bad).status(),
                                     absl::StatusCode::kInvalidArgument, "auto, jacobi or polar");
  EXPECT_EQ(cpu::svd(nullptr, buf, buf, buf, s).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu::svd(buf, buf, nullptr, buf, s).status().code(),
            absl::StatusCode::kInvalidArgument);

  std::vector<double> nan_input = {1, 2, std::numeric_limits<double>::quiet_NaN(), 4};
  SvdShape two = make_shape(GetParam(), 2, 2, 2);
  nan_input.insert(nan_input.begin(), {1, 0, 0, 1});  // matrix 1 has the NaN
  ::gcompute::testing::expect_status(run(nan_input, two).status,
                                     absl::StatusCode::kFailedPrecondition,
                                     "matrix 1 has a non-finite element at (1, 0)");
}

// The iteration count: LAPACK's drivers report none (0); QDWH reports its iterations (at least
// 3 for condition number 1e6) and stops at max_sweeps (converged = false, outputs written).
TEST_P(CpuSvd, IterationsAndTheirLimit) {
  GC_SEEDED_RNG(rng);
  const Case c = GetParam();
  const std::int64_t n = 40;
  std::vector<double> sigma(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) sigma[i] = std::pow(1e-6, static_cast<double>(i) / (n - 1));
  const auto a = round_to(c.dtype, matrix_with_singular_values(rng, n, n, sigma));
  SvdShape shape = make_shape(c, n, n);
  const Result full = run(a, shape);
  ASSERT_TRUE(full.status.ok()) << full.status;
  EXPECT_TRUE(full.info.converged);
  if (c.method != SvdMethod::kPolar) {
    EXPECT_EQ(full.info.sweeps, 0);
    return;
  }
  EXPECT_GE(full.info.sweeps, 3);
  shape.max_sweeps = 1;
  const Result one = run(a, shape);
  ASSERT_TRUE(one.status.ok()) << one.status;
  EXPECT_EQ(one.info.sweeps, 1);
  EXPECT_FALSE(one.info.converged);
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(std::isfinite(one.s[i]) && one.s[i] >= 0);
    if (i > 0) {
      EXPECT_LE(one.s[i], one.s[i - 1]);
    }
  }
}

}  // namespace
}  // namespace gcompute::kernels::svd_test

namespace gcompute::kernels::svd_test {
namespace {

// With a multi-threaded OpenBLAS the LAPACK calls of the process take turns: a second call
// waits while a long one runs, stays cancellable while it waits, and both results are right.
TEST(CpuSvdTurns, ConcurrentCallsTakeTurnsAndStayCancellable) {
  if (openblas_get_num_threads() <= 1) GTEST_SKIP() << "OpenBLAS is single-threaded: no turns";
  GC_SEEDED_RNG(rng);
  const Case jacobi{DType::kF64, SvdMethod::kJacobi};
  const std::int64_t n = 800;  // ?gejsv: 1-3 s on two cores (at 500 it sometimes ended in 0.3 s)
  const auto big = ::gcompute::testing::random_uniform<double>(rng, n * n);
  // Buffers ready before the thread starts, so that it reaches LAPACK at once.
  std::vector<double> s(n), u(n * n), vt(n * n);
  absl::Status long_status;
  std::thread long_call([&] {
    long_status =
        cpu::svd(big.data(), s.data(), u.data(), vt.data(), make_shape(jacobi, n, n)).status();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  const auto small = ::gcompute::testing::random_uniform<double>(rng, 40 * 30);
  const Result waited =
      ::gcompute::testing::call_stopped_after(std::chrono::milliseconds(100), [&](StopToken stop) {
        return run(small, make_shape(jacobi, 40, 30), stop);
      }).result;
  long_call.join();
  EXPECT_EQ(waited.status.code(), absl::StatusCode::kCancelled) << waited.status;
  EXPECT_NE(waited.status.message().find("waiting for another LAPACK call"),
            absl::string_view::npos)
      << waited.status;
  ASSERT_TRUE(long_status.ok()) << long_status;
  EXPECT_LE(
      ::gcompute::testing::reconstruction_error(big.data(), u.data(), s.data(), vt.data(), n, n, n),
      50 * n * epsilon(DType::kF64));
  // Uncontended, the small one runs.
  const Result alone = run(small, make_shape(jacobi, 40, 30));
  check_one(small.data(), alone, 0, make_shape(jacobi, 40, 30), lapack_svd(small, 40, 30, false).s,
            default_tolerances(DType::kF64, 40, 30));
}

}  // namespace
}  // namespace gcompute::kernels::svd_test
