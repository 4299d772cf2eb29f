// SPDX-License-Identifier: Apache-2.0
// Happy paths of every RPC through raw generated stubs against an in-process CPU server on
// 127.0.0.1:0, each checked against an independent oracle (plain loops in double or long
// double, LAPACK dgesvd, textbook Floyd-Warshall) on seeded random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "service_fixture.hpp"
#include "stored_graph_apsp_check.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::service_test {
namespace {

using gcompute::testing::Rng;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int32_t kNoEdge = std::numeric_limits<std::int32_t>::max();

class ServiceOps : public ::testing::Test {
 protected:
  void SetUp() override {
    ts_ = start_server();
    ASSERT_NE(ts_, nullptr);
  }
  v1::Compute::Stub& stub() { return *ts_->stub; }
  /// One unary call of `method` under the usual deadline.
  template <typename Req, typename Resp>
  grpc::Status call(grpc::Status (v1::Compute::Stub::*method)(grpc::ClientContext*, const Req&,
                                                              Resp*),
                    const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    deadline(ctx);
    return (stub().*method)(&ctx, req, resp);
  }
  grpc::Status apsp(const v1::ApspRequest& req, v1::ApspResponse* resp) {
    return call(&v1::Compute::Stub::Apsp, req, resp);
  }
  std::unique_ptr<TestServer> ts_;
};

// ---- Transpose ---------------------------------------------------------------------------

template <typename T>
void check_transpose(v1::Compute::Stub& stub, Rng& rng, std::int64_t batch, std::int64_t rows,
                     std::int64_t cols, v1::DType dtype) {
  SCOPED_TRACE(::testing::Message() << "transpose " << batch << " x " << rows << "x" << cols << " "
                                    << v1::DType_Name(dtype));
  const std::int64_t b = batch == 0 ? 1 : batch;
  std::vector<T> in(static_cast<std::size_t>(b * rows * cols));
  for (T& x : in) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(rng.uniform(-100, 100));
    } else {
      x = static_cast<T>(rng.engine()());
    }
  }
  v1::TransposeRequest req;
  *req.mutable_a()->mutable_inline_() = make_matrix(rows, cols, in, batch, dtype);
  v1::TransposeResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub.Transpose(&ctx, req, &resp)));
  ASSERT_TRUE(resp.at().has_inline_());
  const v1::Matrix& out = resp.at().inline_();
  EXPECT_EQ(out.rows(), cols);
  EXPECT_EQ(out.cols(), rows);
  EXPECT_EQ(out.dtype(), dtype);
  EXPECT_EQ(out.batch() == 0 ? 1 : out.batch(), b);
  const std::vector<T> got = values_of<T>(out);
  ASSERT_EQ(got.size(), in.size());
  for (std::int64_t k = 0; k < b; ++k) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        const T want = in[static_cast<std::size_t>((k * rows + i) * cols + j)];
        const T have = got[static_cast<std::size_t>((k * cols + j) * rows + i)];
        ASSERT_EQ(std::memcmp(&want, &have, sizeof(T)), 0)
            << "batch " << k << " element (" << i << ", " << j << ")";
      }
    }
  }
  EXPECT_EQ(resp.stats().device(), "cpu");
  EXPECT_GE(resp.stats().total_seconds(), resp.stats().compute_seconds());
}

TEST_F(ServiceOps, TransposeEveryDtypeAndRaggedShapes) {
  GC_SEEDED_RNG(rng);
  const std::vector<std::array<std::int64_t, 3>> shapes = {{0, 1, 1},   {1, 1, 17}, {0, 17, 1},
                                                           {0, 13, 17}, {3, 5, 7},  {2, 31, 1},
                                                           {0, 64, 33}, {0, 0, 3}};
  for (const auto& [b, r, c] : shapes) {
    check_transpose<float>(stub(), rng, b, r, c, v1::DTYPE_F32);
    check_transpose<double>(stub(), rng, b, r, c, v1::DTYPE_F64);
    check_transpose<std::int32_t>(stub(), rng, b, r, c, v1::DTYPE_I32);
    check_transpose<std::uint16_t>(stub(), rng, b, r, c, v1::DTYPE_F16);
    check_transpose<std::uint16_t>(stub(), rng, b, r, c, v1::DTYPE_BF16);
  }
  // A result over the 4 MiB from which it leaves as a slice of its own, and one just under.
  check_transpose<float>(stub(), rng, 0, 1031, 1029, v1::DTYPE_F32);
  check_transpose<double>(stub(), rng, 2, 511, 513, v1::DTYPE_F64);
}

// ---- MatMul ------------------------------------------------------------------------------

struct GemmCase {
  std::int64_t a_batch, b_batch, m, n, k;
  bool ta, tb;
  double alpha, beta;  // beta != 0 sends C
  v1::Precision precision;
};

/// Unit roundoff of the inputs under `precision` for f32 operands.
double input_roundoff(v1::Precision p) {
  switch (p) {
    case v1::PRECISION_TF32:
      return std::ldexp(1.0, -11);
    case v1::PRECISION_BF16:
      return std::ldexp(1.0, -9);
    case v1::PRECISION_F16:
      return std::ldexp(1.0, -11);
    default:
      return 0;
  }
}

