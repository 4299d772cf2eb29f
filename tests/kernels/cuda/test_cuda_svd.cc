// SPDX-License-Identifier: Apache-2.0
// cuda::svd_jacobi and cuda::svd_polar against LAPACK's dgesvd (double precision) on fresh
// random inputs, plus the residual |A - U S Vt| / |A| and the orthogonality of U and Vt, computed
// on the host in double.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gcompute/kernels/cuda/svd.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/gpu.hpp"
#include "support/graded_svd.hpp"
#include "support/stop_after.hpp"

// LAPACK's Fortran interface (the LAPACKE wrappers are not in the linked library).
extern "C" {
void dgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, double* a,
             const int* lda, double* s, double* u, const int* ldu, double* vt, const int* ldvt,
             double* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau,
             double* work, const int* lwork, int* info);
}

namespace gcompute::kernels {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

using cuda::DeviceBuffer;

template <typename T>
constexpr DType dtype_of() {
  return sizeof(T) == 4 ? DType::kF32 : DType::kF64;
}

template <typename T>
double eps_of() {
  return std::numeric_limits<T>::epsilon();
}

/// Row-major m x n matrix with orthonormal columns (m >= n), from LAPACK's QR of a Gaussian one.
std::vector<double> random_orthonormal(int m, int n, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  std::vector<double> q(static_cast<std::size_t>(m) * n);  // column-major, ld m
  for (auto& x : q) x = nd(rng);
  std::vector<double> tau(n);
  int info = 0;
  int lwork = -1;
  double query = 0;
  dgeqrf_(&m, &n, q.data(), &m, tau.data(), &query, &lwork, &info);
  lwork = static_cast<int>(query);
  std::vector<double> work(std::max(1, lwork));
  dgeqrf_(&m, &n, q.data(), &m, tau.data(), work.data(), &lwork, &info);
  EXPECT_EQ(info, 0);
  lwork = -1;
  dorgqr_(&m, &n, &n, q.data(), &m, tau.data(), &query, &lwork, &info);
  lwork = static_cast<int>(query);
  work.assign(std::max(1, lwork), 0.0);
  dorgqr_(&m, &n, &n, q.data(), &m, tau.data(), work.data(), &lwork, &info);
  EXPECT_EQ(info, 0);
  std::vector<double> r(q.size());
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j)
      r[static_cast<std::size_t>(i) * n + j] = q[i + static_cast<std::size_t>(j) * m];
  }
  return r;
}

/// Row-major m x n matrix U diag(s) V^T with the given singular values (s.size() = min(m, n)).
std::vector<double> with_singular_values(int m, int n, const std::vector<double>& s,
                                         std::mt19937_64& rng) {
  const int p = std::min(m, n);
  const std::vector<double> u = random_orthonormal(m, p, rng);
  const std::vector<double> v = random_orthonormal(n, p, rng);
  std::vector<double> a(static_cast<std::size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int k = 0; k < p; ++k) acc += u[i * p + k] * s[k] * v[j * p + k];
      a[static_cast<std::size_t>(i) * n + j] = acc;
    }
  }
  return a;
}

/// kOnes, kIntegerRankOne and kRepeatedRow are rank-1 matrices whose columns are exact
/// multiples of one another, so that the rounding residues of rotations are too (issue 11).
/// kIntegerRankTwo ((i + 1)(j + 1) + i % 3 + 1) and kOnesWithZeroColumns (every third column
/// zero) are exactly rank-deficient in the same way.
enum class Kind {
  kGaussian,
  kIllConditioned,
  kRankDeficient,
  kZero,
  kZeroColumn,
  kOnes,
  kIntegerRankOne,
  kRepeatedRow,
  kIntegerRankTwo,
  kOnesWithZeroColumns
};

/// The kinds' names, in the order of Kind.
constexpr const char* kKindNames[] = {
    "gaussian", "ill-conditioned", "rank-deficient", "zero",           "zero column",
    "ones",     "integer rank 1",  "repeated row",   "integer rank 2", "ones with zero columns"};
static_assert(std::size(kKindNames) == static_cast<std::size_t>(Kind::kOnesWithZeroColumns) + 1,
              "one name a kind");

const char* kind_name(Kind kind) {
  return kKindNames[static_cast<std::size_t>(kind)];
}

std::vector<double> make_matrix(Kind kind, int m, int n, int rank, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  std::vector<double> a(static_cast<std::size_t>(m) * n, 0.0);
  const int p = std::min(m, n);
  switch (kind) {
    case Kind::kGaussian:
      for (auto& x : a) x = nd(rng);
      break;
    case Kind::kZeroColumn:
      for (auto& x : a) x = nd(rng);
      for (int i = 0; i < m; ++i) a[static_cast<std::size_t>(i) * n + n / 2] = 0;
      break;
    case Kind::kIllConditioned: {
      std::vector<double> s(p);
      for (int k = 0; k < p; ++k) s[k] = std::pow(10.0, p > 1 ? -6.0 * k / (p - 1) : 0.0);
      a = with_singular_values(m, n, s, rng);
      break;
    }
    case Kind::kRankDeficient: {
      std::vector<double> x(static_cast<std::size_t>(m) * rank),
          y(static_cast<std::size_t>(rank) * n);
      for (auto& e : x) e = nd(rng);
      for (auto& e : y) e = nd(rng);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double acc = 0;
          for (int k = 0; k < rank; ++k) acc += x[i * rank + k] * y[k * n + j];
          a[static_cast<std::size_t>(i) * n + j] = acc;
        }
      }
      break;
    }
    case Kind::kZero:
      break;
    case Kind::kOnes:
      for (auto& x : a) x = 1.0;
      break;
    case Kind::kIntegerRankOne:
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) a[static_cast<std::size_t>(i) * n + j] = (i + 1) * (j + 1);
      }
      break;
    case Kind::kRepeatedRow: {
      std::vector<double> row(n);
      for (auto& x : row) x = nd(rng);
      for (int i = 0; i < m; ++i) std::copy(row.begin(), row.end(), a.begin() + i * n);
      break;
    }
    case Kind::kIntegerRankTwo:
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          a[static_cast<std::size_t>(i) * n + j] = (i + 1) * (j + 1) + i % 3 + 1;
        }
      }
      break;
    case Kind::kOnesWithZeroColumns:
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) a[static_cast<std::size_t>(i) * n + j] = j % 3 == 1 ? 0.0 : 1.0;
      }
      break;
  }
  return a;
}

