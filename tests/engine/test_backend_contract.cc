// SPDX-License-Identifier: Apache-2.0
// The Backend contract, written once and run over every backend present: the CPU backend
// always, the CUDA backend where one can be made (its cases skip, saying why, where none can:
// no GPU, no driver, or a build without CUDA). Backends come from the factory, so this file
// needs neither CUDA headers nor #ifdef. Results are checked against the independent oracles
// of tests/support (long-double GEMM, LAPACK drivers the backends do not use, textbook
// Floyd-Warshall). The backends allocate their outputs themselves, so outputs cannot be
// poisoned; inputs are drawn so that an unwritten (zero-filled) output element fails instead.
// CUDA-only behaviour (lanes, the pinned pool, device residency, races) is in
// test_cuda_backend.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "engine/backend_factory.hpp"
#include "kernels/cpu/matmul_shape.hpp"
#include "kernels/cpu/svd_check.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::server {
namespace {

using ::gcompute::testing::kInf;
using ::gcompute::testing::Rng;

/// A GPU backend may answer transposes of at most this many bytes on the host when their result
/// returns there (CudaBackend::kHostTransposeBytes).
constexpr std::uint64_t kHostAnswerBytes = std::uint64_t{64} << 10;

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  if constexpr (std::is_same_v<T, double>) return DType::kF64;
  return DType::kI32;
}

/// A host matrix holding `values` converted to T.
template <typename T>
Matrix host_matrix(std::int64_t batch, std::int64_t rows, std::int64_t cols,
                   const std::vector<double>& values) {
  Matrix m = *allocate_matrix(MatrixDesc{dtype_of<T>(), batch, rows, cols});
  EXPECT_EQ(values.size(), m.desc.elements());
  T* p = m.as_mutable<T>();
  for (std::size_t i = 0; i < values.size() && i < m.desc.elements(); ++i) {
    p[i] = static_cast<T>(values[i]);
  }
  return m;
}

void expect_desc(const MatrixDesc& got, const MatrixDesc& want) {
  EXPECT_EQ(got.dtype, want.dtype) << dtype_name(got.dtype) << " vs " << dtype_name(want.dtype);
  EXPECT_EQ(got.batch, want.batch);
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.cols, want.cols);
}

double epsilon(DType t) {
  return t == DType::kF32 ? std::numeric_limits<float>::epsilon()
                          : std::numeric_limits<double>::epsilon();
}

/// Rounds every value to what T holds, so that the oracle sees exactly the input.
template <typename T>
std::vector<double> rounded(std::vector<double> v) {
  for (double& x : v) x = static_cast<double>(static_cast<T>(x));
  return v;
}

class BackendContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    BackendOptions options;
    options.cpu_workers = 2;
    options.lanes_per_device = 2;
    options.pinned_pool_bytes = 64ull << 20;  // large inputs stream through it in blocks
    if (GetParam() == "cpu") {
      options.device = "cpu";
      auto choice = make_backend(options);
      ASSERT_TRUE(choice.ok()) << choice.status();
      backend_ = std::move(choice->backend);
    } else {
      auto made = make_cuda_backend(options);
      // UNAVAILABLE is the factory's "no usable GPU here"; any other failure is a bug.
      if (made.status().code() == absl::StatusCode::kUnavailable) {
        GTEST_SKIP() << "no CUDA backend: " << made.status().message();
      }
      ASSERT_TRUE(made.ok()) << made.status();
      backend_ = *std::move(made);
    }
    ASSERT_EQ(backend_->name(), GetParam());
  }

  void TearDown() override {
    if (backend_ == nullptr) return;
    // Every job has returned: no staging memory may still be held, and the gauges describe
    // exactly the backend's devices.
    const ResourceStats stats = backend_->resource_stats();
    EXPECT_EQ(stats.pinned_used_bytes, 0u);
    EXPECT_LE(stats.pinned_used_bytes, stats.pinned_capacity_bytes);
    ASSERT_EQ(stats.devices.size(), backend_->devices().size());
    for (const ResourceStats::Device& d : stats.devices) {
      EXPECT_TRUE(d.healthy) << "device " << d.index;
      EXPECT_LE(d.used_bytes, d.total_bytes) << "device " << d.index;
    }
  }

  /// The elements of `m` (f32, f64 or i32) in double, fetched to the host if need be.
  std::vector<double> values(Matrix m) {
    const absl::Status st = backend_->ensure_on_host(m);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return {};
    std::vector<double> out(m.desc.elements());
    for (std::size_t i = 0; i < out.size(); ++i) {
      switch (m.desc.dtype) {
        case DType::kF32:
          out[i] = m.as<float>()[i];
          break;
        case DType::kF64:
          out[i] = m.as<double>()[i];
          break;
        case DType::kI32:
          out[i] = m.as<std::int32_t>()[i];
          break;
        default:
          ADD_FAILURE() << "values() of " << dtype_name(m.desc.dtype);
          return {};
      }
    }
    return out;
  }

  /// The bytes of `m`, fetched to the host if need be.
  std::string bytes(Matrix m) {
    const absl::Status st = backend_->ensure_on_host(m);
    EXPECT_TRUE(st.ok()) << st;
    return st.ok() ? *m.data : std::string();
  }

  void expect_ran_here(const JobContext& ctx) {
    EXPECT_TRUE(absl::StartsWith(ctx.device, backend_->name()))
        << "ran on " << ctx.device << ", backend " << backend_->name();
  }

  std::unique_ptr<Backend> backend_;
};