/// Runs one product with T operands (float or double) and checks every element against the
/// long-double reference: |got - ref| <= 4 * (2 u_in + (k + 2) eps) * sum|terms| + tiny.
template <typename T>
void check_matmul(v1::Compute::Stub& stub, Rng& rng, const GemmCase& g) {
  SCOPED_TRACE(::testing::Message()
               << "matmul " << (std::is_same_v<T, float> ? "f32" : "f64") << " batch " << g.a_batch
               << "/" << g.b_batch << " m=" << g.m << " n=" << g.n << " k=" << g.k << " ta=" << g.ta
               << " tb=" << g.tb << " alpha=" << g.alpha << " beta=" << g.beta << " precision "
               << v1::Precision_Name(g.precision));
  const std::int64_t batch = std::max(g.a_batch, g.b_batch);
  const std::int64_t a_rows = g.ta ? g.k : g.m, a_cols = g.ta ? g.m : g.k;
  const std::int64_t b_rows = g.tb ? g.n : g.k, b_cols = g.tb ? g.k : g.n;
  const auto a = gcompute::testing::random_uniform<T>(rng, g.a_batch * g.m * g.k);
  const auto b = gcompute::testing::random_uniform<T>(rng, g.b_batch * g.k * g.n);
  const auto c = gcompute::testing::random_uniform<T>(rng, batch * g.m * g.n);
  v1::MatMulRequest req;
  *req.mutable_a()->mutable_inline_() = make_matrix(a_rows, a_cols, a, g.a_batch);
  *req.mutable_b()->mutable_inline_() = make_matrix(b_rows, b_cols, b, g.b_batch);
  req.set_transpose_a(g.ta);
  req.set_transpose_b(g.tb);
  req.set_precision(g.precision);
  if (g.alpha != 1.0) req.set_alpha(g.alpha);
  if (g.beta != 0.0) {
    req.set_beta(g.beta);
    *req.mutable_c()->mutable_inline_() = make_matrix(g.m, g.n, c, batch);
  }
  v1::MatMulResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub.MatMul(&ctx, req, &resp)));
  ASSERT_TRUE(resp.c().has_inline_());
  EXPECT_EQ(resp.c().inline_().rows(), g.m);
  EXPECT_EQ(resp.c().inline_().cols(), g.n);
  EXPECT_EQ(resp.c().inline_().dtype(), dtype_of<T>());
  EXPECT_EQ(std::max<std::int64_t>(1, resp.c().inline_().batch()), batch);
  const std::vector<T> got = values_of<T>(resp.c().inline_());
  ASSERT_EQ(static_cast<std::int64_t>(got.size()), batch * g.m * g.n);
  const double eps = std::numeric_limits<T>::epsilon();
  const double tol = 4 * (2 * input_roundoff(g.precision) + static_cast<double>(g.k + 2) * eps);
  for (std::int64_t p = 0; p < batch; ++p) {
    const std::int64_t pa = g.a_batch == 1 ? 0 : p, pb = g.b_batch == 1 ? 0 : p;
    std::vector<double> ad(a.begin() + pa * g.m * g.k, a.begin() + (pa + 1) * g.m * g.k);
    std::vector<double> bd(b.begin() + pb * g.k * g.n, b.begin() + (pb + 1) * g.k * g.n);
    std::vector<double> cd(c.begin() + p * g.m * g.n, c.begin() + (p + 1) * g.m * g.n);
    const auto ref = gcompute::testing::reference_gemm(ad.data(), bd.data(), cd.data(), g.m, g.n,
                                                       g.k, g.ta, g.tb, g.alpha, g.beta);
    const auto scale = gcompute::testing::reference_gemm_abs(ad.data(), bd.data(), cd.data(), g.m,
                                                             g.n, g.k, g.ta, g.tb, g.alpha, g.beta);
    for (std::int64_t i = 0; i < g.m * g.n; ++i) {
      const double want = static_cast<double>(ref[i]);
      const double bound =
          tol * static_cast<double>(scale[i]) + 1e-6 * (g.precision == v1::PRECISION_F16);
      ASSERT_LE(std::abs(got[p * g.m * g.n + i] - want), bound)
          << "batch " << p << " element " << i << ": got " << got[p * g.m * g.n + i] << ", want "
          << want;
    }
  }
}

TEST_F(ServiceOps, MatMulF32F64TransposesAlphaBetaBatches) {
  GC_SEEDED_RNG(rng);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      check_matmul<float>(stub(), rng, {1, 1, 7, 5, 13, ta, tb, 1.0, 0.0, v1::PRECISION_DEFAULT});
      check_matmul<double>(stub(), rng, {1, 1, 7, 5, 13, ta, tb, 1.0, 0.0, v1::PRECISION_DEFAULT});
      check_matmul<float>(stub(), rng, {1, 1, 11, 3, 29, ta, tb, -1.5, 0.75, v1::PRECISION_F32});
      check_matmul<double>(stub(), rng, {1, 1, 3, 17, 2, ta, tb, 2.5, -0.5, v1::PRECISION_F64});
    }
  }
  // Ragged: 1x1, 1xn, nx1 results and k = 1.
  check_matmul<double>(stub(), rng, {1, 1, 1, 1, 1, false, false, 1.0, 0.0, v1::PRECISION_DEFAULT});
  check_matmul<float>(stub(), rng, {1, 1, 1, 37, 19, false, true, 1.0, 0.0, v1::PRECISION_DEFAULT});
  check_matmul<float>(stub(), rng, {1, 1, 37, 1, 1, true, false, 1.0, 1.0, v1::PRECISION_DEFAULT});
  // Batched and broadcast either way, with and without C.
  check_matmul<float>(stub(), rng, {3, 3, 5, 6, 7, false, false, 1.0, 0.0, v1::PRECISION_DEFAULT});
  check_matmul<double>(stub(), rng, {4, 1, 5, 6, 7, true, false, 0.5, 2.0, v1::PRECISION_DEFAULT});
  check_matmul<float>(stub(), rng, {1, 5, 9, 2, 3, false, true, 1.0, -1.0, v1::PRECISION_DEFAULT});
  // Results of 4 MiB and more leave the server as a slice of their own (wire/spliced_bytes):
  // just under and just over.
  check_matmul<float>(stub(), rng, {1, 1, 1023, 1024, 3, false, true, 1.0, 0.0, v1::PRECISION_F32});
  check_matmul<double>(stub(), rng, {2, 1, 257, 1021, 2, true, false, 1.0, 0.5, v1::PRECISION_F64});
}

TEST_F(ServiceOps, MatMulReducedPrecisionWithinTolerance) {
  GC_SEEDED_RNG(rng);
  for (v1::Precision p : {v1::PRECISION_TF32, v1::PRECISION_BF16, v1::PRECISION_F16}) {
    check_matmul<float>(stub(), rng, {1, 1, 19, 23, 64, false, false, 1.0, 0.0, p});
    check_matmul<float>(stub(), rng, {2, 2, 8, 9, 31, true, true, 0.5, 0.25, p});
  }
}

/// f16 and bf16 operands: inputs are multiples of 1/64 (exact in both formats); the result
/// is rounded once to the output format, so |got - ref| <= 2 u_out |ref| + accumulation.
TEST_F(ServiceOps, MatMulHalfDtypes) {
  GC_SEEDED_RNG(rng);
  for (v1::DType dt : {v1::DTYPE_F16, v1::DTYPE_BF16}) {
    SCOPED_TRACE(v1::DType_Name(dt));
    const std::int64_t m = 6, n = 11, k = 17, batch = 2;
    auto draw = [&](std::int64_t count, std::vector<double>& vals) {
      std::vector<std::uint16_t> bits(static_cast<std::size_t>(count));
      vals.resize(bits.size());
      for (std::size_t i = 0; i < bits.size(); ++i) {
        const float v = static_cast<float>(rng.uniform_int(-63, 63)) / 64.0f;
        vals[i] = v;
        bits[i] = dt == v1::DTYPE_F16 ? exact_f16_bits(v) : exact_bf16_bits(v);
      }
      return bits;
    };
    std::vector<double> av, bv;
    const auto a = draw(batch * m * k, av);
    const auto b = draw(k * n, bv);  // broadcast B
    v1::MatMulRequest req;
    *req.mutable_a()->mutable_inline_() = make_matrix(m, k, a, batch, dt);
    *req.mutable_b()->mutable_inline_() = make_matrix(k, n, b, 1, dt);
    v1::MatMulResponse resp;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::MatMul, req, &resp)));
    ASSERT_TRUE(resp.c().has_inline_());
    EXPECT_EQ(resp.c().inline_().dtype(), dt);
    const auto got = values_of<std::uint16_t>(resp.c().inline_());
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), batch * m * n);
    const double u_out = dt == v1::DTYPE_F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    for (std::int64_t p = 0; p < batch; ++p) {
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double ref = 0, scale = 0;
          for (std::int64_t q = 0; q < k; ++q) {
            ref += av[(p * m + i) * k + q] * bv[q * n + j];
            scale += std::abs(av[(p * m + i) * k + q] * bv[q * n + j]);
          }
          const std::uint16_t h = got[(p * m + i) * n + j];
          const double have = dt == v1::DTYPE_F16 ? f16_to_double(h) : bf16_to_double(h);
          ASSERT_LE(std::abs(have - ref),
                    2 * u_out * std::abs(ref) + 4 * (k + 2) * 1.2e-7 * scale + std::ldexp(1.0, -24))
              << "batch " << p << " (" << i << ", " << j << ")";
        }
      }
    }
  }
}

