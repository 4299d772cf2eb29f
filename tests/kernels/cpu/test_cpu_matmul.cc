// SPDX-License-Identifier: Apache-2.0
// cpu::matmul against a plain triple loop in long double. Native precisions are checked to a
// k-dependent rounding bound; emulated precisions against the same loop over inputs rounded
// by an independent oracle (frexp / nearbyint), and shown to differ from plain f32.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "gcompute/kernels/cpu/matmul.hpp"
#include "kernels/cpu/matmul_shape.hpp"
#include "support/oracle.hpp"
#include "support/random.hpp"

namespace gcompute::kernels::matmul_test {
namespace {

using ::gcompute::testing::poison;
using ::gcompute::testing::reference_gemm;
using ::gcompute::testing::reference_gemm_abs;
using ::gcompute::testing::Rng;

const std::vector<Dims> kDims = {{1, 1, 1},    {1, 7, 1},     {7, 1, 3},    {1, 1, 13},
                                 {3, 5, 0},    {0, 4, 3},     {4, 0, 3},    {17, 19, 23},
                                 {64, 64, 64}, {65, 33, 129}, {128, 1, 97}, {2, 131, 7}};
const std::vector<Batch> kBatches = {{1, 1, 1}, {3, 3, 3}, {3, 1, 3}, {4, 4, 1}};
const std::vector<Scale> kScales = {{1.0, 0.0}, {0.5, -1.25}, {-2.0, 1.0}, {0.0, 0.0}};

// x rounded to `bits` significant bits, nearest even, quantum no finer than 2^min_exp.
double round_significand(double x, int bits, int min_exp) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);
  const int quantum = std::max(e - bits, min_exp);
  return std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
}

// The value an input of f32 operands takes in the emulated precision (inputs here are far
// from overflow).
double oracle_round(double x, Precision p) {
  switch (p) {
    case Precision::kTF32:
      return round_significand(x, 11, -136);
    case Precision::kBF16:
      return round_significand(x, 8, -133);
    case Precision::kF16:
      return round_significand(x, 11, -24);
    default:
      return x;
  }
}

std::string describe(const MatmulShape& s) {
  return ::testing::PrintToString(
             std::vector<std::int64_t>{s.batch, s.a_batch, s.b_batch, s.m, s.n, s.k}) +
         " ta=" + std::to_string(s.transpose_a) + " tb=" + std::to_string(s.transpose_b) +
         " alpha=" + std::to_string(s.alpha) + " beta=" + std::to_string(s.beta) +
         " precision=" + precision_name(s.precision) + " dtype=" + dtype_name(s.dtype);
}