/// LAPACK singular values of a row-major m x n matrix, in double (dgesvd on the column-major
/// n x m matrix A^T, which has the same values).
std::vector<double> lapack_singular_values(const double* a, int m, int n) {
  std::vector<double> copy(a, a + static_cast<std::size_t>(m) * n);
  const int p = std::min(m, n);
  std::vector<double> s(p);
  double dummy = 0, query = 0;
  int one = 1, info = 0, lwork = -1;
  dgesvd_("N", "N", &n, &m, copy.data(), &n, s.data(), &dummy, &one, &dummy, &one, &query, &lwork,
          &info);
  lwork = static_cast<int>(query);
  std::vector<double> work(std::max(1, lwork));
  dgesvd_("N", "N", &n, &m, copy.data(), &n, s.data(), &dummy, &one, &dummy, &one, work.data(),
          &lwork, &info);
  EXPECT_EQ(info, 0);
  return s;
}

/// |Q^T Q - I|_F over `count` vectors of `length` elements, element i of vector x at
/// q[x * vector_stride + i * element_stride]: U's columns or Vt's rows.
template <typename T>
double orthogonality_error(const T* q, std::int64_t count, std::int64_t length,
                           std::int64_t vector_stride, std::int64_t element_stride) {
  double sum = 0;
  for (std::int64_t x = 0; x < count; ++x) {
    for (std::int64_t y = 0; y < count; ++y) {
      double acc = 0;
      for (std::int64_t i = 0; i < length; ++i) {
        acc += static_cast<double>(q[x * vector_stride + i * element_stride]) *
               q[y * vector_stride + i * element_stride];
      }
      const double d = acc - (x == y ? 1.0 : 0.0);
      sum += d * d;
    }
  }
  return std::sqrt(sum);
}

struct Checks {
  bool compare_values = true;
  bool per_value_relative = false;  // well-conditioned input: each value to rtol relative
};

class CudaSvdTest : public testing::DeviceTest {
 public:
  CudaSvdTest() : DeviceTest(/*priority_stream=*/true, /*libraries=*/true) {}

  /// Runs the GPU SVD on `a` (batch of row-major double matrices, converted to T) and checks it.
  template <typename T>
  void run_and_check(SvdShape shape, const std::vector<double>& a, Checks checks = {},
                     SvdInfo* info_out = nullptr, std::vector<double>* values_out = nullptr) {
    shape.dtype = dtype_of<T>();
    const std::int64_t m = shape.m, n = shape.n, batch = shape.batch;
    const std::int64_t p = std::min(m, n);
    const std::int64_t ucols = svd_u_cols(shape), vtrows = svd_vt_rows(shape);
    SCOPED_TRACE(::testing::Message() << (sizeof(T) == 4 ? "f32 " : "f64 ") << batch << "x" << m
                                      << "x" << n << (shape.full_matrices ? " full" : " thin")
                                      << (shape.compute_uv ? " uv" : " values"));
    std::vector<T> ha(a.begin(), a.end());
    const std::size_t el = sizeof(T);
    DeviceBuffer da = device_.buffer(ha.size() * el), ds = device_.buffer(batch * p * el),
                 du = device_.buffer(batch * m * ucols * el),
                 dvt = device_.buffer(batch * vtrows * n * el);
    shape.method = method_;
    const bool polar = method_ == SvdMethod::kPolar;
    std::size_t ws_bytes = cuda::svd_workspace_bytes(shape, tuning_);
    if (polar) {
      absl::StatusOr<std::size_t> need = cuda::svd_polar_workspace_bytes(ctx_, shape);
      ASSERT_TRUE(need.ok()) << need.status();
      ws_bytes = *need;
    }
    DeviceBuffer ws = device_.buffer(ws_bytes);
    ASSERT_EQ(ws.size(), ws_bytes);
    ASSERT_EQ(dvt.size(), static_cast<std::size_t>(batch * vtrows * n) * el);
    ASSERT_CUDA(cudaMemcpy(da.data(), ha.data(), ha.size() * el, cudaMemcpyHostToDevice));
    // Poison every output (0xFF bytes are a NaN in f32 and f64).
    ASSERT_CUDA(cudaMemset(ds.data(), 0xFF, batch * p * el));
    ASSERT_CUDA(cudaMemset(du.data(), 0xFF, batch * m * ucols * el));
    ASSERT_CUDA(cudaMemset(dvt.data(), 0xFF, batch * vtrows * n * el));
    ASSERT_CUDA(cudaMemset(ws.data(), 0xFF, ws_bytes));
    void* const u = shape.compute_uv ? du.data() : nullptr;
    void* const vt = shape.compute_uv ? dvt.data() : nullptr;
    absl::StatusOr<SvdInfo> info = polar
                                       ? cuda::svd_polar(ctx_, da.data(), ds.data(), u, vt, shape,
                                                         ws.data(), ws_bytes, {}, tuning_)
                                       : cuda::svd_jacobi(ctx_, da.data(), ds.data(), u, vt, shape,
                                                          ws.data(), ws_bytes, {}, tuning_);
    ASSERT_TRUE(info.ok()) << info.status();
    if (info_out != nullptr) *info_out = *info;
    if (shape.max_sweeps == 0) {
      EXPECT_TRUE(info->converged) << "sweeps " << info->sweeps;
    }
    std::vector<T> hs(batch * p), hu(batch * m * ucols), hvt(batch * vtrows * n);
    ASSERT_CUDA(cudaMemcpy(hs.data(), ds.data(), hs.size() * el, cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(hu.data(), du.data(), hu.size() * el, cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(hvt.data(), dvt.data(), hvt.size() * el, cudaMemcpyDeviceToHost));
    if (values_out != nullptr) values_out->assign(hs.begin(), hs.end());
    // The input must be untouched.
    std::vector<T> after(ha.size());
    ASSERT_CUDA(cudaMemcpy(after.data(), da.data(), after.size() * el, cudaMemcpyDeviceToHost));
    ASSERT_TRUE(std::equal(after.begin(), after.end(), ha.begin(),
                           [](T x, T y) { return std::memcmp(&x, &y, sizeof(T)) == 0; }));

    const double eps = eps_of<T>();
    const double bound = 50.0 * static_cast<double>(std::max<std::int64_t>({m, n, 1})) * eps;
    const double rtol = sizeof(T) == 4 ? 1e-5 : 1e-12;
    for (std::int64_t b = 0; b < batch; ++b) {
      SCOPED_TRACE(::testing::Message() << "matrix " << b);
      // The input as T was rounded: the reference is that rounded matrix, in double.
      std::vector<double> ab(ha.begin() + b * m * n, ha.begin() + (b + 1) * m * n);
      const T* sb = hs.data() + b * p;
      for (std::int64_t k = 0; k < p; ++k) {
        ASSERT_TRUE(std::isfinite(static_cast<double>(sb[k]))) << "s[" << k << "]";
        ASSERT_GE(sb[k], T(0));
        if (k > 0) {
          ASSERT_LE(sb[k], sb[k - 1]) << "not descending at " << k;
        }
      }
      if (checks.compare_values && p > 0) {
        const std::vector<double> ref = lapack_singular_values(ab.data(), m, n);
        for (std::int64_t k = 0; k < p; ++k) {
          const double scale = checks.per_value_relative ? ref[k] : ref[0];
          EXPECT_LE(std::abs(sb[k] - ref[k]), rtol * scale + std::numeric_limits<double>::min())
              << "s[" << k << "] = " << sb[k] << " vs LAPACK " << ref[k];
        }
      }
      if (!shape.compute_uv) continue;
      const T* ub = hu.data() + b * m * ucols;
      const T* vb = hvt.data() + b * vtrows * n;
      for (std::int64_t e = 0; e < m * ucols; ++e) {
        ASSERT_TRUE(std::isfinite(static_cast<double>(ub[e]))) << "U element " << e;
      }
      for (std::int64_t e = 0; e < vtrows * n; ++e) {
        ASSERT_TRUE(std::isfinite(static_cast<double>(vb[e]))) << "Vt element " << e;
      }
      // Residual |A - U S Vt|_F / |A|_F (absolute when A = 0).
      double num = 0, den = 0;
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::int64_t k = 0; k < p; ++k) {
            acc += static_cast<double>(ub[i * ucols + k]) * sb[k] * vb[k * n + j];
          }
          const double d = ab[i * n + j] - acc;
          num += d * d;
          den += ab[i * n + j] * ab[i * n + j];
        }
      }
      const double resid = std::sqrt(num) / (den > 0 ? std::sqrt(den) : 1.0);
      EXPECT_LE(resid, bound) << "residual";
      // |U^T U - I|_F over all ucols columns, |Vt Vt^T - I|_F over all vtrows rows.
      EXPECT_LE(orthogonality_error(ub, ucols, m, 1, ucols), bound) << "U orthogonality";
      EXPECT_LE(orthogonality_error(vb, vtrows, n, n, 1), bound) << "Vt orthogonality";
    }
  }

  template <typename T>
  void shape_case(Kind kind, std::int64_t batch, int m, int n, bool uv, bool full, int rank = 0,
                  Checks checks = {}) {
    shape_case<T>(std::vector<Kind>{kind}, batch, m, n, uv, full, rank, checks);
  }

  /// A batch whose matrix b is of kind kinds[b % kinds.size()].
  template <typename T>
  void shape_case(const std::vector<Kind>& kinds, std::int64_t batch, int m, int n, bool uv,
                  bool full, int rank = 0, Checks checks = {}) {
    const std::uint64_t seed = testing::test_seed();
    SCOPED_TRACE(testing::seed_trace(seed));
    std::mt19937_64 rng(seed);
    std::vector<double> a;
    for (std::int64_t b = 0; b < batch; ++b) {
      const Kind kind = kinds[static_cast<std::size_t>(b) % kinds.size()];
      const std::vector<double> one = make_matrix(kind, m, n, rank, rng);
      a.insert(a.end(), one.begin(), one.end());
    }
    SvdShape shape;
    shape.batch = batch;
    shape.m = m;
    shape.n = n;
    shape.compute_uv = uv;
    shape.full_matrices = full;
    run_and_check<T>(shape, a, checks);
  }

  SvdTuning tuning_;
  SvdMethod method_ = SvdMethod::kJacobi;
};