// ---- SVD ---------------------------------------------------------------------------------

template <typename T>
std::vector<double> result_values(const v1::MatrixResult& r) {
  EXPECT_TRUE(r.has_inline_());
  const auto v = values_of<T>(r.inline_());
  return std::vector<double>(v.begin(), v.end());
}

/// Checks one SVD (thin or full) of the m x n matrix `a` (already rounded to T).
template <typename T>
void check_svd_factors(const std::vector<double>& a, std::int64_t m, std::int64_t n,
                       const std::vector<double>& s, const std::vector<double>* u,
                       const std::vector<double>* vt, bool full) {
  const std::int64_t p = std::min(m, n);
  const double eps = std::numeric_limits<T>::epsilon();
  const double tol = 64 * eps * static_cast<double>(std::max<std::int64_t>({m, n, 1}));
  ASSERT_EQ(static_cast<std::int64_t>(s.size()), p);
  for (std::int64_t i = 0; i + 1 < p; ++i) EXPECT_GE(s[i], s[i + 1]) << "S not descending at " << i;
  for (double x : s) EXPECT_GE(x, 0.0);
  const auto lapack = gcompute::testing::lapack_svd(a, m, n, false);
  ASSERT_EQ(lapack.info, 0);
  const double smax = p > 0 ? std::max(lapack.s[0], 1e-300) : 1;
  for (std::int64_t i = 0; i < p; ++i) {
    EXPECT_NEAR(s[i], lapack.s[i], tol * smax) << "singular value " << i;
  }
  if (u == nullptr) return;
  const std::int64_t u_cols = full ? m : p, vt_rows = full ? n : p;
  ASSERT_EQ(static_cast<std::int64_t>(u->size()), m * u_cols);
  ASSERT_EQ(static_cast<std::int64_t>(vt->size()), vt_rows * n);
  EXPECT_LE(gcompute::testing::reconstruction_error(a.data(), u->data(), s.data(), vt->data(), m, n,
                                                    u_cols),
            tol);
  EXPECT_LE(gcompute::testing::orthonormal_columns_error(u->data(), m, u_cols), tol);
  EXPECT_LE(gcompute::testing::orthonormal_rows_error(vt->data(), vt_rows, n), tol);
}

template <typename T>
void check_svd(v1::Compute::Stub& stub, Rng& rng, std::int64_t m, std::int64_t n, bool compute_uv,
               bool full, v1::SvdMethod method) {
  SCOPED_TRACE(::testing::Message()
               << "svd " << m << "x" << n << " " << (std::is_same_v<T, float> ? "f32" : "f64")
               << " compute_uv=" << compute_uv << " full=" << full << " "
               << v1::SvdMethod_Name(method));
  const auto a = gcompute::testing::random_uniform<T>(rng, m * n);
  v1::SvdRequest req;
  *req.mutable_a()->mutable_inline_() = make_matrix(m, n, a);
  req.set_method(method);
  if (!compute_uv) req.set_compute_uv(false);
  req.set_full_matrices(full);
  v1::SvdResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub.Svd(&ctx, req, &resp)));
  EXPECT_TRUE(resp.converged());
  // The CPU backend's LAPACK methods report no count; QDWH reports its iterations.
  if (method == v1::SVD_METHOD_POLAR) {
    EXPECT_LE(resp.sweeps(), 60);
  } else {
    EXPECT_EQ(resp.sweeps(), 0);
  }
  const std::vector<double> ad(a.begin(), a.end());
  const auto s = result_values<T>(resp.s());
  EXPECT_EQ(resp.s().inline_().rows(), 1);
  EXPECT_EQ(resp.s().inline_().cols(), std::min(m, n));
  if (!compute_uv) {
    EXPECT_FALSE(resp.has_u());
    EXPECT_FALSE(resp.has_vt());
    check_svd_factors<T>(ad, m, n, s, nullptr, nullptr, full);
    return;
  }
  ASSERT_TRUE(resp.has_u());
  ASSERT_TRUE(resp.has_vt());
  EXPECT_EQ(resp.u().inline_().rows(), m);
  EXPECT_EQ(resp.vt().inline_().cols(), n);
  const auto u = result_values<T>(resp.u());
  const auto vt = result_values<T>(resp.vt());
  check_svd_factors<T>(ad, m, n, s, &u, &vt, full);
}

TEST_F(ServiceOps, SvdShapesAgainstLapack) {
  GC_SEEDED_RNG(rng);
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1}, {1, 7}, {7, 1}, {13, 5}, {5, 13}, {17, 17}, {31, 2}};
  for (const auto method : {v1::SVD_METHOD_AUTO, v1::SVD_METHOD_JACOBI, v1::SVD_METHOD_POLAR}) {
    for (const auto& [m, n] : shapes) {
      check_svd<double>(stub(), rng, m, n, true, false, method);
      check_svd<float>(stub(), rng, m, n, true, false, method);
      check_svd<double>(stub(), rng, m, n, true, true, method);
      check_svd<float>(stub(), rng, m, n, false, false, method);
    }
  }
}

// ---- Eigh --------------------------------------------------------------------------------

template <typename T>
void check_eigh(v1::Compute::Stub& stub, Rng& rng, std::int64_t batch, std::int64_t n,
                bool vectors) {
  SCOPED_TRACE(::testing::Message()
               << "eigh " << batch << "x" << n << "x" << n << " "
               << (std::is_same_v<T, float> ? "f32" : "f64") << (vectors ? " vectors" : " values"));
  std::vector<T> a;
  std::vector<std::vector<double>> lambdas;
  for (std::int64_t b = 0; b < batch; ++b) {
    std::vector<double> lambda =
        gcompute::testing::random_uniform<double>(rng, static_cast<std::size_t>(n));
    for (double& x : lambda) x *= 10;
    const std::vector<double> m = gcompute::testing::matrix_with_eigenvalues(rng, lambda);
    a.insert(a.end(), m.begin(), m.end());  // rounding to f32 keeps the copy symmetric
    std::sort(lambda.begin(), lambda.end());
    lambdas.push_back(lambda);
  }
  v1::EighRequest req;
  *req.mutable_a()->mutable_inline_() = make_matrix(n, n, a, batch);
  if (!vectors) req.set_compute_vectors(false);
  v1::EighResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub.Eigh(&ctx, req, &resp)));
  EXPECT_TRUE(resp.converged());
  const auto w = result_values<T>(resp.w());
  ASSERT_EQ(static_cast<std::int64_t>(w.size()), batch * n);
  EXPECT_EQ(resp.w().inline_().cols(), n);
  EXPECT_EQ(resp.has_v(), vectors);
  const double eps = std::numeric_limits<T>::epsilon();
  const double tol = 64 * eps * static_cast<double>(std::max<std::int64_t>(n, 1));
  const auto v = vectors ? result_values<T>(resp.v()) : std::vector<double>();
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(w[b * n + i], lambdas[b][i], tol * 10) << "matrix " << b << " w[" << i << "]";
    }
    if (!vectors) continue;
    const std::vector<double> ab(a.begin() + b * n * n, a.begin() + (b + 1) * n * n);
    EXPECT_LE(
        gcompute::testing::eigen_residual(ab.data(), v.data() + b * n * n, w.data() + b * n, n),
        tol);
    EXPECT_LE(gcompute::testing::orthonormal_columns_error(v.data() + b * n * n, n, n), tol);
  }
}

