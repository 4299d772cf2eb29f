// SPDX-License-Identifier: Apache-2.0
// cuda::matmul against a plain-loop oracle in double on fresh random inputs: every dtype and
// precision, all transpose flags, ragged shapes, batches with broadcast, alpha/beta, k = 0 and
// other empty products, and argument errors.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gcompute/kernels/cuda/matmul.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/gpu.hpp"
#include "support/stop_after.hpp"

namespace gcompute::kernels::cuda {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

std::mt19937_64& rng() {
  static std::mt19937_64 gen{std::random_device{}()};
  return gen;
}

/// Host copy of a matrix in its storage dtype, with the stored values read back as double.
struct HostMatrix {
  std::vector<std::uint8_t> bytes;
  std::vector<double> values;
};

void store(DType t, double v, std::uint8_t* dst) {
  switch (t) {
    case DType::kF32: {
      const float f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
      break;
    }
    case DType::kF64:
      std::memcpy(dst, &v, 8);
      break;
    case DType::kF16: {
      const __half h = __float2half_rn(static_cast<float>(v));
      std::memcpy(dst, &h, 2);
      break;
    }
    case DType::kBF16: {
      const __nv_bfloat16 h = __float2bfloat16_rn(static_cast<float>(v));
      std::memcpy(dst, &h, 2);
      break;
    }
    case DType::kI32:
      break;
  }
}

double load(DType t, const std::uint8_t* src) {
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, src, 4);
      return f;
    }
    case DType::kF64: {
      double d;
      std::memcpy(&d, src, 8);
      return d;
    }
    case DType::kF16: {
      __half h;
      std::memcpy(&h, src, 2);
      return __half2float(h);
    }
    case DType::kBF16: {
      __nv_bfloat16 h;
      std::memcpy(&h, src, 2);
      return __bfloat162float(h);
    }
    case DType::kI32:
      break;
  }
  return NAN;
}

HostMatrix random_matrix(DType t, std::int64_t n) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const std::size_t e = dtype_size(t);
  HostMatrix m{std::vector<std::uint8_t>(static_cast<std::size_t>(n) * e),
               std::vector<double>(static_cast<std::size_t>(n))};
  for (std::int64_t i = 0; i < n; ++i) {
    store(t, dist(rng()), &m.bytes[static_cast<std::size_t>(i) * e]);
    m.values[static_cast<std::size_t>(i)] = load(t, &m.bytes[static_cast<std::size_t>(i) * e]);
  }
  return m;
}

/// Bound on |computed - exact| relative to |alpha| sum |a||b| + |beta c|: input rounding to
/// the multiply precision, f32 (f64) accumulation over k terms, rounding of the stored result.
double tolerance(DType dtype, Precision p, std::int64_t k) {
  const double kk = static_cast<double>(k + 2);
  if (dtype == DType::kF64) return kk * std::ldexp(1.0, -53) * 4;
  double input = 0;  // relative error of one product from rounding its two inputs
  if (dtype == DType::kF32) {
    switch (p) {
      case Precision::kTF32:
        input = 2 * std::ldexp(1.0, -10);
        break;  // may truncate
      case Precision::kBF16:
        input = 2 * std::ldexp(1.0, -8);
        break;
      case Precision::kF16:
        input = 2 * std::ldexp(1.0, -10);
        break;
      default:
        break;
    }
  }
  const double output = dtype == DType::kF16    ? std::ldexp(1.0, -11)
                        : dtype == DType::kBF16 ? std::ldexp(1.0, -8)
                                                : std::ldexp(1.0, -24);
  return input + kk * std::ldexp(1.0, -24) * 2 + output;
}

class CudaMatmulTest : public testing::DeviceTest {
 protected:
  CudaMatmulTest() : DeviceTest(/*priority_stream=*/false, /*libraries=*/true) {}

  /// `bytes` of device memory kept until the test ends.
  void* scratch(std::size_t bytes) {
    buffers_.push_back(device_.buffer(bytes));
    return buffers_.back().data();
  }