// Every shape and transpose pair in `dtype` and `p`, with the batch layouts and the scales
// taken in turn (the scale moving on every `scale_period` cases), up to the first fatal failure.
template <typename Run>
void run_cycling_batches_and_scales(DType dtype, Precision p, std::size_t scale_period, Run run) {
  std::size_t idx = 0;
  for (const Dims& d : kDims)
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const Batch& b = kBatches[idx % kBatches.size()];
        const Scale& sc = kScales[(idx / scale_period) % kScales.size()];
        ++idx;
        run(make_shape(d, b, ta, tb, sc, dtype, p));
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// Checks C (as doubles) against the long double reference computed from the double images
// of the inputs: |C - ref| <= rel * sum|terms| + out_rel * |ref| + abs_floor.
void check_against_reference(const MatmulShape& s, const std::vector<double>& a,
                             const std::vector<double>& b, const std::vector<double>& c_in,
                             const std::vector<double>& c_out, double rel, double out_rel,
                             double abs_floor) {
  const std::int64_t as = s.m * s.k, bs = s.k * s.n, cs = s.m * s.n;
  for (std::int64_t i = 0; i < s.batch; ++i) {
    const double* ai = a.data() + (s.a_batch == 1 ? 0 : i) * as;
    const double* bi = b.data() + (s.b_batch == 1 ? 0 : i) * bs;
    const double* ci = s.beta != 0 ? c_in.data() + i * cs : nullptr;
    const auto ref =
        reference_gemm(ai, bi, ci, s.m, s.n, s.k, s.transpose_a, s.transpose_b, s.alpha, s.beta);
    const auto mag = reference_gemm_abs(ai, bi, ci, s.m, s.n, s.k, s.transpose_a, s.transpose_b,
                                        s.alpha, s.beta);
    for (std::int64_t e = 0; e < cs; ++e) {
      const double got = c_out[i * cs + e];
      const double want = static_cast<double>(ref[e]);
      const double bound =
          rel * static_cast<double>(mag[e]) + out_rel * std::fabs(want) + abs_floor;
      ASSERT_TRUE(std::isfinite(got)) << "batch " << i << " element " << e << ": " << got;
      ASSERT_LE(std::fabs(got - want), bound)
          << "batch " << i << " element " << e << " got " << got << " want " << want;
    }
  }
}

template <typename T>
void run_native(Rng& rng, const MatmulShape& s) {
  SCOPED_TRACE(describe(s));
  const std::int64_t as = s.m * s.k, bs = s.k * s.n, cs = s.m * s.n;
  const auto a = ::gcompute::testing::random_uniform<T>(rng, s.a_batch * as);
  const auto b = ::gcompute::testing::random_uniform<T>(rng, s.b_batch * bs);
  std::vector<T> c = ::gcompute::testing::random_uniform<T>(rng, s.batch * cs);
  if (s.beta == 0) poison(c);  // must not be read
  const std::vector<T> c_in = c;
  ASSERT_TRUE(cpu::matmul(a.data(), b.data(), c.data(), s).ok());
  const double eps = std::numeric_limits<T>::epsilon();
  check_against_reference(s, {a.begin(), a.end()}, {b.begin(), b.end()}, {c_in.begin(), c_in.end()},
                          {c.begin(), c.end()}, (static_cast<double>(s.k) + 3) * eps, 0.0,
                          std::numeric_limits<T>::min());
}

// Every shape, batch layout, transpose pair and scale in T, up to the first fatal failure.
template <typename T>
void run_native_everywhere(DType dtype, Precision precision) {
  GC_SEEDED_RNG(rng);
  for (const Dims& d : kDims)
    for (const Batch& b : kBatches)
      for (const bool ta : {false, true})
        for (const bool tb : {false, true})
          for (const Scale& sc : kScales) {
            run_native<T>(rng, make_shape(d, b, ta, tb, sc, dtype, precision));
            if (::testing::Test::HasFatalFailure()) return;
          }
}

TEST(CpuMatmul, F64AllShapesTransposesBatches) {
  run_native_everywhere<double>(DType::kF64, Precision::kDefault);
}

TEST(CpuMatmul, F32AllShapesTransposesBatches) {
  run_native_everywhere<float>(DType::kF32, Precision::kF32);
}

// f32 operands with tf32 / bf16 / f16 arithmetic.
void run_emulated_f32(Rng& rng, const MatmulShape& s, std::int64_t& differs_from_f32) {
  SCOPED_TRACE(describe(s));
  const std::int64_t as = s.m * s.k, bs = s.k * s.n, cs = s.m * s.n;
  const auto a = ::gcompute::testing::random_uniform<float>(rng, s.a_batch * as);
  const auto b = ::gcompute::testing::random_uniform<float>(rng, s.b_batch * bs);
  std::vector<float> c = ::gcompute::testing::random_uniform<float>(rng, s.batch * cs);
  if (s.beta == 0) poison(c);
  const std::vector<float> c_in = c;
  ASSERT_TRUE(cpu::matmul(a.data(), b.data(), c.data(), s).ok());
  std::vector<double> ar(a.size()), br(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ar[i] = oracle_round(a[i], s.precision);
  for (std::size_t i = 0; i < b.size(); ++i) br[i] = oracle_round(b[i], s.precision);
  const double eps = std::numeric_limits<float>::epsilon();
  const double rel = (static_cast<double>(s.k) + 3) * eps;
  const std::vector<double> out(c.begin(), c.end()), cin(c_in.begin(), c_in.end());
  check_against_reference(s, ar, br, cin, out, rel, 0.0, std::numeric_limits<float>::min());
  // Against unrounded inputs, the result must be off by more than f32 accumulation allows
  // somewhere (otherwise the inputs were not rounded).
  for (std::int64_t i = 0; i < s.batch; ++i) {
    const std::vector<double> a_full(a.begin(), a.end()), b_full(b.begin(), b.end());
    const auto ref = reference_gemm(a_full.data() + (s.a_batch == 1 ? 0 : i) * as,
                                    b_full.data() + (s.b_batch == 1 ? 0 : i) * bs,
                                    s.beta != 0 ? cin.data() + i * cs : nullptr, s.m, s.n, s.k,
                                    s.transpose_a, s.transpose_b, s.alpha, s.beta);
    const auto mag = reference_gemm_abs(a_full.data() + (s.a_batch == 1 ? 0 : i) * as,
                                        b_full.data() + (s.b_batch == 1 ? 0 : i) * bs,
                                        s.beta != 0 ? cin.data() + i * cs : nullptr, s.m, s.n, s.k,
                                        s.transpose_a, s.transpose_b, s.alpha, s.beta);
    for (std::int64_t e = 0; e < cs; ++e) {
      if (std::fabs(out[i * cs + e] - static_cast<double>(ref[e])) >
          rel * static_cast<double>(mag[e]) + 1e-30) {
        ++differs_from_f32;
      }
    }
  }
}

TEST(CpuMatmul, F32OperandsReducedPrecision) {
  GC_SEEDED_RNG(rng);
  for (const Precision p : {Precision::kTF32, Precision::kBF16, Precision::kF16}) {
    std::int64_t differs = 0;
    run_cycling_batches_and_scales(
        DType::kF32, p, 2, [&](const MatmulShape& s) { run_emulated_f32(rng, s, differs); });
    if (HasFatalFailure()) return;
    EXPECT_GT(differs, 100) << precision_name(p) << " looks like plain f32 arithmetic";
  }
}

// f16 / bf16 operands: values generated exactly representable, output rounded back.
std::uint16_t encode_exact(double v, DType t) {
  if (t == DType::kF16) return std::bit_cast<std::uint16_t>(static_cast<_Float16>(v));
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(v)) >> 16);
}
double decode(std::uint16_t h, DType t) {
  if (t == DType::kF16) return static_cast<double>(std::bit_cast<_Float16>(h));
  return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16));
}

