// SPDX-License-Identifier: Apache-2.0
// cuda::eigh against LAPACK's dsyev (QR iteration, in double: a different driver from the
// CPU backend's syevd and from both GPU paths) on fresh random symmetric inputs, plus the
// residual |A V - V diag(w)|_F / |A|_F and |V^T V - I|_F, computed on the host in double.
// Bounds, with c = 20 (the batched Jacobi kernel's eigenvalues are accurate to about
// eps |A|_inf <= sqrt(n) eps |A|_2; LAPACK-style solvers stay well below n eps):
//   |w_k - w_ref_k| <= c n eps |A|_2,   residual <= c n eps,   orthogonality <= c n eps.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gcompute/kernels/cuda/eigh.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/gpu.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"
#include "support/stop_after.hpp"

// LAPACK's Fortran interface.
extern "C" {
void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
            double* work, const int* lwork, int* info);
}

namespace gcompute::kernels {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

using cuda::DeviceBuffer;
using testing::Rng;

constexpr double kC = 20.0;

template <typename T>
constexpr DType dtype_of() {
  return sizeof(T) == 4 ? DType::kF32 : DType::kF64;
}

/// Eigenvalues (ascending) of a symmetric row-major n x n matrix by dsyev in double.
std::vector<double> reference_eigenvalues(const std::vector<double>& a, int n) {
  std::vector<double> copy = a;
  std::vector<double> w(static_cast<std::size_t>(n));
  int lwork = -1, info = 0;
  double query = 0;
  dsyev_("N", "U", &n, copy.data(), &n, w.data(), &query, &lwork, &info);
  lwork = std::max(1, static_cast<int>(query));
  std::vector<double> work(static_cast<std::size_t>(lwork));
  dsyev_("N", "U", &n, copy.data(), &n, w.data(), work.data(), &lwork, &info);
  EXPECT_EQ(info, 0) << "dsyev";
  return w;
}

/// |A V - V diag(w)|_F / |A|_F (absolute for A = 0), row-major, vectors as columns.
double residual(const std::vector<double>& a, const std::vector<double>& v,
                const std::vector<double>& w, std::int64_t n) {
  std::vector<double> av(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = 0; k < n; ++k) {
      const double x = a[i * n + k];
      for (std::int64_t j = 0; j < n; ++j) av[i * n + j] += x * v[k * n + j];
    }
  }
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double d = av[i * n + j] - v[i * n + j] * w[j];
      num += d * d;
      den += a[i * n + j] * a[i * n + j];
    }
  }
  return std::sqrt(num) / (den > 0 ? std::sqrt(den) : 1.0);
}

/// |V^T V - I|_F for row-major V.
double orthogonality(const std::vector<double>& v, std::int64_t n) {
  std::vector<double> g(static_cast<std::size_t>(n * n), 0.0);
  for (std::int64_t k = 0; k < n; ++k) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double x = v[k * n + i];
      for (std::int64_t j = 0; j < n; ++j) g[i * n + j] += x * v[k * n + j];
    }
  }
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double d = g[i * n + j] - (i == j ? 1.0 : 0.0);
      sum += d * d;
    }
  }
  return std::sqrt(sum);
}

/// Symmetric n x n with standard normal entries.
std::vector<double> random_symmetric(Rng& rng, std::int64_t n) {
  std::vector<double> a(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) a[i * n + j] = a[j * n + i] = rng.normal();
  }
  return a;
}

bool all_bytes_ff(const std::vector<unsigned char>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b == 0xff; });
}

class CudaEighTest : public testing::DeviceTest {
 public:
  CudaEighTest() : DeviceTest(/*priority_stream=*/true, /*libraries=*/true) {}

