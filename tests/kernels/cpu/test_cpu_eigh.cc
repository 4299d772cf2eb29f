// SPDX-License-Identifier: Apache-2.0
// cpu::eigh in f32 and f64: eigenvalues ascending and against LAPACK dsyev in double (implicit
// QL/QR, a routine eigh does not use) or planted values; A V = V diag(w) and V^T V = I in long
// double. Plus batches, zero sizes, repeated eigenvalues, the symmetry check, cancellation and
// bad input.
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gcompute/kernels/cpu/eigh.hpp"
#include "kernels/cpu/lapack_cancel.hpp"
#include "support/dtype_param.hpp"
#include "support/eigenpair_check.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"
#include "support/status_checks.hpp"

namespace gcompute::kernels {
namespace {

using ::gcompute::testing::lapack_eigh;
using ::gcompute::testing::matrix_with_eigenvalues;
using ::gcompute::testing::Rng;

double epsilon(DType t) {
  return t == DType::kF32 ? std::numeric_limits<float>::epsilon()
                          : std::numeric_limits<double>::epsilon();
}

std::vector<double> round_to(DType t, std::vector<double> a) {
  if (t == DType::kF32) {
    for (double& x : a) x = static_cast<float>(x);
  }
  return a;
}

// A random symmetric n x n matrix (exactly symmetric), entries uniform in [-1, 1).
std::vector<double> random_symmetric(Rng& rng, std::int64_t n) {
  std::vector<double> a(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = rng.uniform(-1, 1);
  }
  return a;
}

struct Result {
  absl::Status status;
  std::vector<double> w, v;
  EighInfo info;
};

template <typename T>
Result run_typed(const std::vector<double>& a, const EighShape& shape, StopToken stop) {
  std::vector<T> at(a.begin(), a.end());
  auto w = ::gcompute::testing::poisoned<T>(static_cast<std::size_t>(shape.batch * shape.n));
  auto v =
      ::gcompute::testing::poisoned<T>(static_cast<std::size_t>(shape.batch * shape.n * shape.n));
  absl::StatusOr<EighInfo> info =
      cpu::eigh(at.data(), w.data(), shape.compute_vectors ? v.data() : nullptr, shape, stop);
  Result r;
  r.status = info.status();
  if (info.ok()) r.info = *info;
  r.w.assign(w.begin(), w.end());
  r.v.assign(v.begin(), v.end());
  if (!shape.compute_vectors) {
    for (T x : v) EXPECT_TRUE(std::isnan(x));
  }
  return r;
}

Result run(const std::vector<double>& a, const EighShape& shape, StopToken stop = {}) {
  return shape.dtype == DType::kF32 ? run_typed<float>(a, shape, stop)
                                    : run_typed<double>(a, shape, stop);
}

EighShape make_shape(DType t, std::int64_t n, std::int64_t batch = 1, bool vectors = true) {
  EighShape s;
  s.batch = batch;
  s.n = n;
  s.dtype = t;
  s.compute_vectors = vectors;
  return s;
}

// Matrix `index` of a batch: w ascending and within 10 n eps max|w| of `want`; with vectors,
// residual and orthogonality within 50 n eps.
void check_one(const double* a, const Result& r, std::int64_t index, const EighShape& shape,
               const std::vector<double>& want) {
  SCOPED_TRACE(::testing::Message()
               << "matrix " << index << " n=" << shape.n << " " << dtype_name(shape.dtype)
               << (shape.compute_vectors ? "" : " values only"));
  ASSERT_TRUE(r.status.ok()) << r.status;
  const std::int64_t n = shape.n;
  const double eps = epsilon(shape.dtype), size = static_cast<double>(std::max<std::int64_t>(n, 1));
  const double* w = r.w.data() + index * n;
  double scale = 0;
  for (double x : want) scale = std::max(scale, std::fabs(x));
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(w[i])) << "w[" << i << "] = " << w[i];
    if (i > 0) {
      ASSERT_LE(w[i - 1], w[i]) << "not ascending at " << i;
    }
    EXPECT_LE(std::fabs(w[i] - want[i]), 10 * size * eps * scale + 1e-300)
        << "w[" << i << "] = " << w[i] << ", oracle " << want[i];
  }
  if (!shape.compute_vectors) return;
  const double* v = r.v.data() + index * n * n;
  ::gcompute::testing::expect_eigenpairs(a, v, w, n, 50 * size * eps);
}

// A batch held in the element type (what find_max_asymmetry reads).
struct Typed {
  std::vector<float> f;
  std::vector<double> d;
  const void* data() const { return f.empty() ? static_cast<const void*>(d.data()) : f.data(); }
};

Typed typed(DType t, const std::vector<double>& x) {
  Typed r;
  if (t == DType::kF32) {
    r.f.assign(x.begin(), x.end());
  } else {
    r.d = x;
  }
  return r;
}

using CpuEigh = ::gcompute::testing::FloatTypeTest;