// ---- Transpose ---------------------------------------------------------------------------

/// Row-major transpose of every matrix of a batch, moving elements of `size` bytes.
std::string reference_transpose(const std::string& a, std::int64_t batch, std::int64_t rows,
                                std::int64_t cols, std::size_t size) {
  std::string t(a.size(), '\0');
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::size_t from = static_cast<std::size_t>((b * rows + i) * cols + j) * size;
        const std::size_t to = static_cast<std::size_t>((b * cols + j) * rows + i) * size;
        std::memcpy(t.data() + to, a.data() + from, size);
      }
    }
  }
  return t;
}

TEST_P(BackendContract, TransposeMovesEveryElementOfRaggedShapes) {
  GC_SEEDED_RNG(rng);
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {1, 1, 1},   {1, 1, 37},   {1, 37, 1},  {1, 31, 67},
      {3, 33, 65}, {2, 97, 129}, {1, 257, 3}, {1, 3001, 2999}};  // the last: 36 MB in f32
  for (const DType dtype : {DType::kF32, DType::kF64, DType::kI32, DType::kF16, DType::kBF16}) {
    for (const auto& [batch, rows, cols] : shapes) {
      if (rows * cols > 1'000'000 && dtype != DType::kF32) continue;
      SCOPED_TRACE(::testing::Message()
                   << batch << " x " << rows << "x" << cols << " " << dtype_name(dtype));
      Matrix a = *allocate_matrix(MatrixDesc{dtype, batch, rows, cols});
      const auto random = gcompute::testing::random_bytes(rng, a.desc.bytes());
      std::memcpy(a.mutable_bytes(), random.data(), random.size());
      const std::string want =
          reference_transpose(*a.data, batch, rows, cols, kernels::dtype_size(dtype));
      // Results kept on the server always run on the backend's device; results for the host
      // may be answered by the host where that is sooner (a GPU backend's small transposes).
      for (const bool stay : {true, false}) {
        SCOPED_TRACE(stay ? "result kept on the server" : "result to the host");
        JobContext ctx;
        ctx.results_stay_on_server = stay;
        auto t = backend_->transpose(a, ctx);
        ASSERT_TRUE(t.ok()) << t.status();
        expect_desc(t->desc, MatrixDesc{dtype, batch, cols, rows});
        ASSERT_TRUE(bytes(*t) == want) << "transposed bytes differ";
        if (stay || a.desc.bytes() > kHostAnswerBytes) {
          expect_ran_here(ctx);
        } else {
          EXPECT_TRUE(absl::StartsWith(ctx.device, backend_->name()) || ctx.device == "cpu")
              << ctx.device;
        }
      }
    }
  }
}

TEST_P(BackendContract, ResultsKeptOnTheServerComeBackAndServeAsInputs) {
  GC_SEEDED_RNG(rng);
  const std::vector<double> values_a = gcompute::testing::random_uniform<double>(rng, 513 * 257);
  Matrix a = host_matrix<float>(1, 513, 257, values_a);
  JobContext ctx;
  ctx.results_stay_on_server = true;  // a GPU backend may keep the result on the device
  auto t = backend_->transpose(a, ctx);
  ASSERT_TRUE(t.ok()) << t.status();
  JobContext again;
  auto back = backend_->transpose(*t, again);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(bytes(*back) == *a.data) << "transposing twice does not give the input back";
  EXPECT_TRUE(bytes(*t) == reference_transpose(*a.data, 1, 513, 257, 4));
}

// ---- MatMul ------------------------------------------------------------------------------

struct GemmCase {
  std::int64_t a_batch, b_batch, m, n, k;
  double alpha, beta;  // beta != 0 passes C
};