struct Dims {
  int m, n;
};
// Small-driver shapes (min <= 64), blocked-driver shapes (min > 64), and tall thin ones whose
// working copy does not fit in shared memory (blocked with padding).
const Dims kShapes[] = {{1, 1},   {1, 7},     {7, 1},     {2, 2},     {7, 3},     {3, 7},
                        {33, 65}, {65, 33},   {100, 37},  {37, 100},  {64, 64},   {17, 64},
                        {96, 96}, {130, 200}, {200, 130}, {257, 100}, {1500, 19}, {31, 300}};

template <typename T>
void all_shapes(CudaSvdTest* t) {
  for (const Dims& d : kShapes) {
    t->shape_case<T>(Kind::kGaussian, 1, d.m, d.n, true, false);
    // Full U of a very tall matrix costs the host check O(m^3): full only up to 300.
    if (std::max(d.m, d.n) <= 300) t->shape_case<T>(Kind::kGaussian, 1, d.m, d.n, true, true);
    t->shape_case<T>(Kind::kGaussian, 1, d.m, d.n, false, false);
  }
}

TEST_F(CudaSvdTest, RaggedShapesF32) {
  all_shapes<float>(this);
}

TEST_F(CudaSvdTest, RaggedShapesF64) {
  all_shapes<double>(this);
}

TEST_F(CudaSvdTest, WellConditionedValuesPerValueRelative) {
  // Gaussian with m = 2n: condition below about 6, so each value is relatively accurate.
  const Checks per_value{true, true};
  shape_case<float>(Kind::kGaussian, 1, 64, 32, true, false, 0, per_value);
  shape_case<double>(Kind::kGaussian, 1, 64, 32, true, false, 0, per_value);
  shape_case<float>(Kind::kGaussian, 1, 300, 150, true, false, 0, per_value);
  shape_case<double>(Kind::kGaussian, 1, 150, 300, true, false, 0, per_value);
}

/// Relative accuracy on graded matrices (support/graded_svd.hpp): the Jacobi keeps every
/// singular value to a few n eps relative; POLAR, accurate to eps * sigma_1 only, shows that the
/// small ones are hard. Both also pass run_and_check's residual, orthogonality and LAPACK checks.
template <typename T>
void graded_cases(CudaSvdTest* t) {
  const DType dtype = dtype_of<T>();
  testing::Rng rng(testing::test_seed());
  SCOPED_TRACE(testing::seed_trace(rng.seed()));
  const double eps = eps_of<T>(), cond = testing::graded_condition(dtype);
  for (const testing::GradedMatrix& g : testing::graded_matrices(rng, dtype, cond)) {
    SCOPED_TRACE(::testing::Message() << g.name << " " << g.m << "x" << g.n << " cond " << cond);
    // As on the CPU (test_cpu_svd_graded.cc): f(m, n) * eps * cond(B) with cond(B) ~ 1.
    const double jacobi_bound = 4 * static_cast<double>(std::max(g.m, g.n)) * eps;
    double errors[2] = {0, 0};  // jacobi, polar
    for (const SvdMethod method : {SvdMethod::kJacobi, SvdMethod::kPolar}) {
      t->method_ = method;
      SvdShape shape;
      shape.m = g.m;
      shape.n = g.n;
      std::vector<double> s;
      t->run_and_check<T>(shape, g.a, Checks{}, nullptr, &s);
      if (::testing::Test::HasFatalFailure()) return;
      errors[method == SvdMethod::kJacobi ? 0 : 1] = g.relative_error(s);
    }
    t->method_ = SvdMethod::kJacobi;
    std::printf("%s %s %lldx%lld cond %.0e: worst relative error jacobi %.1e polar %.1e\n",
                dtype_name(dtype), g.name, static_cast<long long>(g.m), static_cast<long long>(g.n),
                cond, errors[0], errors[1]);
    EXPECT_LE(errors[0], jacobi_bound) << "JACOBI lost relative accuracy";
    if (!g.want.empty()) {
      EXPECT_GT(errors[1], jacobi_bound) << "POLAR kept the small values: not a graded case";
    }
  }
}

