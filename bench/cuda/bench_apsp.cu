// SPDX-License-Identifier: Apache-2.0
// cuda::apsp (blocked Floyd-Warshall) against the naive baseline measured in the same run: one
// launch per k, one thread per element, global memory only (the seed thesis's kernel, fixed).
// Inputs are dense random integer weights 1..1000 (exact in f32, so the blocked result must
// equal the naive one bit for bit; checked at the naive size). Times are CUDA-event medians
// around the whole apsp() call after a warm-up. Like the server's lanes, the context carries a
// higher-priority second stream (look-ahead of the next round's pivot work); distance-only rows
// are also measured on one stream, for the gain. Next hops are measured both ways: from the
// distances (the default for these weights) and by the fused kernel; each result is checked on
// the device (every next hop starts a shortest path). Prints a table; writes CSV to
// $OUT/apsp_bench.csv (or argv[1]).
//
// usage: bench_apsp [csv_path] [sizes, e.g. 4096,8192,16384] [naive_n]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "bench_device.hpp"
#include "bench_kernels.cuh"
#include "exit_on_error.hpp"
#include "gcompute/kernels/cuda/apsp.hpp"
#include "gcompute/kernels/cuda/tuning.hpp"

namespace {

using gcompute::kernels::ApspShape;
using gcompute::kernels::DType;
namespace gk = gcompute::kernels::cuda;
using gcompute::bench::count_diff;
using gcompute::bench::hash3;

template <class T>
__global__ void gen_kernel(T* w, long long n, unsigned seed) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n * n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    // Zero diagonal: apsp reports D[i][i] = min(0, ...) and the naive kernel keeps W[i][i].
    const bool diag = e % (n + 1) == 0;
    w[e] = diag ? T(0) : static_cast<T>(1 + hash3(static_cast<unsigned long long>(e), seed) % 1000);
  }
}

/// The naive baseline: relax every (i, j) through one k per launch.
__global__ void naive_fw_step(float* d, int n, int k) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < n && j < n) {
    const long long ij = static_cast<long long>(i) * n + j;
    d[ij] =
        fminf(d[ij], d[static_cast<long long>(i) * n + k] + d[static_cast<long long>(k) * n + j]);
  }
}

/// Counts next hops that do not start a shortest path: N[i][j] = k must be an edge with
/// W[i][k] + D[k][j] == D[i][j] and D[k][j] < D[i][j] (weights >= 1, sums exact), so chains
/// descend to j; N[i][i] = i; -1 exactly where D is +inf / kI32NoEdge.
template <class T>
__global__ void count_bad_next_hops(const T* w, const T* d, const int* nx, long long n, T none,
                                    unsigned long long* bad) {
  unsigned long long local = 0;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n * n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = e / n, j = e - i * n;
    const int k = nx[e];
    if (i == j) {
      local += k != i;
    } else if (d[e] == none) {
      local += k != -1;
    } else if (k < 0 || k >= n || k == i || w[i * n + k] == none) {
      ++local;
    } else {
      const T dk = d[k * n + j];
      local += !(dk != none && w[i * n + k] + dk == d[e] && dk < d[e]);
    }
  }
  if (local) atomicAdd(bad, local);
}

struct Row {
  long long n;
  std::string dtype;
  std::string next;  ///< "no", "pass" (from the distances) or "fused"
  int streams;
  double ms;
  double trel;  // 1e12 relaxations per second
  double ratio;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string csv = gcompute::bench::csv_path_arg(argc, argv, "apsp_bench.csv");
  const std::vector<long long> sizes =
      gcompute::bench::sizes_arg<long long>(argc, argv, {4096, 8192, 16384});
  const long long naive_n = argc > 3 ? std::atoll(argv[3]) : 4096;

  const cudaDeviceProp prop = gcompute::bench::device_properties();
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  // A lane's resources: non-blocking streams, the second at the greatest priority.
  const gcompute::bench::BenchDevice device(
      gk::ResourcesOptions{.cublas = false, .cusolver = false});
  const gk::Context ctx = device.context();
  const cudaStream_t stream = ctx.stream.value();
  const gcompute::kernels::ApspTuning tuning = gk::tuning_from_environment().apsp;
  const gk::Event ev0 = gcompute::bench::timing_event(), ev1 = gcompute::bench::timing_event();