class BackendMatmul : public BackendContract {
 protected:
  /// One product in T against the long-double reference, element by element:
  /// |got - ref| <= 4 (k + 2) eps sum|terms| (the rounding of a k-term dot product).
  template <typename T>
  void check(Rng& rng, const GemmCase& g, bool ta, bool tb) {
    SCOPED_TRACE(::testing::Message()
                 << dtype_name(dtype_of<T>()) << " batch " << g.a_batch << "/" << g.b_batch
                 << " m=" << g.m << " n=" << g.n << " k=" << g.k << " ta=" << ta << " tb=" << tb
                 << " alpha=" << g.alpha << " beta=" << g.beta);
    const kernels::MatmulShape s = kernels::matmul_test::make_shape(
        {g.m, g.n, g.k}, {std::max(g.a_batch, g.b_batch), g.a_batch, g.b_batch}, ta, tb,
        {g.alpha, g.beta}, dtype_of<T>(), kernels::Precision::kDefault);
    ASSERT_TRUE(kernels::validate(s).ok());
    // Away from zero, so that no true product element is zero-filled memory's value.
    auto draw = [&](std::int64_t count) {
      auto v =
          gcompute::testing::random_uniform<double>(rng, static_cast<std::size_t>(count), 0.5, 1.5);
      return rounded<T>(std::move(v));
    };
    const std::vector<double> av = draw(g.a_batch * g.m * g.k), bv = draw(g.b_batch * g.k * g.n),
                              cv = draw(s.batch * g.m * g.n);
    const Matrix a = host_matrix<T>(g.a_batch, ta ? g.k : g.m, ta ? g.m : g.k, av);
    const Matrix b = host_matrix<T>(g.b_batch, tb ? g.n : g.k, tb ? g.k : g.n, bv);
    const Matrix c = host_matrix<T>(s.batch, g.m, g.n, cv);
    JobContext ctx;
    auto out = backend_->matmul(a, b, g.beta != 0 ? &c : nullptr, s, ctx);
    ASSERT_TRUE(out.ok()) << out.status();
    expect_desc(out->desc, MatrixDesc{s.dtype, s.batch, g.m, g.n});
    expect_ran_here(ctx);
    const std::vector<double> got = values(*out);
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), s.batch * g.m * g.n);
    const double tol = 4 * static_cast<double>(g.k + 2) * epsilon(s.dtype);
    for (std::int64_t p = 0; p < s.batch; ++p) {
      const double* ap = av.data() + (g.a_batch == 1 ? 0 : p) * g.m * g.k;
      const double* bp = bv.data() + (g.b_batch == 1 ? 0 : p) * g.k * g.n;
      const double* cp = cv.data() + p * g.m * g.n;
      const auto ref =
          gcompute::testing::reference_gemm(ap, bp, cp, g.m, g.n, g.k, ta, tb, g.alpha, g.beta);
      const auto scale =
          gcompute::testing::reference_gemm_abs(ap, bp, cp, g.m, g.n, g.k, ta, tb, g.alpha, g.beta);
      for (std::int64_t i = 0; i < g.m * g.n; ++i) {
        const double want = static_cast<double>(ref[i]);
        ASSERT_LE(std::abs(got[p * g.m * g.n + i] - want), tol * static_cast<double>(scale[i]))
            << "batch " << p << " element " << i << ": got " << got[p * g.m * g.n + i] << ", want "
            << want;
      }
    }
  }
};

TEST_P(BackendMatmul, RaggedShapesTransposesBroadcastsAlphaBeta) {
  GC_SEEDED_RNG(rng);
  const std::vector<GemmCase> cases = {
      {1, 1, 1, 1, 1, 1.0, 0.0},    {1, 1, 1, 67, 1, 1.0, 0.0},    {1, 1, 67, 1, 13, 1.0, 0.0},
      {1, 1, 1, 1, 257, 1.0, 0.0},  {1, 1, 31, 37, 41, -0.5, 0.0}, {1, 1, 65, 33, 129, 1.0, 0.75},
      {1, 3, 7, 5, 13, 1.0, 0.0},   {3, 1, 17, 9, 3, 2.0, -1.0},   {2, 2, 33, 17, 97, 1.0, 0.5},
      {1, 1, 67, 45, 129, 1.0, 0.5}};
  for (const GemmCase& g : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        check<float>(rng, g, ta, tb);
        check<double>(rng, g, ta, tb);
      }
    }
  }
}

// ---- SVD ---------------------------------------------------------------------------------

class BackendSvd : public BackendContract {
 protected:
  /// One SVD of a batch of Gaussian matrices in `c`'s dtype and method; every matrix checked
  /// by svd_check.hpp against LAPACK dgesvd on the same (rounded) input.
  void check(Rng& rng, const kernels::svd_test::Case& c, std::int64_t batch, std::int64_t m,
             std::int64_t n, bool full, bool uv) {
    const kernels::SvdShape s = kernels::svd_test::make_shape(c, m, n, batch, full, uv);
    const std::vector<double> a = kernels::svd_test::round_to(
        c.dtype, gcompute::testing::random_normal<double>(rng, batch * m * n));
    const Matrix input = c.dtype == DType::kF32 ? host_matrix<float>(batch, m, n, a)
                                                : host_matrix<double>(batch, m, n, a);
    JobContext ctx;
    auto out = backend_->svd(input, s, ctx);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(out->info.converged);
    const std::int64_t p = std::min(m, n);
    expect_desc(out->s.desc, MatrixDesc{c.dtype, batch, 1, p});
    ASSERT_EQ(out->u.has_value(), uv);
    ASSERT_EQ(out->vt.has_value(), uv);
    kernels::svd_test::Result r;
    r.info = out->info;
    r.s = values(out->s);
    if (uv) {
      expect_desc(out->u->desc, MatrixDesc{c.dtype, batch, m, full ? m : p});
      expect_desc(out->vt->desc, MatrixDesc{c.dtype, batch, full ? n : p, n});
      r.u = values(*out->u);
      r.vt = values(*out->vt);
    }
    const auto tol = kernels::svd_test::default_tolerances(c.dtype, m, n);
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::vector<double> ab(a.begin() + b * m * n, a.begin() + (b + 1) * m * n);
      const auto oracle = gcompute::testing::lapack_svd(ab, m, n, false);
      ASSERT_EQ(oracle.info, 0);
      kernels::svd_test::check_one(a.data() + b * m * n, r, b, s, oracle.s, tol);
    }
  }
};