TEST_F(CudaSvdTest, JacobiKeepsSmallSingularValuesOfGradedMatrices) {
  graded_cases<float>(this);
  graded_cases<double>(this);
}

TEST_F(CudaSvdTest, IllConditionedF64) {
  shape_case<double>(Kind::kIllConditioned, 1, 50, 40, true, true);
  shape_case<double>(Kind::kIllConditioned, 1, 160, 120, true, false);
  shape_case<double>(Kind::kIllConditioned, 1, 90, 140, true, true);
}

TEST_F(CudaSvdTest, RankDeficient) {
  shape_case<float>(Kind::kRankDeficient, 1, 60, 40, true, true, 10);
  shape_case<double>(Kind::kRankDeficient, 1, 60, 40, true, false, 10);
  shape_case<float>(Kind::kRankDeficient, 1, 150, 100, true, false, 20);
  shape_case<double>(Kind::kRankDeficient, 1, 100, 150, true, true, 20);
  shape_case<double>(Kind::kRankDeficient, 3, 12, 9, true, true, 1);
  shape_case<float>(Kind::kZeroColumn, 1, 40, 30, true, true);
  shape_case<double>(Kind::kZeroColumn, 1, 90, 80, true, false);
  shape_case<float>(Kind::kZero, 2, 10, 7, true, true);
  shape_case<double>(Kind::kZero, 1, 70, 90, true, true);
}

TEST_F(CudaSvdTest, BatchedSmall) {
  shape_case<float>(Kind::kGaussian, 40, 32, 32, true, false);
  shape_case<double>(Kind::kGaussian, 40, 16, 16, true, true);
  shape_case<float>(Kind::kGaussian, 25, 64, 48, true, true);
  shape_case<double>(Kind::kGaussian, 25, 20, 33, true, false);
  shape_case<float>(Kind::kGaussian, 300, 8, 5, false, false);
}

TEST_F(CudaSvdTest, TinyRegisterDriver) {
  // max(m, n) <= 32: a group of 8, 16 or 32 lanes per matrix, several matrices a warp; batches
  // that leave groups and warps of the last block empty, m < n, rank deficiency, one column.
  const Checks per_value{true, true};
  shape_case<float>(Kind::kGaussian, 37, 13, 10, true, true);
  shape_case<double>(Kind::kGaussian, 9, 20, 31, true, false);
  shape_case<float>(Kind::kGaussian, 5, 32, 1, true, true);
  shape_case<double>(Kind::kGaussian, 70, 6, 8, true, true);
  shape_case<double>(Kind::kIllConditioned, 3, 24, 24, true, true);
  shape_case<float>(Kind::kRankDeficient, 11, 30, 20, true, true, 4);
  shape_case<float>(Kind::kGaussian, 64, 32, 16, true, false, 0, per_value);
  shape_case<double>(Kind::kGaussian, 33, 32, 32, false, false);
}

TEST_F(CudaSvdTest, BatchedBlocked) {
  shape_case<float>(Kind::kGaussian, 3, 100, 90, true, false);
  shape_case<double>(Kind::kGaussian, 2, 90, 100, true, true);
}

TEST_F(CudaSvdTest, NarrowBlocksManyRounds) {
  // Block width 8: 18 blocks, 17 rounds a sweep, so the slot permutation is exercised.
  tuning_.block = 8;
  shape_case<float>(Kind::kGaussian, 1, 200, 130, true, false);
  shape_case<double>(Kind::kGaussian, 1, 130, 200, true, true);
  shape_case<double>(Kind::kIllConditioned, 1, 140, 140, true, false);
}

TEST_F(CudaSvdTest, WholeGramCheckEndsOneSweepEarlierWithTheSameContract) {
  // After a sweep whose rotations were all small, one GEMM of the whole W^T W tests
  // convergence instead of a sweep that would find nothing to rotate. The same random matrix with
  // the check on and off, through each inner solver (the register form at width 16, the
  // 64-column one-sided solver, the two-sided one): both converge within the contract, the check
  // never costs a sweep, and over the cases it saves at least one (it cannot save one where the
  // last rotating sweep still turned a pair past the threshold).
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_trace(seed));
  std::mt19937_64 rng(seed);
  struct Case {
    int m, n;
    bool f32;
    SvdTuning::InnerSolver solver;
  };
  using Inner = SvdTuning::InnerSolver;
  int saved = 0;
  for (const Case c :
       {Case{300, 300, true, Inner::kAuto}, Case{257, 300, false, Inner::kAuto},
        Case{333, 290, true, Inner::kAuto}, Case{290, 290, false, Inner::kAuto},
        Case{200, 180, true, Inner::kTwoSided}, Case{180, 200, false, Inner::kTwoSided}}) {
    SCOPED_TRACE(::testing::Message() << c.m << " x " << c.n << (c.f32 ? " f32" : " f64")
                                      << " solver " << static_cast<int>(c.solver));
    const std::vector<double> a = make_matrix(Kind::kGaussian, c.m, c.n, 0, rng);
    SvdShape shape;
    shape.m = c.m;
    shape.n = c.n;
    SvdInfo with_check, without_check;
    tuning_ = SvdTuning{.inner_solver = c.solver, .settle_check = true};
    c.f32 ? run_and_check<float>(shape, a, {}, &with_check)
          : run_and_check<double>(shape, a, {}, &with_check);
    tuning_.settle_check = false;
    c.f32 ? run_and_check<float>(shape, a, {}, &without_check)
          : run_and_check<double>(shape, a, {}, &without_check);
    EXPECT_TRUE(with_check.converged);
    EXPECT_TRUE(without_check.converged);
    EXPECT_LE(with_check.sweeps, without_check.sweeps);
    saved += without_check.sweeps - with_check.sweeps;
  }
  EXPECT_GE(saved, 1);
}