  /// Runs the GPU eigh on `a` (batch of row-major double matrices, converted to T; each must
  /// be symmetric in its lower triangle, which is what the reference reads: `symmetric`
  /// supplies the matrix the reference sees when the upper triangle of `a` differs) and checks
  /// matrices 0, every `stride`-th and the last.
  template <typename T>
  void run_and_check(std::int64_t batch, std::int64_t n, const std::vector<double>& a, bool vectors,
                     std::int64_t stride = 1, const std::vector<double>* symmetric = nullptr) {
    SCOPED_TRACE(::testing::Message() << (sizeof(T) == 4 ? "f32 " : "f64 ") << batch << " x " << n
                                      << "x" << n << (vectors ? " vectors" : " values"));
    EighShape shape;
    shape.batch = batch;
    shape.n = n;
    shape.dtype = dtype_of<T>();
    shape.compute_vectors = vectors;
    const std::vector<T> ha(a.begin(), a.end());
    const std::size_t el = sizeof(T);
    const std::size_t a_bytes = ha.size() * el, w_bytes = static_cast<std::size_t>(batch * n) * el;
    const absl::StatusOr<std::size_t> ws_bytes = cuda::eigh_workspace_bytes(ctx_, shape);
    ASSERT_TRUE(ws_bytes.ok()) << ws_bytes.status();
    DeviceBuffer da = device_.buffer(a_bytes), dw = device_.buffer(w_bytes),
                 dv = device_.buffer(a_bytes), ws = device_.buffer(*ws_bytes);
    ASSERT_EQ(ws.size(), *ws_bytes);
    ASSERT_CUDA(cudaMemcpy(da.data(), ha.data(), a_bytes, cudaMemcpyHostToDevice));
    // Poison the outputs and the workspace (0xFF bytes are a NaN in f32 and f64).
    ASSERT_CUDA(cudaMemset(dw.data(), 0xFF, w_bytes));
    ASSERT_CUDA(cudaMemset(dv.data(), 0xFF, a_bytes));
    ASSERT_CUDA(cudaMemset(ws.data(), 0xFF, *ws_bytes));
    const absl::StatusOr<EighInfo> info =
        cuda::eigh(ctx_, da.data(), dw.data(), dv.data(), shape, ws.data(), *ws_bytes);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_TRUE(info->converged);
    ASSERT_EQ(cudaStreamQuery(ctx_.stream), cudaSuccess) << "work left on the stream";

    std::vector<T> hw(static_cast<std::size_t>(batch * n)), hv(ha.size());
    ASSERT_CUDA(cudaMemcpy(hw.data(), dw.data(), w_bytes, cudaMemcpyDeviceToHost));
    ASSERT_CUDA(cudaMemcpy(hv.data(), dv.data(), a_bytes, cudaMemcpyDeviceToHost));
    std::vector<T> after(ha.size());
    ASSERT_CUDA(cudaMemcpy(after.data(), da.data(), a_bytes, cudaMemcpyDeviceToHost));
    ASSERT_EQ(std::memcmp(after.data(), ha.data(), a_bytes), 0) << "the input was modified";
    if (!vectors) {
      std::vector<unsigned char> raw(a_bytes);
      std::memcpy(raw.data(), hv.data(), a_bytes);
      EXPECT_TRUE(all_bytes_ff(raw)) << "values-only mode wrote V";
    }

    const double eps = std::numeric_limits<T>::epsilon();
    const double bound = kC * static_cast<double>(n) * eps;
    for (std::int64_t b = 0; b < batch; ++b) {
      if (b % stride != 0 && b != batch - 1) continue;
      SCOPED_TRACE(::testing::Message() << "matrix " << b);
      // The reference is the matrix as T (rounded), in double.
      const std::vector<double>& src = symmetric != nullptr ? *symmetric : a;
      std::vector<double> ab(static_cast<std::size_t>(n * n));
      for (std::int64_t e = 0; e < n * n; ++e) {
        ab[e] = static_cast<double>(static_cast<T>(src[b * n * n + e]));
      }
      const std::vector<double> ref = reference_eigenvalues(ab, static_cast<int>(n));
      double norm2 = 0;  // |A|_2 = max |lambda|
      for (double x : ref) norm2 = std::max(norm2, std::abs(x));
      std::vector<double> wb(hw.begin() + b * n, hw.begin() + (b + 1) * n);
      for (std::int64_t k = 0; k < n; ++k) {
        ASSERT_TRUE(std::isfinite(wb[k])) << "w[" << k << "]";
        if (k > 0) {
          ASSERT_LE(wb[k - 1], wb[k]) << "not ascending at " << k;
        }
        EXPECT_LE(std::abs(wb[k] - ref[k]), bound * std::max(norm2, 1e-300))
            << "w[" << k << "] = " << wb[k] << " vs dsyev " << ref[k];
      }
      if (!vectors) continue;
      std::vector<double> vb(hv.begin() + b * n * n, hv.begin() + (b + 1) * n * n);
      for (std::int64_t e = 0; e < n * n; ++e) {
        ASSERT_TRUE(std::isfinite(vb[e])) << "V element " << e;
      }
      EXPECT_LE(residual(ab, vb, wb, n), bound) << "residual";
      EXPECT_LE(orthogonality(vb, n), bound) << "orthogonality";
    }
  }