void run_narrow(Rng& rng, const MatmulShape& s) {
  SCOPED_TRACE(describe(s));
  const Precision p = s.dtype == DType::kF16 ? Precision::kF16 : Precision::kBF16;
  const std::int64_t as = s.m * s.k, bs = s.k * s.n, cs = s.m * s.n;
  auto make = [&](std::int64_t count, std::vector<double>& values) {
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(count));
    values.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      values[i] = oracle_round(rng.uniform(-1, 1), p);
      bits[i] = encode_exact(values[i], s.dtype);
      EXPECT_EQ(decode(bits[i], s.dtype), values[i]);
    }
    return bits;
  };
  std::vector<double> av, bv, cv;
  const auto a = make(s.a_batch * as, av);
  const auto b = make(s.b_batch * bs, bv);
  auto c = make(s.batch * cs, cv);
  if (s.beta == 0) poison(c);  // 0xFFFF: NaN in both formats
  ASSERT_TRUE(cpu::matmul(a.data(), b.data(), c.data(), s).ok());
  std::vector<double> out(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) out[i] = decode(c[i], s.dtype);
  const double eps = std::numeric_limits<float>::epsilon();
  const double out_rel = s.dtype == DType::kF16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double floor = s.dtype == DType::kF16 ? std::ldexp(1.0, -24) : 1e-38;
  check_against_reference(s, av, bv, cv, out, (static_cast<double>(s.k) + 3) * eps * 1.01, out_rel,
                          floor);
}

TEST(CpuMatmul, F16AndBf16Operands) {
  GC_SEEDED_RNG(rng);
  for (const DType t : {DType::kF16, DType::kBF16}) {
    run_cycling_batches_and_scales(t, Precision::kDefault, 3,
                                   [&](const MatmulShape& s) { run_narrow(rng, s); });
    if (HasFatalFailure()) return;
  }
}

TEST(CpuMatmul, F16OutputOverflowsToInf) {
  // 300 * 300 = 90000 > 65504: the f32 result rounds to +inf in f16, as on a GPU.
  const std::uint16_t a = encode_exact(300.0, DType::kF16), b = encode_exact(300.0, DType::kF16);
  std::uint16_t c = 0;
  MatmulShape s;
  s.m = s.n = s.k = 1;
  s.dtype = DType::kF16;
  ASSERT_TRUE(cpu::matmul(&a, &b, &c, s).ok());
  EXPECT_EQ(c, 0x7c00u);
}

