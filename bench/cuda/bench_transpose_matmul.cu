// SPDX-License-Identifier: Apache-2.0
// Transpose and matmul against their baselines, measured in one run on one GPU:
//   transpose: device-to-device copy of the same bytes (cudaMemcpyAsync, read + write bytes)
//              and cuBLAS geam (C = A^T) where it exists (f32, f64);
//   matmul:    a direct cublasGemmEx call of the same shape, types and compute type.
// CUDA events, warm-up first, median of several repetitions; ours and the baseline are
// interleaved repetition by repetition so that clock drift hits both alike. Inputs are
// random (never zeros). Prints a table; writes CSV to argv[1], else $OUT/<program>.csv.
//
// usage: bench_transpose_matmul [CSV_PATH]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "../../kernels/cuda/detail/transpose_tiled.cuh"
#include "bench_args.hpp"
#include "bench_device.hpp"
#include "exit_on_error.hpp"
#include "gcompute/kernels/cuda/matmul.hpp"
#include "gcompute/kernels/cuda/transpose.hpp"

namespace gk = gcompute::kernels;
namespace gc = gcompute::kernels::cuda;
using gcompute::bench::check_ok;

namespace {

// The device main() creates, and views of its stream and cuBLAS handle (bound to the stream).
const gcompute::bench::BenchDevice* g_device = nullptr;
cudaStream_t g_stream;
cublasHandle_t g_cublas;

/// Device memory from g_device's pool; must not outlive main().
struct Buffer {
  explicit Buffer(std::size_t n) : owner(g_device->buffer(n)), ptr(owner.data()), bytes(n) {}
  gc::DeviceBuffer owner;
  void* ptr;
  std::size_t bytes;
};

__device__ std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform values in [-1, 1) of type T (random bits would give NaNs and denormals).
template <typename T>
__global__ void fill_kernel(T* p, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const double u =
        static_cast<double>(mix(seed + static_cast<std::uint64_t>(i)) >> 11) * 0x1.0p-52 - 1.0;
    if constexpr (std::is_same_v<T, __half>) {
      p[i] = __float2half_rn(static_cast<float>(u));
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      p[i] = __float2bfloat16_rn(static_cast<float>(u));
    } else if constexpr (std::is_same_v<T, std::uint8_t>) {
      p[i] = static_cast<std::uint8_t>(mix(seed + static_cast<std::uint64_t>(i)));
    } else {
      p[i] = static_cast<T>(u);
    }
  }
}

template <typename T>
void fill(void* p, std::int64_t n) {
  static std::uint64_t seed = 0x1234567ULL;
  seed += 0x9e3779b97f4a7c15ULL;
  fill_kernel<T><<<4096, 256, 0, g_stream>>>(static_cast<T*>(p), n, seed);
  CHECK_CUDA(cudaGetLastError());
}

void fill_bytes(void* p, std::size_t bytes, std::size_t element_bytes) {
  const auto n = static_cast<std::int64_t>(bytes / element_bytes);
  switch (element_bytes) {
    case 1:
      fill<std::uint8_t>(p, n);
      break;
    case 2:
      fill<__half>(p, n);
      break;
    case 4:
      fill<float>(p, n);
      break;
    default:
      fill<double>(p, n);
      break;
  }
}

__global__ void count_diff_kernel(const std::uint8_t* a, const std::uint8_t* b, std::int64_t n,
                                  unsigned long long* bad) {
  unsigned long long local = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    local += a[i] != b[i];
  }
  if (local != 0) atomicAdd(bad, local);
}