  /// `batch` random symmetric n x n matrices, checked in f32 and f64, with and without vectors.
  void random_case(Rng& rng, std::int64_t batch, std::int64_t n) {
    std::vector<double> a;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::vector<double> m = random_symmetric(rng, n);
      a.insert(a.end(), m.begin(), m.end());
    }
    run_and_check<float>(batch, n, a, true);
    run_and_check<double>(batch, n, a, true);
    run_and_check<float>(batch, n, a, false);
    run_and_check<double>(batch, n, a, false);
  }
};

TEST_F(CudaEighTest, RandomSymmetricOnBothSidesOfTheJacobiLimit) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {1, 2, 3, 5, 16, 17, 31, 32, 33, 64, 100, 257, 1000}) {
    random_case(rng, 1, n);
  }
}

TEST_F(CudaEighTest, Batches) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  // 7 of 32 (one block each), 5 of 17, 9 of 16 (four a block: the last block part empty), 3
  // of 100 (syevd, one after another), 300 of 3.
  random_case(rng, 7, 32);
  random_case(rng, 5, 17);
  random_case(rng, 9, 16);
  random_case(rng, 3, 100);
  random_case(rng, 300, 3);
}

TEST_F(CudaEighTest, BatchAcrossLaunchChunks) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  // n = 32 launches 16384 matrices at a time: 16387 make two launches; every 61st matrix and
  // the last are checked.
  const std::int64_t batch = 16387, n = 32;
  std::vector<double> a;
  a.reserve(static_cast<std::size_t>(batch * n * n));
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::vector<double> m = random_symmetric(rng, n);
    a.insert(a.end(), m.begin(), m.end());
  }
  run_and_check<float>(batch, n, a, true, 61);
}

TEST_F(CudaEighTest, RepeatedEigenvalues) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  // Q diag(1, 1, 1, 2, 2, 3, 3, 3, ...) Q^T: clusters of three and two equal values.
  for (const std::int64_t n : {8, 16, 31, 32, 48, 130}) {
    std::vector<double> lambda(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      lambda[i] = 1.0 + static_cast<double>((i / 5) * 2 + (i % 5 >= 3 ? 1 : 0));
    const std::vector<double> a = testing::matrix_with_eigenvalues(rng, lambda);
    run_and_check<float>(1, n, a, true);
    run_and_check<double>(1, n, a, true);
  }
}

TEST_F(CudaEighTest, SpectraOfEitherSignAndEveryScale) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  // The batched kernel scales each matrix by a power of two and shifts it to positive definite:
  // negative definite and rank-one negative matrices, and entries near the ends of each
  // type's exponent range (whose squares a plain Gram product would overflow or flush).
  for (const std::int64_t n : {4, 16, 29}) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    const std::vector<double> minus_ones(static_cast<std::size_t>(n * n), -1.0);
    run_and_check<float>(1, n, minus_ones, true);
    run_and_check<double>(1, n, minus_ones, true);
    std::vector<double> lambda(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) lambda[i] = -1.0 - static_cast<double>(i);
    const std::vector<double> negative = testing::matrix_with_eigenvalues(rng, lambda);
    run_and_check<float>(1, n, negative, true);
    run_and_check<double>(1, n, negative, true);
    const std::vector<double> base = random_symmetric(rng, n);
    for (const double scale : {1e30, 1e-30}) {
      std::vector<double> scaled(base);
      for (double& x : scaled) x *= scale;
      run_and_check<float>(1, n, scaled, true);
    }
    for (const double scale : {1e150, 1e-150}) {
      std::vector<double> scaled(base);
      for (double& x : scaled) x *= scale;
      run_and_check<double>(1, n, scaled, true);
    }
  }
}