TEST_F(ServiceOps, EighAgainstKnownEigenvalues) {
  GC_SEEDED_RNG(rng);
  for (const std::int64_t n : {1, 2, 7, 31}) {
    check_eigh<double>(stub(), rng, 1, n, true);
    check_eigh<float>(stub(), rng, 1, n, true);
    check_eigh<double>(stub(), rng, 3, n, true);
    check_eigh<float>(stub(), rng, 2, n, false);
  }
}

TEST_F(ServiceOps, EighRefusesAsymmetricAndNonSquare) {
  v1::EighRequest req;
  std::vector<double> a = {1, 2, 3, 2, 5, 6, 3, 6, 9};
  a[7] = 6.5;  // a[2][1] = 6.5 but a[1][2] = 6
  *req.mutable_a()->mutable_inline_() = make_matrix(3, 3, a);
  v1::EighResponse resp;
  {
    EXPECT_TRUE(has_status(call(&v1::Compute::Stub::Eigh, req, &resp), grpc::INVALID_ARGUMENT,
                           {"not symmetric", "a[2][1] = 6.5", "a[1][2] = 6"}));
  }
  // A looser tolerance accepts it.
  req.set_symmetry_tolerance(0.1);
  EXPECT_TRUE(is_ok(call(&v1::Compute::Stub::Eigh, req, &resp)));
  *req.mutable_a()->mutable_inline_() = make_matrix(2, 3, std::vector<double>(6, 1.0));
  {
    EXPECT_TRUE(has_status(call(&v1::Compute::Stub::Eigh, req, &resp), grpc::INVALID_ARGUMENT,
                           {"square", "2x3"}));
  }
}

TEST_F(ServiceOps, BatchedSvdEveryMatrix) {
  GC_SEEDED_RNG(rng);
  for (bool full : {false, true}) {
    const std::int64_t batch = 3, m = 9, n = 4;
    const auto a = gcompute::testing::random_normal<double>(rng, batch * m * n);
    v1::SvdRequest req;
    *req.mutable_a()->mutable_inline_() = make_matrix(m, n, a, batch);
    req.set_full_matrices(full);
    v1::SvdResponse resp;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::BatchedSvd, req, &resp)));
    EXPECT_TRUE(resp.converged());
    EXPECT_EQ(resp.s().inline_().batch(), batch);
    EXPECT_EQ(resp.s().inline_().rows(), 1);
    const auto s = result_values<double>(resp.s());
    const auto u = result_values<double>(resp.u());
    const auto vt = result_values<double>(resp.vt());
    const std::int64_t p = 4, uc = full ? m : p, vr = full ? n : p;
    ASSERT_EQ(static_cast<std::int64_t>(s.size()), batch * p);
    ASSERT_EQ(static_cast<std::int64_t>(u.size()), batch * m * uc);
    ASSERT_EQ(static_cast<std::int64_t>(vt.size()), batch * vr * n);
    for (std::int64_t k = 0; k < batch; ++k) {
      SCOPED_TRACE(::testing::Message() << "matrix " << k << " full=" << full);
      std::vector<double> ak(a.begin() + k * m * n, a.begin() + (k + 1) * m * n);
      std::vector<double> sk(s.begin() + k * p, s.begin() + (k + 1) * p);
      std::vector<double> uk(u.begin() + k * m * uc, u.begin() + (k + 1) * m * uc);
      std::vector<double> vk(vt.begin() + k * vr * n, vt.begin() + (k + 1) * vr * n);
      check_svd_factors<double>(ak, m, n, sk, &uk, &vk, full);
    }
  }
}

// ---- APSP and shortest paths --------------------------------------------------------------

/// Checks distances (within `tol` per unit of path weight) and that next hops walk along
/// existing edges from i to j with a total equal to the distance.
void check_apsp(const std::vector<double>& w, std::int64_t n, const std::vector<double>& dist,
                const std::vector<std::int32_t>* next, double tol) {
  const auto ref = gcompute::testing::floyd_warshall_reference(w, n);
  ASSERT_EQ(static_cast<std::int64_t>(dist.size()), n * n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const double want = ref[i * n + j];
      const double have = dist[i * n + j];
      if (std::isinf(want)) {
        ASSERT_TRUE(std::isinf(have) && have > 0) << "D[" << i << "][" << j << "] = " << have;
      } else {
        ASSERT_NEAR(have, want, tol * (1 + std::abs(want))) << "D[" << i << "][" << j << "]";
      }
      if (next == nullptr) continue;
      const std::int32_t h = (*next)[i * n + j];
      if (i == j) {
        ASSERT_EQ(h, i);
      } else if (std::isinf(want)) {
        ASSERT_EQ(h, -1) << "N[" << i << "][" << j << "] for an unreachable pair";
      } else {
        std::int64_t u = i, steps = 0;
        double len = 0;
        while (u != j) {
          const std::int32_t v = (*next)[u * n + j];
          ASSERT_TRUE(v >= 0 && v < n && steps++ < n) << "next hop walk " << i << " -> " << j;
          ASSERT_FALSE(std::isinf(w[u * n + v])) << "N uses a missing edge " << u << " -> " << v;
          len += w[u * n + v];
          u = v;
        }
        ASSERT_NEAR(len, want, tol * (1 + std::abs(want))) << "walk " << i << " -> " << j;
      }
    }
  }
}

TEST_F(ServiceOps, ApspDenseF32WithNegativeWeightsAndNextHop) {
  GC_SEEDED_RNG(rng);
  for (std::int64_t n : {1, 2, 23, 67}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const auto w = random_digraph(rng, n, 0.15, true, false);
    std::vector<float> wf(w.begin(), w.end());
    v1::ApspRequest req;
    *req.mutable_dense() = make_matrix(n, n, wf);
    req.set_next_hop(true);
    v1::ApspResponse resp;
    ASSERT_TRUE(is_ok(apsp(req, &resp)));
    ASSERT_TRUE(resp.has_next_hop());
    EXPECT_EQ(resp.distances().inline_().dtype(), v1::DTYPE_F32);
    EXPECT_EQ(resp.next_hop().inline_().dtype(), v1::DTYPE_I32);
    const auto d = result_values<float>(resp.distances());
    const auto nh = values_of<std::int32_t>(resp.next_hop().inline_());
    check_apsp(w, n, d, &nh, 1e-5 * static_cast<double>(n));
  }
}