TEST(CpuMatmul, RejectsInvalidShapes) {
  float buf[16] = {};
  auto expect_invalid = [&](MatmulShape s) {
    const absl::Status st = cpu::matmul(buf, buf, buf, s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << describe(s) << " " << st;
  };
  MatmulShape s;
  s.m = s.n = s.k = 2;
  MatmulShape bad = s;
  bad.m = -1;
  expect_invalid(bad);
  bad = s;
  bad.dtype = DType::kI32;
  expect_invalid(bad);
  bad = s;
  bad.precision = Precision::kF64;
  expect_invalid(bad);
  bad = s;
  bad.dtype = DType::kF64;
  bad.precision = Precision::kTF32;
  expect_invalid(bad);
  bad = s;
  bad.dtype = DType::kF16;
  bad.precision = Precision::kBF16;
  expect_invalid(bad);
  bad = s;
  bad.batch = 3;
  bad.a_batch = 2;
  bad.b_batch = 3;
  expect_invalid(bad);
  bad = s;
  bad.alpha = std::numeric_limits<double>::infinity();
  expect_invalid(bad);
}

TEST(CpuMatmul, LargerThanBlasBlocking) {
  // One product big enough for OpenBLAS's packed, threaded path.
  GC_SEEDED_RNG(rng);
  run_native<double>(rng, make_shape({300, 257, 311}, {1, 1, 1}, true, false, {1.5, 0.0},
                                     DType::kF64, Precision::kF64));
  run_native<float>(rng, make_shape({257, 300, 129}, {2, 1, 2}, false, true, {1.0, 2.0},
                                    DType::kF32, Precision::kDefault));
}

TEST(CpuMatmul, PanelsCoverEveryRowWithTransposesAndBatches) {
  // n * k = 2^22 multiply-adds per row of C: panels of 64 rows, so m = 150 takes three, the
  // last one short. Sampled entries are checked against a long double dot product.
  GC_SEEDED_RNG(rng);
  const std::int64_t m = 150, n = 2048, k = 2048;
  for (bool ta : {false, true}) {
    const MatmulShape s =
        make_shape({m, n, k}, {2, 2, 1}, ta, false, {0.75, -0.5}, DType::kF64, Precision::kF64);
    const std::vector<double> a = ::gcompute::testing::random_normal<double>(rng, 2 * m * k);
    const std::vector<double> b = ::gcompute::testing::random_normal<double>(rng, k * n);
    const std::vector<double> c0 = ::gcompute::testing::random_normal<double>(rng, 2 * m * n);
    std::vector<double> c = c0;
    ASSERT_TRUE(cpu::matmul(a.data(), b.data(), c.data(), s).ok());
    for (int sample = 0; sample < 400; ++sample) {
      const std::int64_t bi = sample % 2;
      const std::int64_t i = sample < 40 ? (sample * 37) % m : (sample * 7919) % m;
      const std::int64_t j = (sample * 104729) % n;
      long double dot = 0, mag = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[bi * m * k + p * m + i] : a[bi * m * k + i * k + p];
        dot += static_cast<long double>(av) * b[p * n + j];
        mag += std::fabs(static_cast<long double>(av) * b[p * n + j]);
      }
      const long double want = 0.75L * dot - 0.5L * c0[bi * m * n + i * n + j];
      const double got = c[bi * m * n + i * n + j];
      EXPECT_NEAR(got, static_cast<double>(want),
                  4.0 * k * 1.2e-16 * static_cast<double>(mag) + 1e-300)
          << "ta=" << ta << " batch " << bi << " row " << i << " col " << j;
    }
  }
}

TEST(CpuMatmul, StopsBetweenPanels) {
  GC_SEEDED_RNG(rng);
  const std::int64_t n = 1500;
  const MatmulShape s =
      make_shape({n, n, n}, {1, 1, 1}, false, false, {1.0, 0.0}, DType::kF64, Precision::kF64);
  const std::vector<double> a = ::gcompute::testing::random_normal<double>(rng, n * n);
  std::vector<double> c(static_cast<std::size_t>(n * n));
  std::atomic<bool> flag{true};
  EXPECT_EQ(cpu::matmul(a.data(), a.data(), c.data(), s, StopToken(&flag)).code(),
            absl::StatusCode::kCancelled);
  // A deadline in the past stops it too, with the flag clear.
  flag = false;
  EXPECT_EQ(cpu::matmul(a.data(), a.data(), c.data(), s, StopToken(&flag, StopToken::Clock::now()))
                .code(),
            absl::StatusCode::kCancelled);
  // Fired while running: it returns within about a panel.
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(cpu::matmul(a.data(), a.data(), c.data(), s, StopToken(&flag)).ok());
  const double full =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    flag = true;
  });
  const auto stop_start = std::chrono::steady_clock::now();
  const absl::Status st = cpu::matmul(a.data(), a.data(), c.data(), s, StopToken(&flag));
  const double stopped =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stop_start).count();
  canceller.join();
  EXPECT_EQ(st.code(), absl::StatusCode::kCancelled) << "full product " << full << " s";
  EXPECT_LT(stopped, 0.010 + 0.15) << "full product " << full << " s";
}

}  // namespace
}  // namespace gcompute::kernels::matmul_test