TEST_F(CudaEighTest, DiagonalAndZeroMatrices) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {1, 7, 32, 40}) {
    std::vector<double> diag(static_cast<std::size_t>(n * n), 0.0);
    for (std::int64_t i = 0; i < n; ++i) diag[i * n + i] = rng.uniform(-5, 5);
    run_and_check<float>(1, n, diag, true);
    run_and_check<double>(1, n, diag, true);
    const std::vector<double> zero(static_cast<std::size_t>(n * n), 0.0);
    run_and_check<double>(1, n, zero, true);
  }
  // A diagonal matrix needs no rotation: its eigenvalues are its diagonal, sorted, exactly.
  const std::int64_t n = 9;
  std::vector<double> diag(static_cast<std::size_t>(n * n), 0.0);
  std::vector<double> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) values[i] = diag[i * n + i] = rng.uniform(-5, 5);
  std::sort(values.begin(), values.end());
  EighShape shape;
  shape.n = n;
  shape.compute_vectors = false;
  const absl::StatusOr<std::size_t> ws_bytes = cuda::eigh_workspace_bytes(ctx_, shape);
  ASSERT_TRUE(ws_bytes.ok()) << ws_bytes.status();
  DeviceBuffer da = device_.buffer(diag.size() * 8), dw = device_.buffer(n * 8),
               ws = device_.buffer(*ws_bytes);
  ASSERT_CUDA(cudaMemcpy(da.data(), diag.data(), diag.size() * 8, cudaMemcpyHostToDevice));
  const absl::StatusOr<EighInfo> info =
      cuda::eigh(ctx_, da.data(), dw.data(), nullptr, shape, ws.data(), *ws_bytes);
  ASSERT_TRUE(info.ok()) << info.status();
  std::vector<double> hw(static_cast<std::size_t>(n));
  ASSERT_CUDA(cudaMemcpy(hw.data(), dw.data(), hw.size() * 8, cudaMemcpyDeviceToHost));
  EXPECT_EQ(hw, values);
}

TEST_F(CudaEighTest, ReadsOnlyTheLowerTriangle) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {5, 16, 32, 50}) {
    const std::int64_t batch = 2;
    std::vector<double> symmetric, a;
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::vector<double> m = random_symmetric(rng, n);
      symmetric.insert(symmetric.end(), m.begin(), m.end());
    }
    a = symmetric;
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t j = i + 1; j < n; ++j) a[(b * n + i) * n + j] = rng.uniform(100, 200);
      }
    }
    run_and_check<float>(batch, n, a, true, 1, &symmetric);
    run_and_check<double>(batch, n, a, true, 1, &symmetric);
  }
}

TEST_F(CudaEighTest, EmptyShapesSucceedAndTouchNothing) {
  GC_REQUIRE_GPU();
  for (const auto& [batch, n] : {std::pair<std::int64_t, std::int64_t>{0, 5}, {3, 0}, {0, 40}}) {
    EighShape shape;
    shape.batch = batch;
    shape.n = n;
    const absl::StatusOr<std::size_t> ws_bytes = cuda::eigh_workspace_bytes(ctx_, shape);
    ASSERT_TRUE(ws_bytes.ok()) << ws_bytes.status();
    EXPECT_EQ(*ws_bytes, 0u);
    const absl::StatusOr<EighInfo> info =
        cuda::eigh(ctx_, nullptr, nullptr, nullptr, shape, nullptr, 0);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_TRUE(info->converged);
  }
}