TEST_F(ServiceOps, ApspDenseI32Exact) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 41;
  const auto w = random_digraph(rng, n, 0.1, true, true);
  std::vector<std::int32_t> wi(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    wi[i] = std::isinf(w[i]) ? kNoEdge : static_cast<std::int32_t>(w[i]);
  }
  v1::ApspRequest req;
  *req.mutable_dense() = make_matrix(n, n, wi);
  req.set_next_hop(true);
  v1::ApspResponse resp;
  ASSERT_TRUE(is_ok(apsp(req, &resp)));
  EXPECT_EQ(resp.distances().inline_().dtype(), v1::DTYPE_I32);
  const auto di = values_of<std::int32_t>(resp.distances().inline_());
  std::vector<double> d(di.size());
  for (std::size_t i = 0; i < di.size(); ++i) d[i] = di[i] == kNoEdge ? kInf : di[i];
  const auto nh = values_of<std::int32_t>(resp.next_hop().inline_());
  check_apsp(w, n, d, &nh, 0.0);
  // Without next_hop the field stays unset.
  v1::ApspRequest req2;
  *req2.mutable_dense() = make_matrix(n, n, wi);
  v1::ApspResponse resp2;
  ASSERT_TRUE(is_ok(apsp(req2, &resp2)));
  EXPECT_FALSE(resp2.has_next_hop());
  EXPECT_EQ(values_of<std::int32_t>(resp2.distances().inline_()), di);
}

TEST_F(ServiceOps, ApspEdgeListWithParallelEdges) {
  GC_SEEDED_RNG(rng);
  for (v1::DType dt : {v1::DTYPE_UNSPECIFIED, v1::DTYPE_F32, v1::DTYPE_I32}) {
    SCOPED_TRACE(v1::DType_Name(dt));
    const std::int64_t n = 13;
    std::vector<double> w(n * n, kInf);
    v1::ApspRequest req;
    v1::EdgeList* e = req.mutable_edges();
    e->set_num_vertices(n);
    e->set_dtype(dt);
    for (int k = 0; k < 60; ++k) {
      const std::int64_t s = rng.uniform_int(0, n - 1), t = rng.uniform_int(0, n - 1);
      if (s == t) continue;
      const double weight = static_cast<double>(rng.uniform_int(1, 20));
      // Each edge twice: the parallel copy is heavier or lighter at random.
      for (double x : {weight, weight + static_cast<double>(rng.uniform_int(-3, 3))}) {
        if (x < 1) continue;
        e->add_src(s);
        e->add_dst(t);
        e->add_weight(x);
        w[s * n + t] = std::min(w[s * n + t], x);
      }
    }
    req.set_next_hop(true);
    v1::ApspResponse resp;
    ASSERT_TRUE(is_ok(apsp(req, &resp)));
    std::vector<double> d;
    if (dt == v1::DTYPE_I32) {
      ASSERT_EQ(resp.distances().inline_().dtype(), v1::DTYPE_I32);
      for (std::int32_t x : values_of<std::int32_t>(resp.distances().inline_())) {
        d.push_back(x == kNoEdge ? kInf : x);
      }
    } else {
      ASSERT_EQ(resp.distances().inline_().dtype(), v1::DTYPE_F32);
      d = result_values<float>(resp.distances());
    }
    const auto nh = values_of<std::int32_t>(resp.next_hop().inline_());
    check_apsp(w, n, d, &nh, 1e-6);
  }
}

/// Asks ShortestPath (`base` names the graph or the stored results) for every ordered pair of
/// the vertices of `w`, whose row i is vertex ids[i], and checks each answer against
/// Floyd-Warshall: reachability, the length within `tol(want)`, the ends, and hops along edges
/// of `w` that add up to the length.
void check_shortest_paths(v1::Compute::Stub& stub, const v1::ShortestPathRequest& base,
                          const std::vector<double>& w, const std::vector<std::int64_t>& ids,
                          const std::function<double(double)>& tol) {
  const auto n = static_cast<std::int64_t>(ids.size());
  std::map<std::int64_t, std::int64_t> row_of;
  for (std::int64_t i = 0; i < n; ++i) row_of[ids[i]] = i;
  const auto ref = gcompute::testing::floyd_warshall_reference(w, n);
  for (std::int64_t si = 0; si < n; ++si) {
    for (std::int64_t ti = 0; ti < n; ++ti) {
      v1::ShortestPathRequest sp = base;
      sp.set_source(ids[si]);
      sp.set_target(ids[ti]);
      v1::ShortestPathResponse path;
      grpc::ClientContext ctx;
      deadline(ctx);
      ASSERT_TRUE(is_ok(stub.ShortestPath(&ctx, sp, &path)));
      const double want = ref[si * n + ti];
      ASSERT_EQ(path.reachable(), !std::isinf(want)) << si << " -> " << ti;
      if (!path.reachable()) {
        EXPECT_EQ(path.vertices_size(), 0);
        continue;
      }
      EXPECT_NEAR(path.length(), want, tol(want));
      ASSERT_GE(path.vertices_size(), 1);
      EXPECT_EQ(path.vertices(0), sp.source());
      EXPECT_EQ(path.vertices(path.vertices_size() - 1), sp.target());
      double len = 0;
      for (int h = 0; h + 1 < path.vertices_size(); ++h) {
        ASSERT_TRUE(row_of.count(path.vertices(h)) && row_of.count(path.vertices(h + 1)));
        const double x = w[row_of[path.vertices(h)] * n + row_of[path.vertices(h + 1)]];
        ASSERT_FALSE(std::isinf(x)) << "hop " << path.vertices(h) << " -> " << path.vertices(h + 1);
        len += x;
      }
      EXPECT_NEAR(len, want, tol(want));
      EXPECT_NEAR(len, path.length(), tol(want));
    }
  }
}

TEST_F(ServiceOps, ApspAndShortestPathFromStoredGraph) {
  GC_SEEDED_RNG(rng);
  const std::uint64_t n = 9;
  v1::CreateGraphRequest create;
  create.set_graph_id("apsp-graph");
  create.set_num_vertices(n);
  for (int k = 0; k < 20; ++k) {
    auto* e = create.add_edges();
    const std::uint64_t s = static_cast<std::uint64_t>(rng.uniform_int(0, n - 1));
    std::uint64_t t = static_cast<std::uint64_t>(rng.uniform_int(0, n - 2));
    if (t >= s) ++t;
    e->add_tails(s);
    e->add_heads(t);
    e->set_weight(static_cast<double>(rng.uniform_int(1, 16)) / 4);
  }
  {  // one hyperedge {0, 1} -> {7, 8}
    auto* e = create.add_edges();
    e->add_tails(0);
    e->add_tails(1);
    e->add_heads(7);
    e->add_heads(8);
    e->set_weight(0.5);
  }
  v1::CreateGraphResponse created;
  ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::CreateGraph, create, &created)));
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(::testing::Message() << "round " << round);
    if (round == 1) {  // ids stop being consecutive: delete vertex 4
      v1::ApplyEditsRequest edits;
      edits.set_graph_id("apsp-graph");
      edits.add_edits()->mutable_delete_vertex()->set_vertex_id(4);
      v1::ApplyEditsResponse applied;
      ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::ApplyEdits, edits, &applied)));
    }
    v1::GetGraphRequest get;
    get.set_graph_id("apsp-graph");
    v1::GetGraphResponse snap;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::GetGraph, get, &snap)));
    const auto w = dense_weights_of(snap);
    const auto m = static_cast<std::int64_t>(snap.vertices_size());
    v1::ApspRequest req;
    req.set_graph_id("apsp-graph");
    req.set_next_hop(true);
    v1::ApspResponse resp;
    ASSERT_TRUE(is_ok(apsp(req, &resp)));
    EXPECT_EQ(resp.distances().inline_().rows(), m);
    const auto d = result_values<float>(resp.distances());
    const auto nh = values_of<std::int32_t>(resp.next_hop().inline_());
    check_apsp(w, m, d, &nh, 1e-6);

    // ShortestPath on the graph, in vertex ids.
    v1::ShortestPathRequest sp;
    sp.mutable_graph()->set_graph_id("apsp-graph");
    std::vector<std::int64_t> ids;
    for (const auto id : snap.vertices()) ids.push_back(static_cast<std::int64_t>(id));
    ASSERT_NO_FATAL_FAILURE(check_shortest_paths(stub(), sp, w, ids, [](double) { return 1e-6; }));
  }
}