TEST_F(CudaSvdTest, TuningVariantsAgreeWithLapack) {
  // Every knob of SvdTuning away from its default, on the blocked driver: first the two-sided
  // inner solver for both types (in double for f32), then the one-sided one for both with several
  // inner sweeps, at a width whose block pair (48 columns) leaves rows of the lane groups empty;
  // then a width above the one-sided solver's (80 columns), where it falls back to the two-sided.
  tuning_.inner_solver = SvdTuning::InnerSolver::kTwoSided;
  tuning_.inner_sweeps = 3;
  tuning_.inner_double = true;
  tuning_.sort_columns = false;
  tuning_.settle_check = false;
  tuning_.block = 24;
  shape_case<float>(Kind::kGaussian, 1, 150, 110, true, false);
  shape_case<double>(Kind::kRankDeficient, 1, 110, 150, true, true, 12);
  tuning_.inner_solver = SvdTuning::InnerSolver::kOneSided;
  shape_case<float>(Kind::kRankDeficient, 1, 150, 110, true, true, 12);
  shape_case<double>(Kind::kGaussian, 1, 110, 150, true, false);
  tuning_ = SvdTuning{.block = 40, .inner_solver = SvdTuning::InnerSolver::kOneSided};
  shape_case<float>(Kind::kGaussian, 1, 170, 170, true, false);
  shape_case<double>(Kind::kIllConditioned, 1, 170, 170, true, true);
}

TEST_F(CudaSvdTest, OneSidedInnerSolverAtEveryWidthAndType) {
  // Both types through the one-sided inner solver at widths 8, 16 (the default up to N = 256 in
  // f64 and 512 in f32, where a block pair is one warp's registers) and 32, smaller N and hard
  // inputs included, and the register form with several inner sweeps.
  tuning_.inner_solver = SvdTuning::InnerSolver::kOneSided;
  shape_case<float>(Kind::kGaussian, 1, 512, 512, true, false);
  shape_case<float>(Kind::kIllConditioned, 1, 160, 120, true, false);
  shape_case<float>(Kind::kRankDeficient, 1, 150, 100, true, false, 20);
  for (const Kind kind : {Kind::kIntegerRankOne, Kind::kOnesWithZeroColumns, Kind::kRepeatedRow}) {
    SCOPED_TRACE(kind_name(kind));
    shape_case<float>(kind, 1, 65, 200, true, true);
    shape_case<float>(kind, 1, 200, 65, true, false);
  }
  tuning_.block = 16;  // the register form: one column of a 32-column pair a lane
  // Tall: f32 forms G in the block at any height (one SM summing 20000 rows in float); f64
  // above 1024 rows takes it from the GEMM.
  shape_case<float>(Kind::kGaussian, 1, 1100, 70, true, false);
  shape_case<float>(Kind::kIllConditioned, 1, 20000, 70, true, false);
  shape_case<double>(Kind::kRankDeficient, 1, 90, 1300, true, true, 40);
  shape_case<double>(Kind::kIllConditioned, 1, 150, 150, true, true);
  shape_case<double>(Kind::kRankDeficient, 1, 90, 170, true, false, 11);
  for (const Kind kind : {Kind::kIntegerRankOne, Kind::kOnesWithZeroColumns, Kind::kRepeatedRow}) {
    SCOPED_TRACE(kind_name(kind));
    shape_case<double>(kind, 1, 97, 140, true, false);
  }
  tuning_.inner_sweeps = 3;
  shape_case<float>(Kind::kRankDeficient, 1, 130, 110, true, true, 9);
  shape_case<double>(Kind::kGaussian, 1, 111, 111, true, false);
  tuning_.inner_sweeps = 1;
  tuning_.inner_double = true;  // f32 through the register form in double
  shape_case<float>(Kind::kIllConditioned, 1, 150, 120, true, false);
  shape_case<float>(Kind::kRankDeficient, 1, 120, 150, true, true, 13);
  tuning_.inner_double = false;
  tuning_.block = 8;  // 16 columns a pair: rows of the lane groups half empty
  shape_case<float>(Kind::kGaussian, 1, 130, 100, true, true);
  shape_case<double>(Kind::kRankDeficient, 1, 100, 130, true, false, 15);
  tuning_.block = 32;  // 64 columns a pair in shared memory; f32 in float, escalating to double
  shape_case<double>(Kind::kGaussian, 1, 300, 260, true, true);
  shape_case<double>(Kind::kIllConditioned, 1, 200, 200, true, false);
  shape_case<double>(Kind::kRankDeficient, 1, 250, 190, true, false, 30);
  shape_case<float>(Kind::kGaussian, 1, 260, 300, true, false);
  shape_case<float>(Kind::kIllConditioned, 1, 200, 200, true, true);
  shape_case<float>(Kind::kRankDeficient, 1, 190, 250, true, false, 30);
  for (const Kind kind : {Kind::kIntegerRankOne, Kind::kOnes, Kind::kRepeatedRow}) {
    SCOPED_TRACE(kind_name(kind));
    shape_case<double>(kind, 1, 100, 150, true, false);
    shape_case<double>(kind, 1, 150, 100, true, true);
    shape_case<float>(kind, 1, 150, 100, true, false);
  }
}

TEST_F(CudaSvdTest, GramGemmSplitOverRowChunks) {
  // The round's Gram GEMM over W's rows in chunks (at least 256 rows each, up to about 256
  // products), which the inner solvers add in chunk order: M = 1000 in three chunks of 352, 352
  // and 296 rows (a pointer-batched GEMM and one for the shorter last chunk), M = 1024 in four of
  // 256 (no remainder), through the one-sided 64-column solver (f32 in float); f32 600 x 560
  // with the default tuning (width 32, the float solver; chunks of 320 and 280 rows); the float
  // solver at 48 columns (and fewer products by the knob); M = 1300 at width 16 (f64: the register
  // form takes G from the GEMM above 1024 rows) in five; and the two-sided solver on split G.
  tuning_ = SvdTuning{.block = 32, .inner_solver = SvdTuning::InnerSolver::kOneSided};
  shape_case<double>(Kind::kGaussian, 1, 1000, 200, true, true);
  shape_case<float>(Kind::kIllConditioned, 1, 200, 1000, true, false);
  shape_case<double>(Kind::kRankDeficient, 1, 1024, 200, true, false, 70);
  shape_case<float>(Kind::kGaussian, 1, 1024, 130, true, true);
  shape_case<float>(Kind::kRankDeficient, 1, 1000, 150, true, false, 40);
  tuning_ = SvdTuning{};
  shape_case<float>(Kind::kGaussian, 1, 600, 560, true, false);
  tuning_ = SvdTuning{.block = 24, .inner_solver = SvdTuning::InnerSolver::kOneSided};
  shape_case<float>(Kind::kIllConditioned, 1, 1000, 100, true, false);
  tuning_.gram_products = 6;  // 3 pairs: 2 chunks (512 and 488 rows), where 256 products give 3
  shape_case<double>(Kind::kGaussian, 1, 1000, 100, true, true);
  tuning_.gram_products = 0;
  tuning_.block = 16;
  shape_case<double>(Kind::kIllConditioned, 1, 1300, 90, true, false);
  tuning_ = SvdTuning{.block = 24, .inner_solver = SvdTuning::InnerSolver::kTwoSided};
  shape_case<double>(Kind::kGaussian, 1, 1000, 100, true, false);
  shape_case<float>(Kind::kGaussian, 1, 100, 1000, true, true);
}