/// Bytes that differ between two device buffers.
unsigned long long count_diff(const void* a, const void* b, std::size_t n) {
  Buffer bad(sizeof(unsigned long long));
  CHECK_CUDA(cudaMemsetAsync(bad.ptr, 0, sizeof(unsigned long long), g_stream));
  count_diff_kernel<<<4096, 256, 0, g_stream>>>(
      static_cast<const std::uint8_t*>(a), static_cast<const std::uint8_t*>(b),
      static_cast<std::int64_t>(n), static_cast<unsigned long long*>(bad.ptr));
  CHECK_CUDA(cudaGetLastError());
  unsigned long long host = 0;
  CHECK_CUDA(cudaMemcpyAsync(&host, bad.ptr, sizeof(host), cudaMemcpyDeviceToHost, g_stream));
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
  return host;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Median milliseconds of each function, repetitions interleaved (f0, f1, ..., f0, f1, ...).
std::vector<double> time_interleaved(const std::vector<std::function<void()>>& fns, int warmup,
                                     int reps) {
  const gc::Event start_event = gcompute::bench::timing_event();
  const gc::Event stop_event = gcompute::bench::timing_event();
  const cudaEvent_t start = start_event.value(), stop = stop_event.value();
  for (int w = 0; w < warmup; ++w) {
    for (const auto& f : fns) f();
  }
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
  std::vector<std::vector<double>> ms(fns.size());
  for (int r = 0; r < reps; ++r) {
    for (std::size_t i = 0; i < fns.size(); ++i) {
      CHECK_CUDA(cudaEventRecord(start, g_stream));
      fns[i]();
      CHECK_CUDA(cudaEventRecord(stop, g_stream));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float t = 0;
      CHECK_CUDA(cudaEventElapsedTime(&t, start, stop));
      ms[i].push_back(t);
    }
  }
  std::vector<double> out;
  for (auto& v : ms) out.push_back(median(v));
  return out;
}

struct Row {
  std::string section, name, dtype, shape;
  double ours_ms, ours_rate;  // GB/s (transpose) or TFLOP/s (matmul)
  std::string baseline;
  double base_ms, base_rate;
  double ratio() const { return ours_rate / base_rate; }  // > 1: ours faster
};
std::vector<Row> g_rows;

void add(const Row& r) {
  g_rows.push_back(r);
  std::printf("  %-9s %-22s %-5s %-18s %9.3f ms %9.1f | %-12s %9.3f ms %9.1f | ratio %.3f\n",
              r.section.c_str(), r.name.c_str(), r.dtype.c_str(), r.shape.c_str(), r.ours_ms,
              r.ours_rate, r.baseline.c_str(), r.base_ms, r.base_rate, r.ratio());
  std::fflush(stdout);
}

const char* elem_name(std::size_t e) {
  return e == 1 ? "u8" : e == 2 ? "f16" : e == 4 ? "f32" : "f64";
}

std::string shape_str(std::int64_t batch, std::int64_t r, std::int64_t c) {
  std::string s = batch == 1 ? "" : std::to_string(batch) + "x";
  return s + std::to_string(r) + "x" + std::to_string(c);
}

/// cuBLAS's transpose of `in` (rows x cols, row-major, float or double) into `out`.
template <typename T>
cublasStatus_t geam_transpose(const void* in, void* out, std::int64_t rows, std::int64_t cols) {
  // Column-major view: in is cols x rows (ld cols); out = in^T is rows x cols (ld rows).
  const T one = 1, zero = 0;
  const int r = static_cast<int>(rows), c = static_cast<int>(cols);
  const auto* src = static_cast<const T*>(in);
  auto* dst = static_cast<T*>(out);
  if constexpr (std::is_same_v<T, float>) {
    return cublasSgeam(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, r, c, &one, src, c, &zero, dst, r, dst,
                       r);
  } else {
    return cublasDgeam(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, r, c, &one, src, c, &zero, dst, r, dst,
                       r);
  }
}

/// One transpose case: ours against the copy of the same bytes, and against geam (f32/f64,
/// batch 1), whose output must equal ours bit for bit.
void bench_transpose(std::int64_t batch, std::int64_t rows, std::int64_t cols, std::size_t e,
                     int reps) {
  const std::size_t bytes = static_cast<std::size_t>(batch * rows * cols) * e;
  Buffer in(bytes), out(bytes), ref(bytes);
  fill_bytes(in.ptr, bytes, e);
  const gk::TransposeShape shape{.batch = batch, .rows = rows, .cols = cols, .element_bytes = e};
  gc::Context ctx{.stream = g_stream, .cublas = g_cublas};
  auto ours = [&] { check_ok(gc::transpose(ctx, in.ptr, out.ptr, shape), "transpose"); };
  auto copy = [&] {
    CHECK_CUDA(cudaMemcpyAsync(ref.ptr, in.ptr, bytes, cudaMemcpyDeviceToDevice, g_stream));
  };
  const bool has_geam = batch == 1 && (e == 4 || e == 8);
  auto geam = [&] {
    CHECK_LIBRARY(e == 4 ? geam_transpose<float>(in.ptr, ref.ptr, rows, cols)
                         : geam_transpose<double>(in.ptr, ref.ptr, rows, cols));
  };
  std::vector<std::function<void()>> fns{ours, copy};
  if (has_geam) fns.push_back(geam);
  const std::vector<double> ms = time_interleaved(fns, 3, reps);
  const double gbs = 2.0 * static_cast<double>(bytes) / 1e6;  // bytes read + written, in GB*1e3
  const std::string sh = shape_str(batch, rows, cols);
  add({"transpose", "ours/copy", elem_name(e), sh, ms[0], gbs / ms[0], "memcpy D2D", ms[1],
       gbs / ms[1]});
  if (has_geam) {
    add({"transpose", "ours/geam", elem_name(e), sh, ms[0], gbs / ms[0], "cublas geam", ms[2],
         gbs / ms[2]});
    CHECK_CUDA(cudaMemsetAsync(ref.ptr, 0xFF, bytes, g_stream));
    CHECK_CUDA(cudaMemsetAsync(out.ptr, 0xFF, bytes, g_stream));
    geam();
    ours();
    const unsigned long long bad = count_diff(out.ptr, ref.ptr, bytes);
    if (bad != 0) {
      std::fprintf(stderr, "MISMATCH: transpose %s %s differs from geam in %llu bytes\n",
                   elem_name(e), sh.c_str(), bad);
      std::exit(1);
    }
  }
}

/// A launch of the f32 tile kernel on n x n matrices with vector width V, tile edge TE, NT
/// threads a block and the kernel's layout options.
template <int V, int TE, int NT, bool kRowTilesInX = false, int kChunk = 0>
std::function<cudaError_t()> tiled_variant(const void* in, void* out, std::int64_t n) {
  return [=] {
    return gc::detail::launch_tiled<std::uint32_t, V, TE, NT, kRowTilesInX, kChunk>(g_stream, in,
                                                                                    out, 1, n, n);
  };
}

/// Tile variants of the f32 kernel against the copy, to justify the tile transpose() uses.
void bench_variants(std::int64_t n, int reps) {
  const std::size_t bytes = static_cast<std::size_t>(n * n) * 4;
  Buffer in(bytes), out(bytes), ref(bytes);
  fill_bytes(in.ptr, bytes, 4);
  namespace d = gc::detail;
  struct V {
    const char* name;
    std::function<cudaError_t()> run;
  };
  const std::vector<V> variants = {
      {"v4 64x64 nt256", tiled_variant<4, 64, 256>(in.ptr, out.ptr, n)},
      {"v4 64x64 nt128", tiled_variant<4, 64, 128>(in.ptr, out.ptr, n)},
      {"v4 64x64 nt128 colx", tiled_variant<4, 64, 128, true>(in.ptr, out.ptr, n)},
      {"v4 64x64 nt128 chunk8", tiled_variant<4, 64, 128, false, 8>(in.ptr, out.ptr, n)},
      {"v4 64x64 nt64", tiled_variant<4, 64, 64>(in.ptr, out.ptr, n)},
      {"v4 64x64 nt64 chunk8", tiled_variant<4, 64, 64, false, 8>(in.ptr, out.ptr, n)},
      {"v4 32x32 nt64", tiled_variant<4, 32, 64>(in.ptr, out.ptr, n)},
      {"v4 32x32 nt32", tiled_variant<4, 32, 32>(in.ptr, out.ptr, n)},
      {"v2 64x64 nt128", tiled_variant<2, 64, 128>(in.ptr, out.ptr, n)},
      {"v1 64x64 nt128", tiled_variant<1, 64, 128>(in.ptr, out.ptr, n)},
      {"v1 32x32 nt64", tiled_variant<1, 32, 64>(in.ptr, out.ptr, n)},
      {"padded 32x32",
       [&] { return d::launch_padded<std::uint32_t>(g_stream, in.ptr, out.ptr, 1, n, n); }},
  };

  std::vector<std::function<void()>> fns{[&] {
    CHECK_CUDA(cudaMemcpyAsync(ref.ptr, in.ptr, bytes, cudaMemcpyDeviceToDevice, g_stream));
  }};
  for (const V& v : variants) fns.push_back([&v] { CHECK_CUDA(v.run()); });
  const std::vector<double> ms = time_interleaved(fns, 2, reps);
  const double gbs = 2.0 * static_cast<double>(bytes) / 1e6;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    add({"variant", variants[i].name, "f32", shape_str(1, n, n), ms[i + 1], gbs / ms[i + 1],
         "memcpy D2D", ms[0], gbs / ms[0]});
  }
}