TEST_P(BackendSvd, EveryMethodOnRaggedShapes) {
  GC_SEEDED_RNG(rng);
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1}, {1, 7}, {7, 1}, {13, 5}, {5, 13}, {33, 31}, {31, 65}, {67, 37}, {90, 70}};
  for (const kernels::svd_test::Case& c : kernels::svd_test::all_cases()) {
    for (const auto& [m, n] : shapes) {
      check(rng, c, 1, m, n, false, true);
      check(rng, c, 1, m, n, false, false);
      check(rng, c, 1, m, n, true, true);
    }
    check(rng, c, 3, 9, 4, false, true);
    check(rng, c, 2, 17, 33, true, true);
  }
}

// ---- Eigh --------------------------------------------------------------------------------

class BackendEigh : public BackendContract {
 protected:
  /// A batch of symmetric matrices Q diag(lambda) Q^T with known eigenvalues in [-10, 10):
  /// w must match them and, with vectors, A V = V diag(w) with orthonormal V.
  /// `repeated`: every eigenvalue appears twice or more (integers in [-3, 3]).
  template <typename T>
  void check(Rng& rng, std::int64_t batch, std::int64_t n, bool vectors, bool repeated = false) {
    SCOPED_TRACE(::testing::Message()
                 << "eigh " << batch << " x " << n << "x" << n << " " << dtype_name(dtype_of<T>())
                 << (vectors ? " vectors" : " values only") << (repeated ? " repeated" : ""));
    std::vector<double> a;
    std::vector<std::vector<double>> lambdas;
    for (std::int64_t b = 0; b < batch; ++b) {
      std::vector<double> lambda =
          gcompute::testing::random_uniform<double>(rng, static_cast<std::size_t>(n), -10, 10);
      if (repeated) {
        for (std::size_t i = 0; i < lambda.size(); ++i) {
          lambda[i] = static_cast<double>(static_cast<int>(i / 2) % 7 - 3);
        }
      }
      // Rounding to T keeps the matrix exactly symmetric: (j, i) is a copy of (i, j).
      const std::vector<double> m =
          rounded<T>(gcompute::testing::matrix_with_eigenvalues(rng, lambda));
      a.insert(a.end(), m.begin(), m.end());
      std::sort(lambda.begin(), lambda.end());
      lambdas.push_back(lambda);
    }
    kernels::EighShape s;
    s.batch = batch;
    s.n = n;
    s.dtype = dtype_of<T>();
    s.compute_vectors = vectors;
    JobContext ctx;
    auto out = backend_->eigh(host_matrix<T>(batch, n, n, a), s, ctx);
    ASSERT_TRUE(out.ok()) << out.status();
    expect_ran_here(ctx);
    EXPECT_TRUE(out->info.converged);
    expect_desc(out->w.desc, MatrixDesc{s.dtype, batch, 1, n});
    ASSERT_EQ(out->v.has_value(), vectors);
    const std::vector<double> w = values(out->w);
    ASSERT_EQ(static_cast<std::int64_t>(w.size()), batch * n);
    std::vector<double> v;
    if (vectors) {
      expect_desc(out->v->desc, MatrixDesc{s.dtype, batch, n, n});
      v = values(*out->v);
      ASSERT_EQ(static_cast<std::int64_t>(v.size()), batch * n * n);
    }
    // Backward stable solvers: errors of order n eps |A| (|A| <= 10 here).
    const double tol = 64 * epsilon(s.dtype) * static_cast<double>(n);
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(w[b * n + i], lambdas[b][i], 10 * tol) << "matrix " << b << " w[" << i << "]";
      }
      if (!vectors) continue;
      const double* ab = a.data() + b * n * n;
      EXPECT_LE(gcompute::testing::eigen_residual(ab, v.data() + b * n * n, w.data() + b * n, n),
                tol)
          << "matrix " << b;
      EXPECT_LE(gcompute::testing::orthonormal_columns_error(v.data() + b * n * n, n, n), tol)
          << "matrix " << b;
    }
  }
};

TEST_P(BackendEigh, KnownEigenvaluesOnRaggedSizes) {
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {1, 2, 7, 31, 33, 65}) {
    check<double>(rng, 1, n, true);
    check<float>(rng, 1, n, true);
    check<double>(rng, 3, n, true);
    check<float>(rng, 2, n, false);
  }
}

TEST_P(BackendEigh, BatchesOfSmallMatricesAndRepeatedEigenvalues) {
  GC_SEEDED_RNG(rng);
  // Many small matrices in one call (the GPU's batched Jacobi kernel), and eigenvalues that
  // repeat, on both sides of n = 32.
  check<float>(rng, 40, 16, true);
  check<double>(rng, 25, 32, true);
  check<double>(rng, 9, 5, false);
  for (const std::int64_t n : {6, 17, 32, 40}) {
    check<double>(rng, 2, n, true, true);
    check<float>(rng, 2, n, true, true);
  }
}