TEST_F(CudaEighTest, CancelledAndInvalid) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {16, 100}) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    EighShape shape;
    shape.batch = 3;
    shape.n = n;
    const std::vector<double> one = random_symmetric(rng, n);
    std::vector<double> a;
    for (int b = 0; b < 3; ++b) a.insert(a.end(), one.begin(), one.end());
    const absl::StatusOr<std::size_t> ws_bytes = cuda::eigh_workspace_bytes(ctx_, shape);
    ASSERT_TRUE(ws_bytes.ok()) << ws_bytes.status();
    DeviceBuffer da = device_.buffer(a.size() * 8), dw = device_.buffer(3 * n * 8),
                 dv = device_.buffer(a.size() * 8), ws = device_.buffer(*ws_bytes);
    ASSERT_CUDA(cudaMemcpy(da.data(), a.data(), a.size() * 8, cudaMemcpyHostToDevice));
    std::atomic<bool> flag{true};
    absl::StatusOr<EighInfo> r = cuda::eigh(ctx_, da.data(), dw.data(), dv.data(), shape, ws.data(),
                                            *ws_bytes, StopToken(&flag));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    r = cuda::eigh(ctx_, da.data(), dw.data(), dv.data(), shape, ws.data(), *ws_bytes - 1);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    r = cuda::eigh(ctx_, da.data(), dw.data(), nullptr, shape, ws.data(), *ws_bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    r = cuda::eigh(ctx_, nullptr, dw.data(), dv.data(), shape, ws.data(), *ws_bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EighShape bad = shape;
    bad.dtype = DType::kF16;
    r = cuda::eigh(ctx_, da.data(), dw.data(), dv.data(), bad, ws.data(), *ws_bytes);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_EQ(cuda::eigh_workspace_bytes(ctx_, bad).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  // syevd needs the cuSOLVER handle; the Jacobi kernel does not.
  cuda::Context no_solver = ctx_;
  no_solver.cusolver = nullptr;
  EighShape large;
  large.n = 33;
  EXPECT_EQ(cuda::eigh_workspace_bytes(no_solver, large).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EighShape small;
  small.n = 32;
  EXPECT_TRUE(cuda::eigh_workspace_bytes(no_solver, small).ok());
}

TEST_F(CudaEighTest, CancelBetweenMatricesOfABatch) {
  GC_REQUIRE_GPU();
  GC_SEEDED_RNG(rng);
  // 40 matrices of 400 (syevd, several ms each): a flag raised 20 ms in stops the batch after
  // the matrix then running, with the stream drained.
  const std::int64_t batch = 40, n = 400;
  const std::vector<double> one = random_symmetric(rng, n);
  std::vector<double> a;
  for (std::int64_t b = 0; b < batch; ++b) a.insert(a.end(), one.begin(), one.end());
  EighShape shape;
  shape.batch = batch;
  shape.n = n;
  const absl::StatusOr<std::size_t> ws_bytes = cuda::eigh_workspace_bytes(ctx_, shape);
  ASSERT_TRUE(ws_bytes.ok()) << ws_bytes.status();
  DeviceBuffer da = device_.buffer(a.size() * 8), dw = device_.buffer(batch * n * 8),
               dv = device_.buffer(a.size() * 8), ws = device_.buffer(*ws_bytes);
  ASSERT_CUDA(cudaMemcpy(da.data(), a.data(), a.size() * 8, cudaMemcpyHostToDevice));
  const auto [r, late_ms] =
      testing::call_stopped_after(std::chrono::milliseconds(20), [&](StopToken stop) {
        return cuda::eigh(ctx_, da.data(), dw.data(), dv.data(), shape, ws.data(), *ws_bytes, stop);
      });
  EXPECT_EQ(cudaStreamQuery(ctx_.stream), cudaSuccess) << "work left on the stream";
  ASSERT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_NE(r.status().message().find("of 40 matrices"), std::string::npos) << r.status();
  ::testing::Test::RecordProperty("eigh_cancel_latency_ms", std::to_string(late_ms));
  EXPECT_LT(late_ms, 200.0) << r.status();
}

}  // namespace
}  // namespace gcompute::kernels