INSTANTIATE_TEST_SUITE_P(Types, CpuEigh, ::testing::Values(DType::kF32, DType::kF64),
                         ::gcompute::testing::dtype_param_name);

TEST_P(CpuEigh, RandomSymmetricAgainstDsyev) {
  for (const std::int64_t n : {1, 2, 3, 7, 33, 64, 97, 150}) {
    const auto a = round_to(dtype_, random_symmetric(rng_, n));
    const auto ref = lapack_eigh(a, n, false);
    ASSERT_EQ(ref.info, 0);
    for (const bool vectors : {true, false}) {
      const EighShape shape = make_shape(dtype_, n, 1, vectors);
      const Result r = run(a, shape);
      EXPECT_TRUE(r.info.converged);
      check_one(a.data(), r, 0, shape, ref.w);
      if (HasFatalFailure()) return;
    }
  }
}

// Planted spectra: repeated values (an eigenspace of dimension 5), zeros, negatives, a wide
// range; the vectors of a repeated value are any orthonormal basis, which residual and
// orthogonality accept.
TEST_P(CpuEigh, PlantedSpectra) {
  const std::int64_t n = 40;
  std::vector<std::vector<double>> spectra;
  std::vector<double> repeated(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) repeated[i] = i < 5 ? 2.0 : rng_.uniform(-3, 3);
  spectra.push_back(repeated);
  std::vector<double> with_zeros(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) with_zeros[i] = i % 3 == 0 ? 0.0 : rng_.uniform(-1, 1);
  spectra.push_back(with_zeros);
  std::vector<double> wide(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) wide[i] = (i % 2 ? -1 : 1) * std::pow(10.0, -8.0 * i / n);
  spectra.push_back(wide);
  for (std::vector<double>& lambda : spectra) {
    const auto a = round_to(dtype_, matrix_with_eigenvalues(rng_, lambda));
    std::sort(lambda.begin(), lambda.end());
    const EighShape shape = make_shape(dtype_, n);
    const Result r = run(a, shape);
    EXPECT_TRUE(r.info.converged);
    check_one(a.data(), r, 0, shape, lambda);
  }
}

TEST_P(CpuEigh, BatchedMatricesAreIndependent) {
  for (const auto& [n, batch] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{12, 9}, {1, 4}, {130, 3}}) {
    std::vector<double> a;
    for (std::int64_t b = 0; b < batch; ++b) {
      const auto m = round_to(dtype_, random_symmetric(rng_, n));
      a.insert(a.end(), m.begin(), m.end());
    }
    for (const bool vectors : {true, false}) {
      const EighShape shape = make_shape(dtype_, n, batch, vectors);
      const Result r = run(a, shape);
      ASSERT_TRUE(r.status.ok()) << r.status;
      for (std::int64_t b = 0; b < batch; ++b) {
        const std::vector<double> ab(a.begin() + b * n * n, a.begin() + (b + 1) * n * n);
        check_one(ab.data(), r, b, shape, lapack_eigh(ab, n, false).w);
      }
    }
  }
}

TEST_P(CpuEigh, ZeroSizesZeroMatrixAndIdentity) {
  EXPECT_TRUE(run({}, make_shape(dtype_, 0, 3)).status.ok());
  EXPECT_TRUE(cpu::eigh(nullptr, nullptr, nullptr, make_shape(dtype_, 5, 0)).ok());
  const std::int64_t n = 6;
  std::vector<double> zero(n * n, 0.0), identity(n * n, 0.0);
  for (std::int64_t i = 0; i < n; ++i) identity[i * n + i] = 1.0;
  const EighShape shape = make_shape(dtype_, n);
  check_one(zero.data(), run(zero, shape), 0, shape, std::vector<double>(n, 0.0));
  check_one(identity.data(), run(identity, shape), 0, shape, std::vector<double>(n, 1.0));
}

TEST_P(CpuEigh, ExtremeScales) {
  const std::int64_t n = 10;
  const auto base = round_to(dtype_, random_symmetric(rng_, n));
  const auto ref = lapack_eigh(base, n, false).w;
  for (const int e :
       dtype_ == DType::kF64 ? std::vector<int>{-990, 990} : std::vector<int>{-100, 100}) {
    std::vector<double> a(base), want(ref);
    for (double& x : a) x = std::ldexp(x, e);
    for (double& x : want) x = std::ldexp(x, e);
    const EighShape shape = make_shape(dtype_, n);
    check_one(a.data(), run(a, shape), 0, shape, want);
  }
}