TEST_F(ServiceOps, StoredGraphApspIsUpdatedAfterInsertionsAndRecomputedAfterDeletions) {
  GC_SEEDED_RNG(rng);
  expect_incremental_stored_apsp(*ts_, rng);
}

TEST_F(ServiceOps, ShortestPathFromStoredApspResults) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 29;
  auto w = random_digraph(rng, n, 0.12, true, false);
  for (std::int64_t j = 0; j < n; ++j) w[(n - 1) * n + j] = w[j * n + n - 1] = kInf;  // isolated
  std::vector<float> wf(w.begin(), w.end());
  v1::ApspRequest req;
  *req.mutable_dense() = make_matrix(n, n, wf);
  req.set_next_hop(true);
  req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  req.mutable_output()->set_ttl_seconds(120);
  v1::ApspResponse resp;
  ASSERT_TRUE(is_ok(apsp(req, &resp)));
  ASSERT_TRUE(resp.distances().has_stored());
  ASSERT_TRUE(resp.next_hop().has_stored());
  EXPECT_EQ(resp.distances().stored().shape().rows(), n);
  EXPECT_EQ(resp.distances().stored().shape().dtype(), v1::DTYPE_F32);
  EXPECT_EQ(resp.next_hop().stored().shape().dtype(), v1::DTYPE_I32);
  EXPECT_EQ(resp.distances().stored().size_bytes(), static_cast<std::uint64_t>(n * n * 4));
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_GT(resp.distances().stored().expires_at_unix_ms(), now_ms + 100 * 1000);
  EXPECT_LE(resp.distances().stored().expires_at_unix_ms(), now_ms + 121 * 1000);
  v1::ShortestPathRequest sp;
  *sp.mutable_stored()->mutable_distances() = resp.distances().stored().ref();
  *sp.mutable_stored()->mutable_next_hop() = resp.next_hop().stored().ref();
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  check_shortest_paths(stub(), sp, w, ids, [](double want) { return 1e-4 * (1 + std::abs(want)); });
}

// ---- stored matrices ---------------------------------------------------------------------

/// Uploads `m` in chunks of `chunk` bytes sent in a shuffled order.
grpc::Status upload(v1::Compute::Stub& stub, const v1::Matrix& m, std::size_t chunk, Rng& rng,
                    v1::UploadMatrixResponse* resp, std::int64_t ttl = 0) {
  grpc::ClientContext ctx;
  deadline(ctx);
  auto writer = stub.UploadMatrix(&ctx, resp);
  v1::UploadMatrixRequest header;
  auto* shape = header.mutable_header()->mutable_shape();
  shape->set_rows(m.rows());
  shape->set_cols(m.cols());
  shape->set_dtype(m.dtype());
  shape->set_batch(m.batch());
  header.mutable_header()->set_ttl_seconds(ttl);
  writer->Write(header);
  std::vector<std::size_t> offsets;
  for (std::size_t off = 0; off < m.data().size(); off += chunk) offsets.push_back(off);
  std::shuffle(offsets.begin(), offsets.end(), rng.engine());
  for (std::size_t off : offsets) {
    v1::UploadMatrixRequest part;
    part.mutable_chunk()->set_offset(off);
    part.mutable_chunk()->set_data(m.data().substr(off, chunk));
    if (!writer->Write(part)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

/// Transpose of the stored rows x cols f64 matrix `id` (holding `values`), checked element by
/// element; `release` as MatrixRef.release.
void check_transpose_of_ref(v1::Compute::Stub& stub, const std::string& id, bool release,
                            std::int64_t rows, std::int64_t cols,
                            const std::vector<double>& values) {
  v1::TransposeRequest req;
  req.mutable_a()->mutable_ref()->set_id(id);
  req.mutable_a()->mutable_ref()->set_release(release);
  v1::TransposeResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub.Transpose(&ctx, req, &resp)));
  const auto at = values_of<double>(resp.at().inline_());
  ASSERT_EQ(at.size(), values.size());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) ASSERT_EQ(at[j * rows + i], values[i * cols + j]);
  }
}

TEST_F(ServiceOps, UploadOutOfOrderDownloadUseByRefDelete) {
  GC_SEEDED_RNG(rng);
  const std::int64_t rows = 37, cols = 29;
  const auto values = gcompute::testing::random_normal<double>(rng, rows * cols);
  const v1::Matrix m = make_matrix(rows, cols, values);
  v1::UploadMatrixResponse up;
  ASSERT_TRUE(is_ok(upload(stub(), m, 1000, rng, &up, 60)));
  const v1::StoredMatrix& stored = up.matrix();
  EXPECT_FALSE(stored.ref().id().empty());
  EXPECT_EQ(stored.shape().rows(), rows);
  EXPECT_EQ(stored.shape().cols(), cols);
  EXPECT_EQ(stored.shape().dtype(), v1::DTYPE_F64);
  EXPECT_EQ(stored.size_bytes(), m.data().size());

  v1::StoredMatrix header;
  std::string data;
  int chunks = 0;
  ASSERT_TRUE(is_ok(download_stored(stub(), stored.ref().id(), 777, &header, &data, &chunks)));
  EXPECT_EQ(header.ref().id(), stored.ref().id());
  EXPECT_EQ(header.shape().rows(), rows);
  EXPECT_EQ(chunks, static_cast<int>((m.data().size() + 776) / 777));
  EXPECT_EQ(data, m.data());

  check_transpose_of_ref(stub(), stored.ref().id(), /*release=*/false, rows, cols, values);
  // MatMul with both operands by ref: A^T A.
  {
    v1::MatMulRequest req;
    req.mutable_a()->mutable_ref()->set_id(stored.ref().id());
    req.mutable_b()->mutable_ref()->set_id(stored.ref().id());
    req.set_transpose_a(true);
    v1::MatMulResponse resp;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::MatMul, req, &resp)));
    const auto c = values_of<double>(resp.c().inline_());
    const auto ref = gcompute::testing::reference_gemm(values.data(), values.data(), nullptr, cols,
                                                       cols, rows, true, false, 1.0, 0.0);
    ASSERT_EQ(c.size(), ref.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
      ASSERT_NEAR(c[i], static_cast<double>(ref[i]), 1e-12 * rows * 10);
    }
  }
  // A stored square matrix as APSP weights (dense_ref).
  {
    const std::int64_t n = 12;
    const auto w = random_digraph(rng, n, 0.3, false, false);
    std::vector<float> wf(w.begin(), w.end());
    v1::UploadMatrixResponse wup;
    ASSERT_TRUE(is_ok(upload(stub(), make_matrix(n, n, wf), 64, rng, &wup)));
    v1::ApspRequest req;
    req.mutable_dense_ref()->set_id(wup.matrix().ref().id());
    v1::ApspResponse resp;
    ASSERT_TRUE(is_ok(apsp(req, &resp)));
    check_apsp(w, n, result_values<float>(resp.distances()), nullptr, 1e-5);
  }
  // Delete; the ref is gone afterwards.
  {
    v1::DeleteMatrixRequest del;
    del.mutable_ref()->set_id(stored.ref().id());
    v1::DeleteMatrixResponse dresp;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::DeleteMatrix, del, &dresp)));
  }
  {
    v1::StoredMatrix h2;
    std::string d2;
    EXPECT_TRUE(has_status(download_stored(stub(), stored.ref().id(), 0, &h2, &d2), grpc::NOT_FOUND,
                           {stored.ref().id()}));
  }
}

