// SPDX-License-Identifier: Apache-2.0
// cuda::sssp (frontier Bellman-Ford) against cpu::sssp (Dijkstra with a binary heap, one
// thread) on the same graph, measured in the same run.
//
// Graph: n vertices, out-degree 10 (m = 10 n), generated on the GPU from a hash: each edge
// goes to a uniform random vertex with an integer weight in 1..1000, so f32 sums are exact and
// the two kernels' distances must agree bit for bit. Source 0.
// GPU: CUDA events around the whole call (validation, rounds with one read-back each, the
// parent-cycle searches, the final unpacking), median of 3 after a warm-up. CPU: one run on a
// host copy, wall clock.
//
// usage: bench_sssp [csv_path] [vertex counts, e.g. 1000000,10000000]
// CSV goes to argv[1], else $OUT/sssp.csv.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "bench_device.hpp"
#include "exit_on_error.hpp"
#include "gcompute/kernels/cpu/sssp.hpp"
#include "gcompute/kernels/cuda/sssp.hpp"

namespace {

namespace kc = gcompute::kernels::cuda;
using gcompute::bench::check_ok;

constexpr int kDegree = 10;
constexpr int kReps = 3;

__device__ __forceinline__ unsigned long long mix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void generate_kernel(std::uint64_t* off, std::uint32_t* cols, float* w, long long n,
                                unsigned long long seed) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long m = n * kDegree;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i <= m;
       i += stride) {
    if (i % kDegree == 0) off[i / kDegree] = static_cast<std::uint64_t>(i);
    if (i == m) continue;
    const unsigned long long h = mix(seed ^ static_cast<unsigned long long>(i));
    cols[i] = static_cast<std::uint32_t>((h >> 20) % static_cast<unsigned long long>(n));
    w[i] = static_cast<float>(1 + (h & 0xFFFFF) % 1000);
  }
}

struct Row {
  long long n, m;
  double gpu_ms, cpu_ms;
  long long rounds, relaxations, reachable, mismatches;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string csv = gcompute::bench::csv_path_arg(argc, argv, "sssp.csv");
  const std::vector<long long> sizes =
      gcompute::bench::sizes_arg<long long>(argc, argv, {1000000, 10000000});
  const cudaDeviceProp prop = gcompute::bench::device_properties();
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  gcompute::bench::BenchDevice device(kc::ResourcesOptions{
      .non_blocking = false, .priority_stream = false, .cublas = false, .cusolver = false});
  const kc::Context ctx = device.context();
  const cudaStream_t stream = ctx.stream.value();

  std::vector<Row> rows;
  bool ok = true;
  for (const long long n : sizes) {
    const long long m = n * kDegree;
    std::printf("\n== n = %lld, m = %lld ==\n", n, m);
    auto off = device.array<std::uint64_t>(static_cast<std::size_t>(n + 1));
    auto cols = device.array<std::uint32_t>(static_cast<std::size_t>(m));
    auto w = device.array<float>(static_cast<std::size_t>(m));
    auto dist = device.array<float>(static_cast<std::size_t>(n));
    auto parent = device.array<std::int32_t>(static_cast<std::size_t>(n));
    const std::size_t ws_bytes = kc::sssp_workspace_bytes(n, m);
    auto ws = device.buffer(ws_bytes);
    generate_kernel<<<1 << 16, 256, 0, stream>>>(
        off.data(), cols.data(), w.data(), n, 0x5EED0000ull + static_cast<unsigned long long>(n));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(stream));

    const gcompute::kernels::CsrView graph{n, m, off.data(), cols.data(), w.data()};
    gcompute::kernels::SsspInfo info;
    const double gpu_ms = gcompute::bench::median_ms(stream, kReps, [&] {
      info = check_ok(kc::sssp(ctx, graph, 0, dist.data(), parent.data(), ws.data(), ws_bytes),
                      "cuda::sssp");
    });
    std::printf("GPU: %.2f ms (median of %d), %lld rounds, %lld relaxations, %.2f G edges/s\n",
                gpu_ms, kReps, static_cast<long long>(info.rounds),
                static_cast<long long>(info.relaxations), static_cast<double>(m) / gpu_ms * 1e-6);

    std::vector<std::uint64_t> h_off(static_cast<std::size_t>(n + 1));
    std::vector<std::uint32_t> h_cols(static_cast<std::size_t>(m));
    std::vector<float> h_w(static_cast<std::size_t>(m)), h_gpu(static_cast<std::size_t>(n)),
        h_cpu(static_cast<std::size_t>(n));
    std::vector<std::int32_t> h_parent(static_cast<std::size_t>(n));
    CHECK_CUDA(cudaMemcpy(h_off.data(), off.data(), h_off.size() * 8, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_cols.data(), cols.data(), h_cols.size() * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_w.data(), w.data(), h_w.size() * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h_gpu.data(), dist.data(), h_gpu.size() * 4, cudaMemcpyDeviceToHost));
    const gcompute::kernels::CsrView host_graph{n, m, h_off.data(), h_cols.data(), h_w.data()};
    const auto t0 = std::chrono::steady_clock::now();
    const gcompute::kernels::SsspInfo cpu_info = check_ok(
        gcompute::kernels::cpu::sssp(host_graph, 0, h_cpu.data(), h_parent.data()), "cpu::sssp");
    const double cpu_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    long long mismatches = 0, reachable = 0;
    for (long long v = 0; v < n; ++v) {
      if (h_gpu[v] != h_cpu[v]) ++mismatches;
      if (h_cpu[v] != INFINITY) ++reachable;
    }
    std::printf(
        "CPU Dijkstra: %.1f ms, %lld relaxations; reachable %lld; distance mismatches %lld\n",
        cpu_ms, static_cast<long long>(cpu_info.relaxations), reachable, mismatches);
    if (mismatches != 0 || info.negative_cycle) ok = false;
    rows.push_back({n, m, gpu_ms, cpu_ms, info.rounds, info.relaxations, reachable, mismatches});
  }

  gcompute::bench::CsvFile out(
      csv,
      "device,n,m,gpu_ms,gpu_gteps,rounds,relaxations,cpu_dijkstra_ms,speedup,reachable,"
      "mismatches\n");
  std::printf("\n%s: SSSP, out-degree %d, weights 1..1000, source 0\n", prop.name, kDegree);
  std::printf("%10s %11s %10s %9s %7s %12s %12s %8s %9s\n", "n", "m", "GPU ms", "GTEPS", "rounds",
              "relaxations", "CPU ms", "CPU/GPU", "mismatch");
  for (const Row& r : rows) {
    const double gteps = static_cast<double>(r.m) / r.gpu_ms * 1e-6;
    std::printf("%10lld %11lld %10.2f %9.2f %7lld %12lld %12.1f %8.1f %9lld\n", r.n, r.m, r.gpu_ms,
                gteps, r.rounds, r.relaxations, r.cpu_ms, r.cpu_ms / r.gpu_ms, r.mismatches);
    out.line("%s,%lld,%lld,%.3f,%.3f,%lld,%lld,%.1f,%.2f,%lld,%lld\n", prop.name, r.n, r.m,
             r.gpu_ms, gteps, r.rounds, r.relaxations, r.cpu_ms, r.cpu_ms / r.gpu_ms, r.reachable,
             r.mismatches);
  }
  std::printf("csv: %s%s\n%s\n", csv.c_str(), out.is_open() ? "" : " (could not be opened)",
              ok ? "CHECKS PASSED" : "CHECKS FAILED");
  return ok ? 0 : 1;
}