struct GemmCase {
  const char* name;
  gk::DType dtype;
  gk::Precision precision;
  cudaDataType_t type;
  cublasComputeType_t compute;
};

void bench_gemm(const GemmCase& g, std::int64_t n, int reps) {
  const std::size_t e = gk::dtype_size(g.dtype);
  const std::size_t bytes = static_cast<std::size_t>(n * n) * e;
  Buffer a(bytes), b(bytes), c(bytes);
  if (g.dtype == gk::DType::kBF16) {
    fill<__nv_bfloat16>(a.ptr, n * n);
    fill<__nv_bfloat16>(b.ptr, n * n);
  } else {
    fill_bytes(a.ptr, bytes, e);
    fill_bytes(b.ptr, bytes, e);
  }
  gc::Context ctx{.stream = g_stream, .cublas = g_cublas};
  const gk::MatmulShape shape{.m = n, .n = n, .k = n, .dtype = g.dtype, .precision = g.precision};
  auto ours = [&] { check_ok(gc::matmul(ctx, a.ptr, b.ptr, c.ptr, shape), "matmul"); };
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const bool dbl = g.compute == CUBLAS_COMPUTE_64F;
  auto direct = [&] {
    CHECK_LIBRARY(cublasGemmEx(g_cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                               static_cast<int>(n), static_cast<int>(n),
                               dbl ? static_cast<const void*>(&one_d) : &one_f, b.ptr, g.type,
                               static_cast<int>(n), a.ptr, g.type, static_cast<int>(n),
                               dbl ? static_cast<const void*>(&zero_d) : &zero_f, c.ptr, g.type,
                               static_cast<int>(n), g.compute, CUBLAS_GEMM_DEFAULT));
  };
  const std::vector<double> ms = time_interleaved({ours, direct}, 2, reps);
  const double tflop = 2.0 * static_cast<double>(n) * n * n / 1e9;  // TFLOP/s with ms
  add({"matmul", "ours/cublas", g.name, shape_str(1, n, n) + "x" + std::to_string(n), ms[0],
       tflop / ms[0], "cublasGemmEx", ms[1], tflop / ms[1]});
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv;
  if (argc > 1) {
    csv = argv[1];
  } else if (const char* out = std::getenv("OUT"); out != nullptr && *out != '\0') {
    csv = std::string(out) + "/bench_transpose_matmul.csv";
  }
  int dev = 0;
  CHECK_CUDA(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, dev));
  int driver = 0, runtime = 0, cublas_version = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  const gcompute::bench::BenchDevice device(
      gc::ResourcesOptions{.priority_stream = false, .cusolver = false});
  g_device = &device;
  g_stream = device.context().stream.value();
  g_cublas = device.context().cublas;
  CHECK_LIBRARY(cublasGetVersion(g_cublas, &cublas_version));
  std::printf("device: %s, %d SMs, L2 %d MB, %.0f GB memory; driver %d, runtime %d, cuBLAS %d\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20,
              static_cast<double>(prop.totalGlobalMem) / 1e9, driver, runtime, cublas_version);
  std::printf(
      "rates: GB/s (bytes read + written) for transpose, TFLOP/s for matmul; ratio = "
      "ours rate / baseline rate\n");

  // Transpose: the two headline f32 sizes, the other element sizes, ragged and batched shapes.
  bench_transpose(1, 8192, 8192, 4, 20);
  bench_transpose(1, 16384, 16384, 4, 10);
  bench_transpose(1, 16384, 16384, 2, 10);
  bench_transpose(1, 8192, 8192, 8, 10);
  bench_transpose(1, 16384, 16384, 1, 10);
  bench_transpose(1, 8190, 8194, 4, 10);  // multiples of 2 only: 8-byte accesses
  bench_transpose(1, 8191, 8193, 4, 10);  // odd: 4-byte accesses
  bench_transpose(1, 8191, 8193, 2, 10);  // odd 2-byte: padded fallback
  bench_transpose(64, 1024, 1024, 4, 10);
  bench_variants(8192, 10);
  bench_variants(16384, 6);

  // Matmul: ours against the same cuBLAS call made directly.
  const GemmCase cases[] = {
      {"f32", gk::DType::kF32, gk::Precision::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F},
      {"tf32", gk::DType::kF32, gk::Precision::kTF32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
      {"bf16", gk::DType::kBF16, gk::Precision::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
      {"f16", gk::DType::kF16, gk::Precision::kF16, CUDA_R_16F, CUBLAS_COMPUTE_32F},
      {"f64", gk::DType::kF64, gk::Precision::kF64, CUDA_R_64F, CUBLAS_COMPUTE_64F},
  };
  for (std::int64_t n : {4096, 8192}) {
    for (const GemmCase& g : cases) bench_gemm(g, n, n == 4096 ? 15 : 7);
  }

  // Table last, then CSV.
  std::printf("\n%-9s | %-22s | %-5s | %-17s | %10s | %-12s | %10s | %6s\n", "section", "case",
              "dtype", "shape", "ours", "baseline", "baseline", "ratio");
  for (const Row& r : g_rows) {
    std::printf("%-9s | %-22s | %-5s | %-17s | %10.1f | %-12s | %10.1f | %6.3f\n",
                r.section.c_str(), r.name.c_str(), r.dtype.c_str(), r.shape.c_str(), r.ours_rate,
                r.baseline.c_str(), r.base_rate, r.ratio());
  }
  if (!csv.empty()) {
    gcompute::bench::CsvFile out(csv,
                                 "device,section,case,dtype,shape,ours_ms,ours_rate,baseline,"
                                 "baseline_ms,baseline_rate,ratio\n");
    if (!out.is_open()) {
      std::fprintf(stderr, "cannot write %s\n", csv.c_str());
      return 1;
    }
    for (const Row& r : g_rows) {
      out.line("\"%s\",%s,%s,%s,%s,%.5f,%.3f,%s,%.5f,%.3f,%.5f\n", prop.name, r.section.c_str(),
               r.name.c_str(), r.dtype.c_str(), r.shape.c_str(), r.ours_ms, r.ours_rate,
               r.baseline.c_str(), r.base_ms, r.base_rate, r.ratio());
    }
    std::printf("csv: %s\n", csv.c_str());
  }
  return 0;
}