TEST_F(CudaSvdTest, MixedBatchOfZeroRankOneAndRandomConverges) {
  // Issue 11: 62 matrices of 16 x 12 mixing zero, rank-1 and random ones. Rank-1 matrices whose
  // columns are exact multiples of one another left noise columns that kept failing the
  // orthogonality test until their norms underflowed, and never converged after that.
  const std::vector<Kind> kinds = {Kind::kZero,           Kind::kOnes,          Kind::kGaussian,
                                   Kind::kIntegerRankOne, Kind::kRankDeficient, Kind::kRepeatedRow};
  shape_case<float>(kinds, 62, 16, 12, true, false, 1);
  shape_case<double>(kinds, 62, 16, 12, true, false, 1);
  shape_case<float>(kinds, 62, 12, 16, true, true, 1);
  shape_case<double>(kinds, 62, 16, 12, false, false, 1);
}

TEST_F(CudaSvdTest, RankOneWithParallelColumnsConvergesOnEveryDriver) {
  // The same inputs on the shared-memory driver (min(m, n) <= 64) and the blocked one.
  for (const Kind kind : {Kind::kOnes, Kind::kIntegerRankOne, Kind::kRepeatedRow}) {
    SCOPED_TRACE(kind_name(kind));
    shape_case<float>(kind, 3, 40, 30, true, true);
    shape_case<double>(kind, 3, 30, 40, true, false);
    shape_case<float>(kind, 1, 150, 100, true, false);
    shape_case<double>(kind, 1, 100, 150, true, true);
  }
}

TEST_F(CudaSvdTest, ExactlyRankDeficientConvergesOnTheBlockedDriver) {
  // The rounding noise that stands in for each zero singular value of these inputs is itself
  // rank-deficient, level after level down to the negligible threshold; with one inner sweep per
  // block pair each level took about ten outer sweeps, and (i + 1)(j + 1) at 100 x 150 in f64 had
  // not converged after 60 (unconverged noise columns then made Vt far from orthogonal).
  // N = 65 is the smallest blocked shape.
  for (const Kind kind : {Kind::kIntegerRankOne, Kind::kIntegerRankTwo, Kind::kOnesWithZeroColumns,
                          Kind::kOnes, Kind::kRepeatedRow}) {
    SCOPED_TRACE(kind_name(kind));
    shape_case<double>(kind, 1, 100, 150, true, false);
    shape_case<double>(kind, 1, 150, 100, true, true);
    shape_case<double>(kind, 1, 65, 200, true, true);
    shape_case<double>(kind, 1, 200, 65, true, true);
    shape_case<float>(kind, 1, 65, 200, true, true);
    shape_case<float>(kind, 1, 200, 65, true, false);
  }
}

TEST_F(CudaSvdTest, Larger) {
  shape_case<float>(Kind::kGaussian, 1, 512, 512, true, false);
  shape_case<double>(Kind::kGaussian, 1, 512, 512, true, false);
  shape_case<float>(Kind::kGaussian, 1, 700, 333, true, true);
}

TEST_F(CudaSvdTest, SweepCapReportsNotConverged) {
  // One sweep cannot orthogonalise a random matrix: the call must say so (and still return
  // finite, sorted values; orthogonality is not promised for an unconverged result).
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_trace(seed));
  std::mt19937_64 rng(seed);
  for (const Dims d : {Dims{40, 40}, Dims{120, 120}}) {
    const std::vector<double> a = make_matrix(Kind::kGaussian, d.m, d.n, 0, rng);
    std::vector<double> ha(a.begin(), a.end());
    SvdShape shape;
    shape.m = d.m;
    shape.n = d.n;
    shape.max_sweeps = 1;
    shape.compute_uv = false;
    const std::size_t ws_bytes = cuda::svd_workspace_bytes(shape);
    DeviceBuffer da = device_.buffer(ha.size() * 8), ds = device_.buffer(d.n * 8),
                 ws = device_.buffer(ws_bytes);
    ASSERT_EQ(ws.size(), ws_bytes);
    ASSERT_CUDA(cudaMemcpy(da.data(), ha.data(), ha.size() * 8, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(ds.data(), 0xFF, d.n * 8));
    absl::StatusOr<SvdInfo> info =
        cuda::svd_jacobi(ctx_, da.data(), ds.data(), nullptr, nullptr, shape, ws.data(), ws_bytes);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->sweeps, 1);
    EXPECT_FALSE(info->converged);
    std::vector<double> hs(d.n);
    ASSERT_CUDA(cudaMemcpy(hs.data(), ds.data(), hs.size() * 8, cudaMemcpyDeviceToHost));
    for (int k = 0; k < d.n; ++k) {
      ASSERT_TRUE(std::isfinite(hs[k]));
      if (k > 0) {
        EXPECT_LE(hs[k], hs[k - 1]);
      }
    }
  }
}