TEST_P(BackendEigh, AsymmetricInputIsInvalidArgumentNamingThePair) {
  std::vector<double> a = {1, 2, 3, 2, 5, 6, 3, 6, 9};
  a[7] = 6.5;  // a[2][1] = 6.5 but a[1][2] = 6
  kernels::EighShape s;
  s.n = 3;
  s.dtype = DType::kF64;
  JobContext ctx;
  auto out = backend_->eigh(host_matrix<double>(1, 3, 3, a), s, ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  for (const char* part : {"not symmetric", "a[2][1] = 6.5", "a[1][2] = 6"}) {
    EXPECT_TRUE(absl::StrContains(out.status().message(), part)) << out.status();
  }
  // Within a looser tolerance the same matrix is accepted.
  s.symmetry_tolerance = 0.1;
  JobContext loose;
  auto accepted = backend_->eigh(host_matrix<double>(1, 3, 3, a), s, loose);
  EXPECT_TRUE(accepted.ok()) << accepted.status();
}

// ---- APSP --------------------------------------------------------------------------------

/// A random graph with integer weights, some negative, and every cycle positive: weights in
/// [1, 20] plus a potential p(u) - p(v), which adds nothing around a cycle (so shortest paths
/// are simple and next hops cannot loop).
std::vector<double> random_graph(Rng& rng, std::int64_t n, double density) {
  std::vector<double> potential(static_cast<std::size_t>(n));
  for (double& p : potential) p = static_cast<double>(rng.uniform_int(0, 8));
  std::vector<double> w(static_cast<std::size_t>(n * n), kInf);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (!rng.bernoulli(density)) continue;
      w[i * n + j] = static_cast<double>(rng.uniform_int(1, 20)) + potential[i] - potential[j];
    }
  }
  return w;
}

class BackendApsp : public BackendContract {
 protected:
  /// Runs APSP on `w` (+inf: no edge) in T; the distances must equal Floyd-Warshall's exactly
  /// (integer weights: every sum is exact) and every next hop must start a shortest path.
  template <typename T>
  void check(const std::vector<double>& w, std::int64_t n, bool next_hop) {
    SCOPED_TRACE(::testing::Message() << "apsp n=" << n << " " << dtype_name(dtype_of<T>())
                                      << (next_hop ? " with next hops" : ""));
    std::vector<double> input = w;
    if constexpr (std::is_same_v<T, std::int32_t>) {
      for (double& x : input) x = std::isinf(x) ? kernels::kI32NoEdge : x;
    }
    const kernels::ApspShape s{n, dtype_of<T>(), next_hop};
    JobContext ctx;
    auto out = backend_->apsp(host_matrix<T>(1, n, n, input), s, ctx);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_FALSE(out->info.negative_cycle);
    EXPECT_FALSE(out->info.out_of_range);
    expect_desc(out->distances.desc, MatrixDesc{s.dtype, 1, n, n});
    std::vector<double> d = values(out->distances);
    ASSERT_EQ(static_cast<std::int64_t>(d.size()), n * n);
    if constexpr (std::is_same_v<T, std::int32_t>) {
      for (double& x : d) x = x == kernels::kI32NoEdge ? kInf : x;
    }
    const std::vector<double> ref = gcompute::testing::floyd_warshall_reference(w, n);
    for (std::int64_t e = 0; e < n * n; ++e) {
      ASSERT_EQ(d[e], ref[e]) << "D[" << e / n << "][" << e % n << "]";
    }
    ASSERT_EQ(out->next_hop.has_value(), next_hop);
    if (!next_hop) return;
    expect_next_hops(*out->next_hop, w, ref, n);
  }

  /// Following `next_hop` from i reaches j along edges of `w` whose weights sum to ref[i][j].
  void expect_next_hops(const Matrix& next_hop, const std::vector<double>& w,
                        const std::vector<double>& ref, std::int64_t n) {
    expect_desc(next_hop.desc, MatrixDesc{DType::kI32, 1, n, n});
    const std::vector<double> hop = values(next_hop);
    ASSERT_EQ(static_cast<std::int64_t>(hop.size()), n * n);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        const double got = hop[i * n + j];
        if (std::isinf(ref[i * n + j])) {
          ASSERT_EQ(got, -1) << "N[" << i << "][" << j << "] of an unreachable pair";
          continue;
        }
        if (i == j) {
          ASSERT_EQ(got, i) << "N[" << i << "][" << i << "]";
          continue;
        }
        // Following the hops from i reaches j along edges whose weights sum to D[i][j].
        double length = 0;
        std::int64_t at = i;
        for (std::int64_t steps = 0; at != j; ++steps) {
          ASSERT_LT(steps, n) << "the hops from " << i << " to " << j << " do not arrive";
          const auto next = static_cast<std::int64_t>(hop[at * n + j]);
          ASSERT_TRUE(next >= 0 && next < n) << "N[" << at << "][" << j << "] = " << next;
          ASSERT_FALSE(std::isinf(w[at * n + next])) << "no edge " << at << " -> " << next;
          length += w[at * n + next];
          at = next;
        }
        ASSERT_EQ(length, ref[i * n + j]) << "the path by next hops from " << i << " to " << j;
      }
    }
  }
};