  long long max_n = naive_n;
  for (long long n : sizes) max_n = std::max(max_n, n);
  const size_t max_count = static_cast<size_t>(max_n) * max_n;
  gk::DeviceBuffer dw = device.buffer(max_count * 4), dd = device.buffer(max_count * 4);
  gk::DeviceArray<int> dnx = device.array<int>(max_count);
  void* w = dw.data();
  void* d = dd.data();
  int* nx = dnx.data();

  auto gen = [&](long long n, DType dt, unsigned seed) {
    if (dt == DType::kF32) {
      gen_kernel<float><<<132 * 8, 256, 0, stream>>>(static_cast<float*>(w), n, seed);
    } else {
      gen_kernel<int><<<132 * 8, 256, 0, stream>>>(static_cast<int*>(w), n, seed);
    }
    CHECK_CUDA(cudaGetLastError());
  };

  // Naive baseline, f32, at naive_n; its result is kept to check the blocked kernel against.
  double naive_ms = 0;
  {
    const long long n = naive_n;
    gen(n, DType::kF32, 7);
    CHECK_CUDA(cudaMemcpyAsync(d, w, n * n * 4, cudaMemcpyDeviceToDevice, stream));
    const dim3 block(32, 8), grid((n + 31) / 32, (n + 7) / 8);
    for (int k = 0; k < 16; ++k)
      naive_fw_step<<<grid, block, 0, stream>>>(static_cast<float*>(d), n, k);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(d, w, n * n * 4, cudaMemcpyDeviceToDevice, stream));
    CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
    for (int k = 0; k < n; ++k)
      naive_fw_step<<<grid, block, 0, stream>>>(static_cast<float*>(d), n, k);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
    CHECK_CUDA(cudaEventSynchronize(ev1.value()));
    naive_ms = gcompute::bench::check_ok(gk::elapsed_ms(ev0, ev1), "cudaEventElapsedTime");
    // Blocked result on the same input must match exactly (integer weights, exact sums).
    float* blocked = static_cast<float*>(static_cast<void*>(nx));  // reuse as scratch output
    ApspShape shape{n, DType::kF32, false};
    const size_t wsb = gk::apsp_workspace_bytes(shape);
    gk::DeviceBuffer dws = device.buffer(std::max<size_t>(wsb, 1));
    void* ws = dws.data();
    auto r = gk::apsp(ctx, w, blocked, nullptr, shape, ws, wsb, {}, tuning);
    if (!r.ok()) {
      std::fprintf(stderr, "apsp failed: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    gk::DeviceArray<unsigned long long> ddiff = device.array<unsigned long long>(1);
    unsigned long long* diff = ddiff.data();
    CHECK_CUDA(cudaMemsetAsync(diff, 0, 8, stream));
    count_diff<<<132 * 8, 256, 0, stream>>>(static_cast<float*>(d), blocked, n * n, diff);
    CHECK_CUDA(cudaGetLastError());
    unsigned long long h = 0;
    CHECK_CUDA(cudaMemcpyAsync(&h, diff, 8, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::printf("naive n=%lld: %.1f ms, %.3f T relax/s; blocked vs naive: %llu of %lld differ\n", n,
                naive_ms, static_cast<double>(n) * n * n / (naive_ms * 1e-3) / 1e12, h, n * n);
    if (h != 0) {
      std::fprintf(stderr, "MISMATCH between blocked and naive Floyd-Warshall\n");
      return 1;
    }
  }
  const double naive_trel =
      static_cast<double>(naive_n) * naive_n * naive_n / (naive_ms * 1e-3) / 1e12;

  std::vector<Row> rows;
  struct Mode {
    const char* next;
    int streams;
  };
  gk::DeviceArray<unsigned long long> dbad = device.array<unsigned long long>(1);
  for (long long n : sizes) {
    for (DType dt : {DType::kF32, DType::kI32}) {
      for (Mode mode : {Mode{"no", 2}, Mode{"no", 1}, Mode{"pass", 2}, Mode{"fused", 2}}) {
        const std::string method = mode.next;
        const bool next = method != "no";
        gcompute::kernels::ApspTuning run_tuning = tuning;
        run_tuning.next_hop_from_distances = method == "pass";
        gk::Context run_ctx = ctx;
        if (mode.streams == 1) run_ctx.priority_stream = gk::StreamView();
        ApspShape shape{n, dt, next};
        const size_t wsb = gk::apsp_workspace_bytes(shape);
        gk::DeviceBuffer dws = device.buffer(std::max<size_t>(wsb, 1));
        void* ws = dws.data();
        gen(n, dt, 11);
        const int reps = n >= 16384 ? 2 : 3;
        std::vector<float> times;
        for (int rep = -1; rep < reps; ++rep) {
          CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
          auto r = gk::apsp(run_ctx, w, d, next ? nx : nullptr, shape, ws, wsb, {}, run_tuning);
          CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
          CHECK_CUDA(cudaEventSynchronize(ev1.value()));
          if (!r.ok() || r->negative_cycle) {
            std::fprintf(stderr, "apsp failed at n=%lld\n", n);
            return 1;
          }
          if (next && r->next_hop_from_distances != (method == "pass")) {
            std::fprintf(stderr, "n=%lld %s: next hops came from the %s path\n", n, method.c_str(),
                         r->next_hop_from_distances ? "pass" : "fused");
            return 1;
          }
          const float ms =
              gcompute::bench::check_ok(gk::elapsed_ms(ev0, ev1), "cudaEventElapsedTime");
          if (rep >= 0) times.push_back(ms);
        }
        if (next) {  // the last run's next hops, checked on the device
          CHECK_CUDA(cudaMemsetAsync(dbad.data(), 0, 8, stream));
          if (dt == DType::kF32) {
            count_bad_next_hops<float>
                <<<132 * 8, 256, 0, stream>>>(static_cast<float*>(w), static_cast<float*>(d), nx, n,
                                              std::numeric_limits<float>::infinity(), dbad.data());
          } else {
            count_bad_next_hops<int>
                <<<132 * 8, 256, 0, stream>>>(static_cast<int*>(w), static_cast<int*>(d), nx, n,
                                              gcompute::kernels::kI32NoEdge, dbad.data());
          }
          CHECK_CUDA(cudaGetLastError());
          unsigned long long bad = 0;
          CHECK_CUDA(cudaMemcpyAsync(&bad, dbad.data(), 8, cudaMemcpyDeviceToHost, stream));
          CHECK_CUDA(cudaStreamSynchronize(stream));
          if (bad != 0) {
            std::fprintf(stderr, "n=%lld %s: %llu next hops do not start a shortest path\n", n,
                         method.c_str(), bad);
            return 1;
          }
        }
        std::sort(times.begin(), times.end());
        const double ms = times[times.size() / 2];
        const double trel = static_cast<double>(n) * n * n / (ms * 1e-3) / 1e12;
        rows.push_back({n, dt == DType::kF32 ? "f32" : "i32", method, mode.streams, ms, trel,
                        trel / naive_trel});
        std::printf("  n=%lld %s next=%s streams=%d: %.2f ms (%.2f T relax/s)\n", n,
                    rows.back().dtype.c_str(), method.c_str(), mode.streams, ms, trel);
        std::fflush(stdout);
      }
    }
  }

  {
    gcompute::bench::CsvFile out(
        csv,
        "device,n,dtype,next_hop,next_hop_method,streams,ms,t_relax_per_s,ratio_to_naive,naive_n,"
        "naive_ms\n");
    for (const Row& r : rows) {
      out.line("%s,%lld,%s,%d,%s,%d,%.3f,%.3f,%.2f,%lld,%.3f\n", prop.name, r.n, r.dtype.c_str(),
               r.next != "no" ? 1 : 0, r.next.c_str(), r.streams, r.ms, r.trel, r.ratio, naive_n,
               naive_ms);
    }
  }
  std::printf(
      "\n%s; naive (one launch per k, global memory) f32 n=%lld: %.1f ms = %.3f T relax/s\n",
      prop.name, naive_n, naive_ms, naive_trel);
  std::printf("%7s %5s %9s %8s %11s %13s %14s\n", "n", "dtype", "next-hop", "streams", "ms",
              "T relax/s", "x naive");
  for (const Row& r : rows) {
    std::printf("%7lld %5s %9s %8d %11.2f %13.2f %14.1f\n", r.n, r.dtype.c_str(), r.next.c_str(),
                r.streams, r.ms, r.trel, r.ratio);
  }
  std::printf("csv: %s\n", csv.c_str());
  return 0;
}