TEST_F(ServiceOps, ReleasedRefsLeaveTheStoreAsTheyAreRead) {
  GC_SEEDED_RNG(rng);
  const std::int64_t rows = 23, cols = 17;
  const auto values = gcompute::testing::random_normal<double>(rng, rows * cols);
  auto upload_one = [&](const v1::Matrix& m) {
    v1::UploadMatrixResponse up;
    EXPECT_TRUE(is_ok(upload(stub(), m, 500, rng, &up, 60)));
    return up.matrix().ref().id();
  };
  auto gone = [&](const std::string& id) {
    v1::StoredMatrix h;
    std::string d;
    return has_status(download_stored(stub(), id, 0, &h, &d), grpc::NOT_FOUND, {id});
  };
  // Transpose of a released ref: the right answer, and the matrix is gone afterwards.
  {
    const std::string id = upload_one(make_matrix(rows, cols, values));
    check_transpose_of_ref(stub(), id, /*release=*/true, rows, cols, values);
    EXPECT_TRUE(gone(id));
  }
  // APSP weights by a released dense_ref.
  {
    const std::int64_t n = 9;
    const auto w = random_digraph(rng, n, 0.4, false, false);
    const std::string id = upload_one(make_matrix(n, n, std::vector<float>(w.begin(), w.end())));
    v1::ApspRequest req;
    req.mutable_dense_ref()->set_id(id);
    req.mutable_dense_ref()->set_release(true);
    v1::ApspResponse resp;
    ASSERT_TRUE(is_ok(apsp(req, &resp)));
    check_apsp(w, n, result_values<float>(resp.distances()), nullptr, 1e-5);
    EXPECT_TRUE(gone(id));
  }
  // Released whether the operation succeeds or not; a request cannot read it twice.
  {
    const std::string id = upload_one(make_matrix(rows, cols, values));
    v1::MatMulRequest req;
    req.mutable_a()->mutable_ref()->set_id(id);
    req.mutable_a()->mutable_ref()->set_release(true);
    req.mutable_b()->mutable_ref()->set_id(id);
    req.set_transpose_a(true);
    v1::MatMulResponse resp;
    EXPECT_TRUE(has_status(call(&v1::Compute::Stub::MatMul, req, &resp), grpc::NOT_FOUND,
                           {"b.ref.id", id}));
    EXPECT_TRUE(gone(id));
  }
  // Without release the ref stays for the next call.
  {
    const std::string id = upload_one(make_matrix(rows, cols, values));
    check_transpose_of_ref(stub(), id, /*release=*/false, rows, cols, values);
    v1::StoredMatrix h;
    std::string d;
    EXPECT_TRUE(is_ok(download_stored(stub(), id, 0, &h, &d)));
  }
}

TEST_F(ServiceOps, PlacementStoredThenDownload) {
  GC_SEEDED_RNG(rng);
  const std::int64_t batch = 2, rows = 19, cols = 23;
  const auto values = gcompute::testing::random_uniform<float>(rng, batch * rows * cols);
  v1::TransposeRequest req;
  *req.mutable_a()->mutable_inline_() = make_matrix(rows, cols, values, batch);
  req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  v1::TransposeResponse resp;
  ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::Transpose, req, &resp)));
  ASSERT_TRUE(resp.at().has_stored());
  const auto& st = resp.at().stored();
  EXPECT_EQ(st.shape().rows(), cols);
  EXPECT_EQ(st.shape().cols(), rows);
  EXPECT_EQ(st.shape().batch(), batch);
  v1::StoredMatrix header;
  std::string data;
  ASSERT_TRUE(is_ok(download_stored(stub(), st.ref().id(), 0, &header, &data)));
  ASSERT_EQ(data.size(), values.size() * 4);
  std::vector<float> at(values.size());
  std::memcpy(at.data(), data.data(), data.size());
  for (std::int64_t k = 0; k < batch; ++k) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        ASSERT_EQ(at[(k * cols + j) * rows + i], values[(k * rows + i) * cols + j]);
      }
    }
  }
}

TEST(ServiceOpsSmallMessages, PlacementAutoStoresWhatDoesNotFit) {
  GC_SEEDED_RNG(rng);
  auto ts = start_server(small_message_options());
  ASSERT_NE(ts, nullptr);
  for (std::int64_t n : {64, 512}) {  // 16 KiB inline, 1 MiB stored (over 1 MiB - 64 KiB)
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const std::int64_t k = 3;
    const auto a = gcompute::testing::random_uniform<float>(rng, n * k);
    const auto b = gcompute::testing::random_uniform<float>(rng, k * n);
    v1::MatMulRequest req;
    *req.mutable_a()->mutable_inline_() = make_matrix(n, k, a);
    *req.mutable_b()->mutable_inline_() = make_matrix(k, n, b);
    v1::MatMulResponse resp;
    grpc::ClientContext ctx;
    deadline(ctx);
    ASSERT_TRUE(is_ok(ts->stub->MatMul(&ctx, req, &resp)));
    std::vector<float> c;
    if (n == 64) {
      ASSERT_TRUE(resp.c().has_inline_());
      c = values_of<float>(resp.c().inline_());
    } else {
      ASSERT_TRUE(resp.c().has_stored());
      EXPECT_EQ(resp.c().stored().size_bytes(), static_cast<std::uint64_t>(n * n * 4));
      v1::StoredMatrix header;
      std::string data;
      int chunks = 0;
      ASSERT_TRUE(is_ok(
          download_stored(*ts->stub, resp.c().stored().ref().id(), 0, &header, &data, &chunks)));
      EXPECT_GE(chunks, 2) << "download chunks must stay under the 1 MiB message size";
      c.resize(data.size() / 4);
      std::memcpy(c.data(), data.data(), data.size());
    }
    std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end());
    const auto ref = gcompute::testing::reference_gemm(ad.data(), bd.data(), nullptr, n, n, k,
                                                       false, false, 1.0, 0.0);
    ASSERT_EQ(c.size(), ref.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
      ASSERT_NEAR(c[i], static_cast<double>(ref[i]), 1e-5) << i;
    }
  }
  EXPECT_TRUE(still_serving(*ts->stub));
}