TEST_P(BackendApsp, ExactDistancesAndNextHopsWithNegativeWeights) {
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {1, 2, 31, 67, 129, 150}) {
    for (const double density : {0.05, 0.3}) {
      const std::vector<double> w = random_graph(rng, n, density);
      check<float>(w, n, false);
      check<float>(w, n, true);
      check<std::int32_t>(w, n, false);
      check<std::int32_t>(w, n, true);
    }
  }
}

TEST_P(BackendApsp, AddedEdgesAndVerticesGiveTheRecomputedDistances) {
  GC_SEEDED_RNG(rng);
  int cycles = 0, updates = 0;
  for (const std::int64_t n_old : {1, 31, 67, 150}) {
    for (const std::int64_t grow : {0, 2}) {
      for (const bool next_hop : {false, true}) {
        for (const bool on_server : {false, true}) {  // CUDA: the cached result on the device
          SCOPED_TRACE(::testing::Message() << "n_old=" << n_old << " grow=" << grow << " next_hop="
                                            << next_hop << " on_server=" << on_server);
          const std::vector<double> w = random_graph(rng, n_old, 0.1);
          JobContext ctx;
          ctx.results_stay_on_server = on_server;
          auto base = backend_->apsp(host_matrix<float>(1, n_old, n_old, w),
                                     kernels::ApspShape{n_old, DType::kF32, next_hop}, ctx);
          ASSERT_TRUE(base.ok()) << base.status();
          ASSERT_FALSE(base->info.negative_cycle);
          const std::int64_t n = n_old + grow;
          std::vector<double> new_w(static_cast<std::size_t>(n * n), kInf);
          for (std::int64_t i = 0; i < n_old; ++i) {
            std::copy_n(&w[i * n_old], n_old, &new_w[i * n]);
          }
          std::vector<kernels::GraphEdge> edges;
          for (int e = 0; e < 12; ++e) {
            const auto u = static_cast<std::uint32_t>(rng.uniform_int(0, n - 1));
            const auto v = static_cast<std::uint32_t>(rng.uniform_int(0, n - 1));
            const auto weight = static_cast<double>(rng.uniform_int(-3, 9));
            edges.push_back(kernels::GraphEdge{u, v, static_cast<float>(weight)});
            new_w[u * n + v] = std::min(new_w[u * n + v], weight);
          }
          auto out = backend_->apsp_add_edges(*base, kernels::ApspUpdateShape{n_old, n, next_hop},
                                              edges, ctx);
          ASSERT_TRUE(out.ok()) << out.status();
          expect_ran_here(ctx);
          bool negative = false;
          const std::vector<double> ref =
              gcompute::testing::floyd_warshall_reference(new_w, n, &negative);
          ASSERT_EQ(out->info.negative_cycle, negative);
          if (negative) {
            ++cycles;
            ASSERT_TRUE(out->info.cycle_vertex >= 0 && out->info.cycle_vertex < n);
            continue;
          }
          ++updates;
          expect_desc(out->distances.desc, MatrixDesc{DType::kF32, 1, n, n});
          const std::vector<double> d = values(out->distances);
          for (std::int64_t e = 0; e < n * n; ++e) {
            ASSERT_EQ(d[e], ref[e]) << "D[" << e / n << "][" << e % n << "]";
          }
          ASSERT_EQ(out->next_hop.has_value(), next_hop);
          if (next_hop) expect_next_hops(*out->next_hop, new_w, ref, n);
          // The cached result the update started from is left as it was.
          const std::vector<double> again = values(base->distances);
          const std::vector<double> before = gcompute::testing::floyd_warshall_reference(w, n_old);
          for (std::int64_t e = 0; e < n_old * n_old; ++e) ASSERT_EQ(again[e], before[e]);
        }
      }
    }
  }
  EXPECT_GT(updates, 10);
  EXPECT_GT(cycles, 0) << "no batch closed a negative cycle: the detection went untested";
}

TEST_P(BackendApsp, NegativeCycleIsReportedWithAVertexReachingIt) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 40;
  std::vector<double> w = random_graph(rng, n, 0.1);
  for (double& x : w) x = std::isinf(x) ? x : std::abs(x);
  w[5 * n + 17] = -3;  // 5 -> 17 -> 23 -> 5 sums to -1
  w[17 * n + 23] = 1;
  w[23 * n + 5] = 1;
  bool negative = false;
  const std::vector<double> ref = gcompute::testing::floyd_warshall_reference(w, n, &negative);
  ASSERT_TRUE(negative);
  for (const DType dtype : {DType::kF32, DType::kI32}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::vector<double> input = w;
    if (dtype == DType::kI32) {
      for (double& x : input) x = std::isinf(x) ? kernels::kI32NoEdge : x;
    }
    const Matrix weights = dtype == DType::kF32 ? host_matrix<float>(1, n, n, input)
                                                : host_matrix<std::int32_t>(1, n, n, input);
    JobContext ctx;
    auto out = backend_->apsp(weights, kernels::ApspShape{n, dtype, true}, ctx);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_TRUE(out->info.negative_cycle);
    const std::int64_t v = out->info.cycle_vertex;
    ASSERT_TRUE(v >= 0 && v < n) << v;
    bool reaches_a_cycle = false;
    for (std::int64_t c = 0; c < n; ++c) {
      reaches_a_cycle |= ref[c * n + c] < 0 && !std::isinf(ref[v * n + c]);
    }
    EXPECT_TRUE(reaches_a_cycle) << "vertex " << v << " reaches no negative cycle";
  }
}