// find_max_asymmetry and check_symmetric: the worst pair is found and named, rounding-level
// asymmetry (a product B B^T from gemm) passes, and the tolerance is the documented one.
TEST_P(CpuEigh, SymmetryCheckNamesTheLargestAsymmetry) {
  const std::int64_t n = 9;
  std::vector<double> a;
  for (int b = 0; b < 3; ++b) {
    const auto m = round_to(dtype_, random_symmetric(rng_, n));
    a.insert(a.end(), m.begin(), m.end());
  }
  a[n * n + 3 * n + 4] = 3.0;  // matrix 1: (3, 4) is the largest element now
  EighShape shape = make_shape(dtype_, n, 3);
  Typed bytes = typed(dtype_, a);
  Asymmetry worst = find_max_asymmetry(bytes.data(), shape);
  EXPECT_EQ(worst.batch_index, 1);
  EXPECT_EQ(worst.row, 4);  // the lower-triangle element of the pair
  EXPECT_EQ(worst.col, 3);
  EXPECT_EQ(worst.upper, 3.0);
  EXPECT_EQ(worst.max_abs, 3.0);
  EXPECT_NEAR(worst.relative, std::fabs(worst.lower - 3.0) / 3.0, 1e-15);
  absl::Status st = check_symmetric(bytes.data(), shape);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("matrix 1 is not symmetric: a[4][3]"), absl::string_view::npos) << st;
  const Result r = run(a, shape);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kInvalidArgument) << r.status;

  // Just inside and just outside the tolerance, relative to the largest element.
  const double tol = effective_symmetry_tolerance(shape);
  EXPECT_EQ(tol, n * epsilon(dtype_));
  a[n * n + 3 * n + 4] = a[n * n + 4 * n + 3];  // symmetric again
  const double big = std::ldexp(1.0, 3);        // exact in both types
  a[2 * n * n] = big;                           // matrix 2, (0, 0)
  for (const auto& [factor, ok] : std::vector<std::pair<double, bool>>{{0.5, true}, {2.0, false}}) {
    std::vector<double> b = a;
    b[2 * n * n + 5 * n + 1] = b[2 * n * n + 1 * n + 5] + factor * tol * big;
    bytes = typed(dtype_, b);
    EXPECT_EQ(check_symmetric(bytes.data(), shape).ok(), ok) << factor;
  }
  shape.symmetry_tolerance = 0.5;  // the caller's own bound
  EXPECT_EQ(effective_symmetry_tolerance(shape), 0.5);

  // B B^T from gemm is symmetric only up to rounding; the default tolerance accepts it.
  const int m = 200, k = 300;
  std::vector<double> bm = ::gcompute::testing::random_normal<double>(rng_, m * k), c(m * m);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, m, k, 1.0, bm.data(), k, bm.data(), k,
              0.0, c.data(), m);
  const EighShape gram = make_shape(DType::kF64, m);
  EXPECT_TRUE(check_symmetric(c.data(), gram).ok()) << find_max_asymmetry(c.data(), gram).relative;
}

TEST_P(CpuEigh, RejectsInvalidInput) {
  double buf[16] = {};
  const EighShape s = make_shape(dtype_, 2);
  ::gcompute::testing::expect_each_change_invalid(
      s,
      {[](EighShape& bad) { bad.n = -1; }, [](EighShape& bad) { bad.dtype = DType::kI32; },
       [](EighShape& bad) { bad.symmetry_tolerance = 1.0; },
       [](EighShape& bad) { bad.symmetry_tolerance = -0.1; }},
      [&](const EighShape& bad) { return cpu::eigh(buf, buf, buf, bad).status(); });
  EXPECT_EQ(cpu::eigh(nullptr, buf, buf, s).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu::eigh(buf, buf, nullptr, s).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<double> nan_input = {1, 0, 0, 1, 1, 2, 2, std::numeric_limits<double>::infinity()};
  ::gcompute::testing::expect_status(run(nan_input, make_shape(dtype_, 2, 2)).status,
                                     absl::StatusCode::kFailedPrecondition,
                                     "matrix 1 has a non-finite element at (1, 1)");
}

TEST_P(CpuEigh, Cancelled) {
  std::atomic<bool> flag{true};
  Result r = run(random_symmetric(rng_, 4), make_shape(dtype_, 4), StopToken(&flag));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kCancelled) << r.status;
  // 300 matrices of 140 x 140, one after another, cancelled after 20 ms.
  std::vector<double> a;
  const auto m = random_symmetric(rng_, 140);
  for (int b = 0; b < 300; ++b) a.insert(a.end(), m.begin(), m.end());
  ::gcompute::testing::expect_cancelled_midway(std::chrono::milliseconds(20), [&](StopToken stop) {
    return run(a, make_shape(dtype_, 140, 300), stop).status;
  });
}

// ?syevd of a large matrix cannot be interrupted: the caller still gets CANCELLED at once.
TEST(CpuEighCancel, ALargeLapackCallAnswersACancelAtOnce) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 1800;  // about a second or more on two cores
  const auto a = random_symmetric(rng, n);
  ::gcompute::testing::expect_lapack_cancel_answered_at_once(
      [&](StopToken stop) { return run(a, make_shape(DType::kF64, n), stop).status; });
}

}  // namespace
}  // namespace gcompute::kernels