// ---- graphs and server info --------------------------------------------------------------

TEST_F(ServiceOps, GraphLifecycle) {
  v1::CreateGraphRequest create;
  create.set_graph_id("g-alpha");
  create.set_num_vertices(3);
  auto* e0 = create.add_edges();
  e0->add_tails(0);
  e0->add_heads(1);
  e0->set_weight(1.25);
  auto* e1 = create.add_edges();
  e1->add_tails(0);
  e1->add_tails(1);
  e1->add_heads(2);
  e1->set_weight(2);
  v1::CreateGraphResponse created;
  ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::CreateGraph, create, &created)));
  EXPECT_EQ(created.info().graph_id(), "g-alpha");
  EXPECT_EQ(created.info().version(), 1u);
  EXPECT_EQ(created.info().num_vertices(), 3u);
  EXPECT_EQ(created.info().num_edges(), 2u);

  v1::CreateGraphRequest anon;
  anon.set_num_vertices(1);
  v1::CreateGraphResponse anon_created;
  ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::CreateGraph, anon, &anon_created)));
  const std::string anon_id = anon_created.info().graph_id();
  EXPECT_FALSE(anon_id.empty());

  {
    v1::GetGraphRequest get;
    get.set_graph_id("g-alpha");
    v1::GetGraphResponse snap;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::GetGraph, get, &snap)));
    EXPECT_EQ(std::vector<std::uint64_t>(snap.vertices().begin(), snap.vertices().end()),
              (std::vector<std::uint64_t>{0, 1, 2}));
    ASSERT_EQ(snap.edges_size(), 2);
    EXPECT_EQ(snap.edges(0).id(), 0u);
    EXPECT_EQ(snap.edges(0).weight(), 1.25);
    EXPECT_EQ(snap.edges(1).id(), 1u);
    EXPECT_EQ(
        std::vector<std::uint64_t>(snap.edges(1).tails().begin(), snap.edges(1).tails().end()),
        (std::vector<std::uint64_t>{0, 1}));
    EXPECT_EQ(snap.edges(1).heads_size(), 1);
    EXPECT_EQ(snap.edges(1).heads(0), 2u);
  }
  {
    v1::ListGraphsResponse list;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::ListGraphs, v1::ListGraphsRequest(), &list)));
    std::vector<std::string> ids;
    for (const auto& g : list.graphs()) ids.push_back(g.graph_id());
    auto sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(ids, sorted);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), "g-alpha"), 1);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), anon_id), 1);
  }
  {
    v1::ApplyEditsRequest req;
    req.set_graph_id("g-alpha");
    req.set_expected_version(1);
    req.add_edits()->mutable_add_vertex();            // -> vertex 3
    auto* add = req.add_edits()->mutable_add_edge();  // -> edge 2: 3 -> 0
    add->add_tails(3);
    add->add_heads(0);
    add->set_weight(4);
    auto* sw = req.add_edits()->mutable_set_weight();  // edge 0 weight 7
    sw->set_edge_id(0);
    sw->set_weight(7);
    auto* dec = req.add_edits()->mutable_decompose_vertex();  // 1 -> new vertex 4, edge 3
    dec->set_vertex_id(1);
    dec->add_move_edge_ids(1);
    dec->set_joining_weight(0.5);
    req.add_edits()->mutable_delete_vertex()->set_vertex_id(0);  // deletes edges 0 and 2
    v1::ApplyEditsResponse resp;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::ApplyEdits, req, &resp)));
    EXPECT_EQ(resp.version(), 2u);
    ASSERT_EQ(resp.results_size(), 5);
    EXPECT_EQ(resp.results(0).vertex_id(), 3u);
    EXPECT_EQ(resp.results(1).edge_id(), 2u);
    EXPECT_EQ(resp.results(3).vertex_id(), 4u);
    EXPECT_EQ(resp.results(3).edge_id(), 3u);
    std::vector<std::uint64_t> deleted(resp.results(4).deleted_edge_ids().begin(),
                                       resp.results(4).deleted_edge_ids().end());
    std::sort(deleted.begin(), deleted.end());
    EXPECT_EQ(deleted, (std::vector<std::uint64_t>{0, 2}));
  }
  {
    v1::GetGraphRequest get;
    get.set_graph_id("g-alpha");
    v1::GetGraphResponse snap;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::GetGraph, get, &snap)));
    EXPECT_EQ(snap.info().version(), 2u);
    EXPECT_EQ(std::vector<std::uint64_t>(snap.vertices().begin(), snap.vertices().end()),
              (std::vector<std::uint64_t>{1, 2, 3, 4}));
    ASSERT_EQ(snap.edges_size(), 2);
    EXPECT_EQ(snap.edges(0).id(), 1u);  // {4} -> {2}: tail 1 moved to 4, tail 0 deleted
    EXPECT_EQ(
        std::vector<std::uint64_t>(snap.edges(0).tails().begin(), snap.edges(0).tails().end()),
        (std::vector<std::uint64_t>{4}));
    EXPECT_EQ(snap.edges(0).weight(), 2);
    EXPECT_EQ(snap.edges(1).id(), 3u);  // joining edge 1 -> 4
    EXPECT_EQ(snap.edges(1).tails(0), 1u);
    EXPECT_EQ(snap.edges(1).heads(0), 4u);
    EXPECT_EQ(snap.edges(1).weight(), 0.5);
  }
  for (const std::string& id : {std::string("g-alpha"), anon_id}) {
    v1::DeleteGraphRequest del;
    del.set_graph_id(id);
    v1::DeleteGraphResponse dresp;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::DeleteGraph, del, &dresp)));
  }
  {
    v1::ListGraphsResponse list;
    ASSERT_TRUE(is_ok(call(&v1::Compute::Stub::ListGraphs, v1::ListGraphsRequest(), &list)));
    EXPECT_EQ(list.graphs_size(), 0);
  }
}

TEST(ServiceInfo, EchoesOptions) {
  ServerOptions o = test_options();
  o.limits.max_message_bytes = 3u << 20;
  o.limits.max_matrix_elements = 12345678;
  o.queue_depth = 7;
  o.workers = 3;
  o.stored_matrix_quota_bytes = 5u << 20;
  o.default_ttl = absl::Seconds(90);
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(ts->server->backend_name(), "cpu");
  EXPECT_GT(ts->server->port(), 0);
  EXPECT_GT(ts->server->metrics_port(), 0);
  v1::GetServerInfoResponse info;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(ts->stub->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &info)));
  EXPECT_EQ(info.backend(), "cpu");
  EXPECT_FALSE(info.version().empty());
  EXPECT_EQ(info.limits().max_message_bytes(), 3u << 20);
  EXPECT_EQ(info.limits().max_matrix_elements(), 12345678u);
  EXPECT_EQ(info.limits().queue_depth(), 7u);
  EXPECT_EQ(info.limits().workers(), 3u);
  EXPECT_EQ(info.limits().stored_matrix_quota_bytes(), 5u << 20);
  EXPECT_EQ(info.limits().default_ttl_seconds(), 90);
}

}  // namespace
}  // namespace gcompute::service_test