// ---- Cancellation ------------------------------------------------------------------------

TEST_P(BackendContract, IterativeOperationsStopWithCancelledForACancelledJob) {
  GC_SEEDED_RNG(rng);
  auto expect_cancelled = [](const absl::Status& st, const char* what) {
    EXPECT_EQ(st.code(), absl::StatusCode::kCancelled) << what << ": " << st;
  };
  const std::int64_t n = 300;
  const Matrix graph = host_matrix<float>(1, n, n, random_graph(rng, n, 0.2));
  const Matrix dense =
      host_matrix<double>(1, 96, 80, gcompute::testing::random_normal<double>(rng, 96 * 80));
  std::vector<double> lambda(64);
  for (std::size_t i = 0; i < lambda.size(); ++i) lambda[i] = static_cast<double>(i);
  const Matrix symmetric =
      host_matrix<double>(1, 64, 64, gcompute::testing::matrix_with_eigenvalues(rng, lambda));

  {
    JobContext ctx;
    ctx.cancelled = true;
    expect_cancelled(backend_->apsp(graph, kernels::ApspShape{n, DType::kF32, true}, ctx).status(),
                     "apsp");
  }
  {
    JobContext ctx;
    ctx.deadline = absl::Now() - absl::Seconds(1);  // the stop token fires without a cancel
    expect_cancelled(backend_->apsp(graph, kernels::ApspShape{n, DType::kF32, false}, ctx).status(),
                     "apsp past its deadline");
  }
  for (const auto method :
       {kernels::SvdMethod::kAuto, kernels::SvdMethod::kJacobi, kernels::SvdMethod::kPolar}) {
    kernels::SvdShape s;
    s.m = 96;
    s.n = 80;
    s.dtype = DType::kF64;
    s.method = method;
    JobContext ctx;
    ctx.cancelled = true;
    expect_cancelled(backend_->svd(dense, s, ctx).status(), kernels::svd_method_name(method));
  }
  {
    kernels::EighShape s;
    s.n = 64;
    s.dtype = DType::kF64;
    JobContext ctx;
    ctx.cancelled = true;
    expect_cancelled(backend_->eigh(symmetric, s, ctx).status(), "eigh");
  }
}

// ---- Uploads and value scans -------------------------------------------------------------

TEST_P(BackendContract, UploadInChunksOutOfOrderThenBackToTheHost) {
  GC_SEEDED_RNG(rng);
  struct Case {
    MatrixDesc desc;
    std::uint64_t chunk;
  };
  // One chunk; chunks that split elements; a 12 MB matrix in 1 MiB chunks (several blocks of
  // a GPU backend's pinned staging).
  const std::vector<Case> cases = {{{DType::kF64, 1, 1, 1}, 8},
                                   {{DType::kI32, 3, 17, 19}, 13},
                                   {{DType::kF32, 1, 1, 4099}, 4096},
                                   {{DType::kF32, 1, 1000, 3000}, 1 << 20}};
  for (const Case& c : cases) {
    SCOPED_TRACE(describe(c.desc) + " in chunks of " + std::to_string(c.chunk));
    const auto data = gcompute::testing::random_bytes(rng, c.desc.bytes());
    auto sink = backend_->begin_upload(c.desc);
    ASSERT_TRUE(sink.ok()) << sink.status();
    std::vector<std::uint64_t> offsets;
    for (std::uint64_t o = 0; o < data.size(); o += c.chunk) offsets.push_back(o);
    std::shuffle(offsets.begin(), offsets.end(), rng.engine());
    for (const std::uint64_t o : offsets) {
      const std::uint64_t size = std::min<std::uint64_t>(c.chunk, data.size() - o);
      // Each chunk arrives in pieces, as gRPC's receive buffers cut it (empty ones included),
      // every other one whole.
      const char* chunk = reinterpret_cast<const char*>(data.data()) + o;
      std::vector<std::span<const char>> pieces;
      for (std::uint64_t at = 0; at < size;) {
        const std::uint64_t n = o % (2 * c.chunk) == 0
                                    ? size
                                    : std::min<std::uint64_t>(size - at, rng.engine()() % 5000);
        pieces.emplace_back(chunk + at, n);
        at += n;
      }
      const absl::Status st = (*sink)->write(o, pieces, size);
      ASSERT_TRUE(st.ok()) << "offset " << o << ": " << st;
    }
    auto stored = (*sink)->finish();
    ASSERT_TRUE(stored.ok()) << stored.status();
    expect_desc(stored->desc, c.desc);
    const std::string want(reinterpret_cast<const char*>(data.data()), data.size());
    // The stored matrix serves as an operand wherever it lives...
    JobContext ctx;
    auto t = backend_->transpose(*stored, ctx);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(bytes(*t) == reference_transpose(want, c.desc.batch, c.desc.rows, c.desc.cols,
                                                 kernels::dtype_size(c.desc.dtype)));
    // ...and ensure_on_host brings back exactly the bytes written.
    ASSERT_TRUE(backend_->ensure_on_host(*stored).ok());
    ASSERT_TRUE(stored->on_host());
    EXPECT_TRUE(*stored->data == want) << "uploaded bytes differ";
  }
}