  void* upload(const std::vector<std::uint8_t>& bytes) {
    void* p = scratch(bytes.size() + 16);
    EXPECT_EQ(cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    return p;
  }

  /// Runs one product on fresh random inputs and checks every element of C; `panel` > 0 runs
  /// it in panels of that many multiply-adds.
  void check(MatmulShape s, double panel = 0) {
    SCOPED_TRACE(::testing::Message()
                 << dtype_name(s.dtype) << "/" << precision_name(s.precision)
                 << " batch=" << s.batch << " (" << s.a_batch << "," << s.b_batch << ") m=" << s.m
                 << " n=" << s.n << " k=" << s.k << " ta=" << s.transpose_a
                 << " tb=" << s.transpose_b << " alpha=" << s.alpha << " beta=" << s.beta
                 << " panel=" << panel);
    const DType t = s.dtype;
    const std::size_t e = dtype_size(t);
    const HostMatrix a = random_matrix(t, s.a_batch * s.m * s.k);
    const HostMatrix b = random_matrix(t, s.b_batch * s.k * s.n);
    const HostMatrix c0 = random_matrix(t, s.batch * s.m * s.n);
    void* da = upload(a.bytes);
    void* db = upload(b.bytes);
    void* dc = upload(c0.bytes);
    const std::size_t c_bytes = c0.bytes.size();
    // beta == 0: C must not be read, so it starts as NaN; any element not written stays NaN.
    if (s.beta == 0) {
      ASSERT_CUDA(cudaMemset(dc, 0xFF, c_bytes));
    }
    ASSERT_CUDA(cudaMemset(static_cast<std::uint8_t*>(dc) + c_bytes, 0xFF, 16));
    const absl::Status st = matmul(ctx_, da, db, dc, s, StopToken(), panel);
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::vector<std::uint8_t> got(c_bytes + 16);
    ASSERT_CUDA(cudaMemcpy(got.data(), dc, got.size(), cudaMemcpyDeviceToHost));
    for (std::size_t i = c_bytes; i < got.size(); ++i) ASSERT_EQ(got[i], 0xFF) << "past C";

    const double tol = tolerance(t, *resolve_precision(t, s.precision), s.k);
    double worst = 0;  // largest error / bound
    int reported = 0;
    for (std::int64_t bi = 0; bi < s.batch; ++bi) {
      const double* av = &a.values[static_cast<std::size_t>((s.a_batch == 1 ? 0 : bi) * s.m * s.k)];
      const double* bv = &b.values[static_cast<std::size_t>((s.b_batch == 1 ? 0 : bi) * s.k * s.n)];
      for (std::int64_t i = 0; i < s.m; ++i) {
        for (std::int64_t j = 0; j < s.n; ++j) {
          double sum = 0;
          double mag = 0;
          for (std::int64_t l = 0; l < s.k; ++l) {
            const double x = s.transpose_a ? av[l * s.m + i] : av[i * s.k + l];
            const double y = s.transpose_b ? bv[j * s.k + l] : bv[l * s.n + j];
            sum += x * y;
            mag += std::fabs(x * y);
          }
          const std::size_t ci = static_cast<std::size_t>((bi * s.m + i) * s.n + j);
          const double cprev = s.beta == 0 ? 0.0 : c0.values[ci];
          const double want = s.alpha * sum + s.beta * cprev;
          const double bound = tol * (std::fabs(s.alpha) * mag + std::fabs(s.beta * cprev));
          const double have = load(t, &got[ci * e]);
          const double err = std::fabs(have - want);
          if (!(err <= bound)) {  // NaN fails too
            if (reported++ < 5) {
              ADD_FAILURE() << "C[" << bi << "][" << i << "][" << j << "] = " << have << ", want "
                            << want << " (error " << err << " > bound " << bound << ")";
            }
          } else if (bound > 0) {
            worst = std::max(worst, err / bound);
          }
        }
      }
    }
    EXPECT_EQ(reported, 0);
    RecordProperty("worst_error_over_bound", std::to_string(worst));
  }

  std::vector<DeviceBuffer> buffers_;
};

struct Combo {
  DType dtype;
  Precision precision;
};
const Combo kCombos[] = {{DType::kF32, Precision::kDefault}, {DType::kF32, Precision::kTF32},
                         {DType::kF32, Precision::kBF16},    {DType::kF32, Precision::kF16},
                         {DType::kF64, Precision::kDefault}, {DType::kF16, Precision::kDefault},
                         {DType::kBF16, Precision::kDefault}};

/// `s` with operands and arithmetic of `combo`.
MatmulShape with_combo(MatmulShape s, const Combo& combo) {
  s.dtype = combo.dtype;
  s.precision = combo.precision;
  return s;
}

/// `s` with the transposes of `flags`: bit 0 for A, bit 1 for B, so 0 to 3 give every pair.
MatmulShape with_transposes(MatmulShape s, int flags) {
  s.transpose_a = (flags & 1) != 0;
  s.transpose_b = (flags & 2) != 0;
  return s;
}

struct Mnk {
  std::int64_t m, n, k;
};
const Mnk kShapes[] = {{1, 1, 1},    {1, 9, 5},    {9, 1, 5},      {7, 5, 1},     {1, 1, 300},
                       {17, 13, 29}, {33, 65, 31}, {128, 64, 100}, {257, 129, 67}};

TEST_F(CudaMatmulTest, EveryPrecisionTransposeAndShape) {
  for (const Combo& c : kCombos) {
    for (const Mnk& d : kShapes) {
      for (int flags = 0; flags < 4; ++flags) {
        check(with_transposes(with_combo({.m = d.m, .n = d.n, .k = d.k}, c), flags));
      }
    }
  }
}

TEST_F(CudaMatmulTest, AlphaBeta) {
  const MatmulShape scaled[] = {
      {.m = 31, .n = 47, .k = 19, .alpha = -1.5, .beta = 0.75},
      {.m = 16, .n = 8, .k = 24, .transpose_a = true, .alpha = 0.5, .beta = 1.0},
      {.m = 5, .n = 6, .k = 7, .alpha = 0.0, .beta = -2.0}};
  for (const Combo& c : kCombos) {
    for (const MatmulShape& s : scaled) check(with_combo(s, c));
  }
}

TEST_F(CudaMatmulTest, BatchesAndBroadcast) {
  const MatmulShape batched[] = {
      {.batch = 3, .a_batch = 3, .b_batch = 3, .m = 19, .n = 23, .k = 11, .beta = 0.5},
      {.batch = 4, .a_batch = 1, .b_batch = 4, .m = 9, .n = 33, .k = 17},
      {.batch = 5, .a_batch = 5, .b_batch = 1, .m = 33, .n = 7, .k = 13, .alpha = 2.0}};
  for (const Combo& c : kCombos) {
    for (int flags = 0; flags < 4; ++flags) {
      for (const MatmulShape& s : batched) check(with_transposes(with_combo(s, c), flags));
    }
  }
  check({.batch = 64, .a_batch = 64, .b_batch = 1, .m = 8, .n = 8, .k = 8});
}

TEST_F(CudaMatmulTest, LargerF32AndF64) {
  check({.m = 384, .n = 512, .k = 1000, .dtype = DType::kF32});
  check({.m = 300,
         .n = 200,
         .k = 777,
         .transpose_a = true,
         .transpose_b = true,
         .dtype = DType::kF64,
         .beta = 1.0});
}

TEST_F(CudaMatmulTest, PanelsMatchTheOracle) {
  // Panels of 128 rows: bands 128, 128 and a ragged 45 of each matrix, for every transpose
  // and both broadcasts; then groups of two whole matrices (the last one alone).
  const MatmulShape banded[] = {
      {.batch = 2,
       .a_batch = 2,
       .b_batch = 1,
       .m = 301,
       .n = 67,
       .k = 45,
       .alpha = 1.5,
       .beta = 0.5},
      {.batch = 2, .a_batch = 1, .b_batch = 2, .m = 301, .n = 67, .k = 45}};
  const MatmulShape grouped = {.batch = 7,
                               .a_batch = 7,
                               .b_batch = 1,
                               .m = 13,
                               .n = 29,
                               .k = 31,
                               .dtype = DType::kF32,
                               .beta = 2.0};
  for (int flags = 0; flags < 4; ++flags) {
    for (const DType t : {DType::kF64, DType::kF16}) {
      for (const MatmulShape& s : banded) {
        check(with_transposes(with_combo(s, {t, Precision::kDefault}), flags), 128.0 * 67 * 45);
      }
    }
    check(with_transposes(grouped, flags), 2.5 * 13 * 29 * 31);
  }
}

TEST_F(CudaMatmulTest, CancelStopsWithinTwoPanels) {
  // 16384^3 f64 (about 4.4e12 multiply-adds, well over 100 ms on an H100) in default panels;
  // the flag is raised 30 ms in. Without panels the call would return OK at once (it is
  // asynchronous) and the GPU would stay busy for the whole product.
  const std::int64_t n = 16384;
  const std::size_t bytes = static_cast<std::size_t>(n * n) * 8;
  void* da = scratch(bytes);
  void* db = scratch(bytes);
  void* dc = scratch(bytes);
  ASSERT_CUDA(cudaMemset(da, 0, bytes));
  ASSERT_CUDA(cudaMemset(db, 0, bytes));
  const auto [st, late_ms] =
      testing::call_stopped_after(std::chrono::milliseconds(30), [&](StopToken stop) {
        return matmul(ctx_, da, db, dc, {.m = n, .n = n, .k = n, .dtype = DType::kF64}, stop);
      });
  ASSERT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
  EXPECT_NE(st.message().find("row bands"), std::string::npos) << st;
  RecordProperty("cancel_latency_ms", std::to_string(late_ms));
  EXPECT_LT(late_ms, 50.0) << st;
  // Nothing is left running on the stream.
  EXPECT_EQ(cudaStreamQuery(ctx_.stream), cudaSuccess);
}

TEST_F(CudaMatmulTest, KZeroScalesC) {
  for (const Combo& c : kCombos) {
    for (double beta : {0.0, 1.0, 2.5}) {
      check(with_combo(
          {.batch = 2, .a_batch = 2, .b_batch = 1, .m = 7, .n = 9, .k = 0, .beta = beta}, c));
    }
  }
}

TEST_F(CudaMatmulTest, EmptyOutputsWriteNothing) {
  void* c = scratch(256);
  ASSERT_NE(c, nullptr);
  for (const MatmulShape& s :
       {MatmulShape{.m = 0, .n = 5, .k = 3}, MatmulShape{.m = 5, .n = 0, .k = 3},
        MatmulShape{.batch = 0, .a_batch = 0, .b_batch = 0, .m = 4, .n = 4, .k = 4},
        MatmulShape{.m = 0, .n = 0, .k = 0, .dtype = DType::kF64}}) {
    ASSERT_CUDA(cudaMemset(c, 0xFF, 256));
    const absl::Status st = matmul(ctx_, nullptr, nullptr, c, s);
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::vector<std::uint8_t> got(256);
    ASSERT_CUDA(cudaMemcpy(got.data(), c, 256, cudaMemcpyDeviceToHost));
    for (std::uint8_t v : got) ASSERT_EQ(v, 0xFF);
  }
}

TEST_F(CudaMatmulTest, RejectsBadArguments) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  void* buf = scratch(4096);
  ASSERT_NE(buf, nullptr);
  auto code = [&](const MatmulShape& s) { return matmul(ctx_, buf, buf, buf, s).code(); };
  EXPECT_EQ(code({.m = -1, .n = 2, .k = 2}), kInvalid);
  EXPECT_EQ(code({.m = 2, .n = 2, .k = 2, .dtype = DType::kI32}), kInvalid);
  EXPECT_EQ(code({.m = 2, .n = 2, .k = 2, .precision = Precision::kF64}), kInvalid);
  EXPECT_EQ(code({.m = 2, .n = 2, .k = 2, .dtype = DType::kF16, .precision = Precision::kBF16}),
            kInvalid);
  EXPECT_EQ(code({.batch = 3, .a_batch = 2, .b_batch = 3, .m = 2, .n = 2, .k = 2}), kInvalid);
  EXPECT_EQ(code({.m = 2, .n = 2, .k = 2, .alpha = NAN}), kInvalid);
  EXPECT_EQ(matmul(ctx_, nullptr, buf, buf, {.m = 2, .n = 2, .k = 2}).code(), kInvalid);
  Context no_handle{.stream = ctx_.stream};
  EXPECT_EQ(matmul(no_handle, buf, buf, buf, {.m = 2, .n = 2, .k = 2}).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gcompute::kernels::cuda