/// Runs `shape` (f32) on random input with a flag raised `after` into the call, which must
/// return CANCELLED within 50 ms of the flag, naming `stopped_between` in its message; the
/// latency is recorded as the test property `latency_property`.
void expect_prompt_cancel(const testing::TestDevice& device, const SvdShape& shape,
                          std::chrono::milliseconds after, const char* stopped_between,
                          const char* latency_property) {
  const std::size_t elems = static_cast<std::size_t>(shape.batch * shape.m * shape.n);
  // Random values, repeated past 2^24 of them (only the timing is checked).
  std::vector<float> ha(elems);
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_trace(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::size_t fresh = std::min<std::size_t>(elems, std::size_t{1} << 24);
  for (std::size_t i = 0; i < elems; ++i) ha[i] = i < fresh ? dist(rng) : ha[i - fresh];
  const std::int64_t p = std::min(shape.m, shape.n);
  const std::size_t ws_bytes = cuda::svd_workspace_bytes(shape);
  DeviceBuffer da = device.buffer(elems * 4), ds = device.buffer(shape.batch * p * 4),
               du = device.buffer(shape.batch * shape.m * p * 4),
               dvt = device.buffer(shape.batch * p * shape.n * 4), ws = device.buffer(ws_bytes);
  EXPECT_EQ(cudaMemcpy(da.data(), ha.data(), elems * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const auto [r, late_ms] = testing::call_stopped_after(after, [&](StopToken stop) {
    return cuda::svd_jacobi(device.context(), da.data(), ds.data(), du.data(), dvt.data(), shape,
                            ws.data(), ws_bytes, stop);
  });
  EXPECT_EQ(cudaStreamQuery(device.context().stream), cudaSuccess) << "work left on the stream";
  const absl::Status st = r.status();
  ASSERT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
  ::testing::Test::RecordProperty(latency_property, std::to_string(late_ms));
  EXPECT_LT(late_ms, 50.0) << st;
  EXPECT_NE(st.message().find(stopped_between), std::string::npos) << st;
}

TEST_F(CudaSvdTest, CancelStopsWithinRoundsNotSweeps) {
  // 8192^2 f32: a sweep is several hundred ms on an H100, so a check per sweep would answer
  // late; the blocked driver checks every few ms of rounds.
  expect_prompt_cancel(device_, {.m = 8192, .n = 8192, .dtype = DType::kF32},
                       std::chrono::milliseconds(700), "round", "blocked_cancel_latency_ms");
}

TEST_F(CudaSvdTest, CancelStopsABatchOfSmallMatricesBetweenLaunches) {
  // 200,000 matrices of 64x64 (the shared-memory driver): launches of a few ms each.
  expect_prompt_cancel(device_, {.batch = 200000, .m = 64, .n = 64, .dtype = DType::kF32},
                       std::chrono::milliseconds(20), "matrices", "small_cancel_latency_ms");
}

TEST_F(CudaSvdTest, EmptyShapes) {
  for (const Dims d : {Dims{0, 5}, Dims{4, 0}}) {
    SvdShape shape;
    shape.m = d.m;
    shape.n = d.n;
    shape.full_matrices = true;
    shape.dtype = DType::kF64;
    EXPECT_EQ(cuda::svd_workspace_bytes(shape), 0u);
    DeviceBuffer du = device_.buffer(std::max(1, d.m * d.m) * 8),
                 dvt = device_.buffer(std::max(1, d.n * d.n) * 8);
    ASSERT_CUDA(cudaMemset(du.data(), 0xFF, std::max(1, d.m * d.m) * 8));
    ASSERT_CUDA(cudaMemset(dvt.data(), 0xFF, std::max(1, d.n * d.n) * 8));
    absl::StatusOr<SvdInfo> info =
        cuda::svd_jacobi(ctx_, nullptr, nullptr, du.data(), dvt.data(), shape, nullptr, 0);
    ASSERT_TRUE(info.ok()) << info.status();
    const int side = std::max(d.m, d.n);
    std::vector<double> h(side * side);
    ASSERT_CUDA(cudaMemcpy(h.data(), d.m > 0 ? du.data() : dvt.data(), h.size() * 8,
                           cudaMemcpyDeviceToHost));
    for (int i = 0; i < side; ++i) {
      for (int j = 0; j < side; ++j) EXPECT_EQ(h[i * side + j], i == j ? 1.0 : 0.0);
    }
  }
}

TEST_F(CudaSvdTest, CancelledAndInvalid) {
  SvdShape shape;
  shape.m = 80;
  shape.n = 70;
  shape.dtype = DType::kF32;
  const std::size_t ws_bytes = cuda::svd_workspace_bytes(shape);
  DeviceBuffer da = device_.buffer(80 * 70 * 4), ds = device_.buffer(70 * 4),
               du = device_.buffer(80 * 70 * 4), dvt = device_.buffer(70 * 70 * 4),
               ws = device_.buffer(ws_bytes);
  std::vector<float> ha(80 * 70, 1.0f);
  ASSERT_CUDA(cudaMemcpy(da.data(), ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
  std::atomic<bool> flag{true};
  absl::StatusOr<SvdInfo> r = cuda::svd_jacobi(ctx_, da.data(), ds.data(), du.data(), dvt.data(),
                                               shape, ws.data(), ws_bytes, StopToken(&flag));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  r = cuda::svd_jacobi(ctx_, da.data(), ds.data(), du.data(), dvt.data(), shape, ws.data(),
                       ws_bytes - 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  SvdShape bad = shape;
  bad.tolerance = 1.5;
  r = cuda::svd_jacobi(ctx_, da.data(), ds.data(), du.data(), dvt.data(), bad, ws.data(), ws_bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  bad = shape;
  bad.dtype = DType::kF16;
  r = cuda::svd_jacobi(ctx_, da.data(), ds.data(), du.data(), dvt.data(), bad, ws.data(), ws_bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  for (const SvdTuning bad_tuning : {SvdTuning{.block = 12}, SvdTuning{.block = 72},
                                     SvdTuning{.inner_sweeps = 0}, SvdTuning{.inner_sweeps = 31}}) {
    EXPECT_EQ(cuda::svd_workspace_bytes(shape, bad_tuning), 0u);
    r = cuda::svd_jacobi(ctx_, da.data(), ds.data(), du.data(), dvt.data(), shape, ws.data(),
                         ws_bytes, {}, bad_tuning);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  cuda::Context no_blas = ctx_;
  no_blas.cublas = nullptr;
  r = cuda::svd_jacobi(no_blas, da.data(), ds.data(), du.data(), dvt.data(), shape, ws.data(),
                       ws_bytes);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

// ---- svd_polar (QDWH + syevd) ------------------------------------------------------------

TEST_F(CudaSvdTest, PolarRaggedShapes) {
  method_ = SvdMethod::kPolar;
  all_shapes<float>(this);
  all_shapes<double>(this);
}

TEST_F(CudaSvdTest, PolarIllConditionedRankDeficientAndZero) {
  method_ = SvdMethod::kPolar;
  shape_case<double>(Kind::kIllConditioned, 1, 50, 40, true, true);
  shape_case<double>(Kind::kIllConditioned, 1, 90, 140, true, false);
  shape_case<float>(Kind::kIllConditioned, 1, 120, 120, true, false);
  shape_case<float>(Kind::kRankDeficient, 1, 60, 40, true, true, 10);
  shape_case<double>(Kind::kRankDeficient, 1, 100, 150, true, true, 20);
  shape_case<double>(Kind::kRankDeficient, 1, 130, 130, true, false, 7);
  for (const Kind kind : {Kind::kZero, Kind::kZeroColumn, Kind::kOnes, Kind::kIntegerRankOne,
                          Kind::kIntegerRankTwo, Kind::kRepeatedRow}) {
    SCOPED_TRACE(kind_name(kind));
    shape_case<float>(kind, 1, 40, 30, true, true);
    shape_case<double>(kind, 1, 100, 150, true, true);
    shape_case<double>(kind, 1, 90, 90, true, false);
  }
}

TEST_F(CudaSvdTest, ProfilePrintsEachDriversStepsAndKeepsTheContract) {
  // SvdTuning::profile (GCOMPUTE_SVD_PROFILE): CUDA events between the steps; the results must
  // still meet the contract (the events add no work to the stream's kernels), and each driver
  // prints its split.
  tuning_.profile = true;
  for (const SvdMethod method : {SvdMethod::kJacobi, SvdMethod::kPolar}) {
    method_ = method;
    ::testing::internal::CaptureStderr();
    shape_case<double>(Kind::kGaussian, 2, 200, 130, true, false);
    shape_case<float>(Kind::kIllConditioned, 1, 130, 200, true, true);
    const std::string printed = ::testing::internal::GetCapturedStderr();
    const char* const want = method == SvdMethod::kPolar ? "svd polar profile: N=130 iterations="
                                                         : "svd profile: N=130 nb=";
    EXPECT_NE(printed.find(want), std::string::npos) << printed;
    EXPECT_NE(printed.find("rest (outside the marked phases)"), std::string::npos) << printed;
    if (method == SvdMethod::kPolar) {
      // A line per matrix (three), each with its own counts: from l0 = eps, in both types, one
      // Householder QR step (c eps > 1e-3), then one CholeskyQR2 step (100 < c <= 1e-3 / eps),
      // then Cholesky steps.
      const std::regex line("svd polar profile: [^\\n]*");
      const std::regex counts(" qr steps [0-9.]+ \\(1\\), cholesky-qr2 steps [0-9.]+ \\(1\\),");
      int lines = 0;
      for (auto it = std::sregex_iterator(printed.begin(), printed.end(), line);
           it != std::sregex_iterator(); ++it, ++lines) {
        EXPECT_TRUE(std::regex_search(it->str(), counts)) << it->str();
      }
      EXPECT_EQ(lines, 3) << printed;
    }
  }
}

TEST_F(CudaSvdTest, PolarBatchMixesKinds) {
  method_ = SvdMethod::kPolar;
  const std::vector<Kind> kinds = {Kind::kGaussian, Kind::kZero, Kind::kIntegerRankOne,
                                   Kind::kIllConditioned};
  shape_case<double>(kinds, 8, 33, 20, true, true, 1);
  shape_case<float>(kinds, 8, 20, 33, true, false, 1);
  shape_case<double>(kinds, 8, 48, 48, false, false, 1);
}

TEST_F(CudaSvdTest, PolarIsCorrectWhereGesvdpIsNot) {
  // Issue 17: cusolverDnSgesvdp returned singular values off by 30x with info = 0 on square
  // Gaussian f32 matrices from n = 2048 on. Ours must meet the same bounds there.
  method_ = SvdMethod::kPolar;
  shape_case<float>(Kind::kGaussian, 1, 2048, 2048, true, false);
  shape_case<double>(Kind::kGaussian, 1, 1024, 1024, true, false);
}

TEST_F(CudaSvdTest, PolarCancelledEmptyAndInvalid) {
  SvdShape shape{.m = 80, .n = 70, .dtype = DType::kF32, .method = SvdMethod::kPolar};
  absl::StatusOr<std::size_t> need = cuda::svd_polar_workspace_bytes(ctx_, shape);
  ASSERT_TRUE(need.ok()) << need.status();
  DeviceBuffer da = device_.buffer(80 * 70 * 4), ds = device_.buffer(70 * 4),
               du = device_.buffer(80 * 70 * 4), dvt = device_.buffer(70 * 70 * 4),
               ws = device_.buffer(*need);
  std::vector<float> ha(80 * 70, 1.0f);
  ASSERT_CUDA(cudaMemcpy(da.data(), ha.data(), ha.size() * 4, cudaMemcpyHostToDevice));
  std::atomic<bool> flag{true};
  absl::StatusOr<SvdInfo> r = cuda::svd_polar(ctx_, da.data(), ds.data(), du.data(), dvt.data(),
                                              shape, ws.data(), *need, StopToken(&flag));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  r = cuda::svd_polar(ctx_, da.data(), ds.data(), du.data(), dvt.data(), shape, ws.data(),
                      *need - 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  SvdShape bad = shape;
  bad.dtype = DType::kF16;
  r = cuda::svd_polar(ctx_, da.data(), ds.data(), du.data(), dvt.data(), bad, ws.data(), *need);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  cuda::Context no_solver = ctx_;
  no_solver.cusolver = nullptr;
  EXPECT_EQ(cuda::svd_polar_workspace_bytes(no_solver, shape).status().code(),
            absl::StatusCode::kFailedPrecondition);
  r = cuda::svd_polar(no_solver, da.data(), ds.data(), du.data(), dvt.data(), shape, ws.data(),
                      *need);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();

  // An empty side: a full U is the identity, as from the Jacobi driver.
  SvdShape empty{
      .m = 4, .n = 0, .dtype = DType::kF64, .full_matrices = true, .method = SvdMethod::kPolar};
  need = cuda::svd_polar_workspace_bytes(ctx_, empty);
  ASSERT_TRUE(need.ok()) << need.status();
  EXPECT_EQ(*need, 0u);
  DeviceBuffer du4 = device_.buffer(16 * 8);
  ASSERT_CUDA(cudaMemset(du4.data(), 0xFF, 16 * 8));
  r = cuda::svd_polar(ctx_, nullptr, nullptr, du4.data(), nullptr, empty, nullptr, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<double> h(16);
  ASSERT_CUDA(cudaMemcpy(h.data(), du4.data(), 16 * 8, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(h[i * 4 + j], i == j ? 1.0 : 0.0);
  }
}

TEST_F(CudaSvdTest, PolarCancelStopsBetweenIterations) {
  // 4096^2 f64: an iteration takes tens of ms, the whole solve several hundred.
  SvdShape shape{.m = 4096, .n = 4096, .dtype = DType::kF64, .method = SvdMethod::kPolar};
  absl::StatusOr<std::size_t> need = cuda::svd_polar_workspace_bytes(ctx_, shape);
  ASSERT_TRUE(need.ok()) << need.status();
  const std::size_t elems = 4096 * 4096;
  std::vector<double> ha(elems);
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_trace(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  for (double& x : ha) x = nd(rng);
  DeviceBuffer da = device_.buffer(elems * 8), ds = device_.buffer(4096 * 8),
               du = device_.buffer(elems * 8), dvt = device_.buffer(elems * 8),
               ws = device_.buffer(*need);
  ASSERT_CUDA(cudaMemcpy(da.data(), ha.data(), elems * 8, cudaMemcpyHostToDevice));
  std::atomic<bool> flag{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    flag.store(true);
  });
  const absl::StatusOr<SvdInfo> r = cuda::svd_polar(
      ctx_, da.data(), ds.data(), du.data(), dvt.data(), shape, ws.data(), *need, StopToken(&flag));
  canceller.join();
  EXPECT_EQ(cudaStreamQuery(ctx_.stream), cudaSuccess) << "work left on the stream";
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_NE(r.status().message().find("QDWH iterations"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace gcompute::kernels