TEST_P(BackendContract, FirstViolationFindsTheFirstBadElementWhereverItLives) {
  GC_SEEDED_RNG(rng);
  const std::int64_t rows = 37, cols = 53;
  std::vector<double> v = gcompute::testing::random_uniform<double>(rng, rows * cols);
  Matrix clean = host_matrix<float>(1, rows, cols, v);
  auto none = backend_->first_violation(clean, kernels::ValueCheck::kFinite);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->found()) << "index " << none->index;

  v[11 * cols + 7] = std::numeric_limits<double>::quiet_NaN();
  v[20 * cols + 3] = -kInf;
  Matrix bad = host_matrix<float>(1, rows, cols, v);
  auto host_scan = backend_->first_violation(bad, kernels::ValueCheck::kFinite);
  ASSERT_TRUE(host_scan.ok()) << host_scan.status();
  EXPECT_EQ(host_scan->index, 11 * cols + 7);
  // +inf is "no edge" for APSP; -inf is not a length.
  auto weights = backend_->first_violation(bad, kernels::ValueCheck::kApspWeight);
  ASSERT_TRUE(weights.ok()) << weights.status();
  EXPECT_EQ(weights->index, 11 * cols + 7);

  // A result kept on the server (on the device for a GPU backend): transposed, (20, 3) comes
  // before (11, 7) in row-major order.
  JobContext ctx;
  ctx.results_stay_on_server = true;
  auto t = backend_->transpose(bad, ctx);
  ASSERT_TRUE(t.ok()) << t.status();
  auto kept_scan = backend_->first_violation(*t, kernels::ValueCheck::kFinite);
  ASSERT_TRUE(kept_scan.ok()) << kept_scan.status();
  EXPECT_EQ(kept_scan->index, 3 * rows + 20);
  EXPECT_EQ(kept_scan->value, -kInf);
  auto kept_weights = backend_->first_violation(*t, kernels::ValueCheck::kApspWeight);
  ASSERT_TRUE(kept_weights.ok()) << kept_weights.status();
  EXPECT_EQ(kept_weights->index, 3 * rows + 20);

  // Kept f64 and i32 results, large enough for many blocks; the lowest bad index wins.
  const std::int64_t big = 1500;
  std::vector<double> f(static_cast<std::size_t>(big * big), 1.0);
  f[big * big - 5] = kInf;
  f[700 * big + 9] = std::numeric_limits<double>::quiet_NaN();  // (9, 700) once transposed
  auto tf = backend_->transpose(host_matrix<double>(1, big, big, f), ctx);
  ASSERT_TRUE(tf.ok()) << tf.status();
  auto f_scan = backend_->first_violation(*tf, kernels::ValueCheck::kFinite);
  ASSERT_TRUE(f_scan.ok()) << f_scan.status();
  EXPECT_EQ(f_scan->index, 9 * big + 700);
  std::vector<double> w(static_cast<std::size_t>(big * big), 5.0);
  w[3] = kernels::kI32NoEdge;                                              // "no edge" passes
  w[400 * big + 2] = -static_cast<double>(kernels::kI32MaxAbsWeight) - 1;  // (2, 400) transposed
  w[big * big - 1] = static_cast<double>(kernels::kI32MaxAbsWeight) + 1;
  auto ti = backend_->transpose(host_matrix<std::int32_t>(1, big, big, w), ctx);
  ASSERT_TRUE(ti.ok()) << ti.status();
  auto i_scan = backend_->first_violation(*ti, kernels::ValueCheck::kApspWeight);
  ASSERT_TRUE(i_scan.ok()) << i_scan.status();
  EXPECT_EQ(i_scan->index, 2 * big + 400);
  EXPECT_EQ(i_scan->value, -static_cast<double>(kernels::kI32MaxAbsWeight) - 1);
}

std::string backend_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

// Every backend this build can make; the "cuda" cases skip where none can be made.
INSTANTIATE_TEST_SUITE_P(EveryBackend, BackendContract, ::testing::Values("cpu", "cuda"),
                         backend_name);
INSTANTIATE_TEST_SUITE_P(EveryBackend, BackendMatmul, ::testing::Values("cpu", "cuda"),
                         backend_name);
INSTANTIATE_TEST_SUITE_P(EveryBackend, BackendSvd, ::testing::Values("cpu", "cuda"), backend_name);
INSTANTIATE_TEST_SUITE_P(EveryBackend, BackendEigh, ::testing::Values("cpu", "cuda"), backend_name);
INSTANTIATE_TEST_SUITE_P(EveryBackend, BackendApsp, ::testing::Values("cpu", "cuda"), backend_name);

}  // namespace
}  // namespace gcompute::server
