// SPDX-License-Identifier: Apache-2.0
// cuda::apsp_add_edges (a batch of edge insertions into an APSP result) against the full
// recomputation it replaces (cuda::apsp of the new graph), both measured in this run on the
// same dense random graph (integer weights 1..1000, exact in f32). For each batch size the new
// edges are random pairs with random weights; the update's distances must equal the full
// recomputation's bit for bit (checked on the device). Times are CUDA-event medians after a
// warm-up; the update is timed from the same cached result each time (the cache keeps it, the
// update writes a new one), including its copy of the old matrices. Prints a table; writes CSV
// to $OUT/apsp_update_bench.csv (or argv[1]).
//
// usage: bench_apsp_update [csv_path] [sizes, e.g. 4096,8192] [batches, e.g. 1,10,100,1000]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
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
using gcompute::kernels::ApspUpdateShape;
using gcompute::kernels::DType;
using gcompute::kernels::GraphEdge;
namespace gk = gcompute::kernels::cuda;
using gcompute::bench::count_diff;
using gcompute::bench::hash3;

/// Sparse-ish random graph: each pair an edge with probability 1/16, weights 1..1000; then the
/// batch's edges lowered in (`edges`, for the full recomputation's input).
__global__ void gen_kernel(float* w, long long n, unsigned seed) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < n * n;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const unsigned h = hash3(static_cast<unsigned long long>(e), seed);
    w[e] = (h & 15) == 0 ? static_cast<float>(1 + (h >> 4) % 1000) : __int_as_float(0x7f800000);
  }
}

__global__ void lower_kernel(float* w, long long n, const GraphEdge* edges, int count) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int e = 0; e < count; ++e) {
    float& x = w[edges[e].src * n + edges[e].dst];
    x = fminf(x, edges[e].weight);
  }
}

struct Row {
  long long n;
  int edges;
  bool next;
  double full_ms;
  double update_ms;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string csv = gcompute::bench::csv_path_arg(argc, argv, "apsp_update_bench.csv");
  const std::vector<long long> sizes =
      gcompute::bench::sizes_arg<long long>(argc, argv, {4096, 8192});
  std::vector<int> batches = {1, 10, 100, 1000};
  if (argc > 3) {
    batches.clear();
    for (const char* p = argv[3]; *p != '\0';) {
      batches.push_back(std::atoi(p));
      while (*p != '\0' && *p != ',') ++p;
      if (*p == ',') ++p;
    }
  }

  const cudaDeviceProp prop = gcompute::bench::device_properties();
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const gcompute::bench::BenchDevice device(
      gk::ResourcesOptions{.cublas = false, .cusolver = false});
  const gk::Context ctx = device.context();
  const cudaStream_t stream = ctx.stream.value();
  const gcompute::kernels::ApspTuning tuning = gk::tuning_from_environment().apsp;
  const gk::Event ev0 = gcompute::bench::timing_event(), ev1 = gcompute::bench::timing_event();
  auto elapsed = [&] {
    CHECK_CUDA(cudaEventSynchronize(ev1.value()));
    return static_cast<double>(
        gcompute::bench::check_ok(gk::elapsed_ms(ev0, ev1), "cudaEventElapsedTime"));
  };

  long long max_n = 0;
  for (long long n : sizes) max_n = std::max(max_n, n);
  const size_t max_count = static_cast<size_t>(max_n) * max_n;
  gk::DeviceBuffer dw = device.buffer(max_count * 4), dbase = device.buffer(max_count * 4),
                   dnew = device.buffer(max_count * 4), dfull = device.buffer(max_count * 4);
  gk::DeviceArray<int> nx_base = device.array<int>(max_count),
                       nx_new = device.array<int>(max_count);
  gk::DeviceArray<unsigned long long> ddiff = device.array<unsigned long long>(1);
  float* w = static_cast<float*>(dw.data());
  float* base = static_cast<float*>(dbase.data());
  float* upd = static_cast<float*>(dnew.data());
  float* full = static_cast<float*>(dfull.data());
  std::mt19937_64 rng(20261126);

  std::vector<Row> rows;
  for (long long n : sizes) {
    for (bool next : {false, true}) {
      // The cached result: APSP of the graph before the batch.
      gen_kernel<<<132 * 8, 256, 0, stream>>>(w, n, 5);
      CHECK_CUDA(cudaGetLastError());
      const ApspShape shape{n, DType::kF32, next};
      const size_t wsb = gk::apsp_workspace_bytes(shape);
      gk::DeviceBuffer dws = device.buffer(std::max<size_t>(wsb, 1));
      auto r = gk::apsp(ctx, w, base, next ? nx_base.data() : nullptr, shape, dws.data(), wsb, {},
                        tuning);
      if (!r.ok() || r->negative_cycle) {
        std::fprintf(stderr, "apsp failed at n=%lld\n", n);
        return 1;
      }
      for (int count : batches) {
        std::vector<GraphEdge> edges;
        std::uniform_int_distribution<std::uint32_t> v(0, static_cast<std::uint32_t>(n - 1));
        std::uniform_int_distribution<int> weight(1, 1000);
        for (int e = 0; e < count; ++e) {
          edges.push_back(GraphEdge{v(rng), v(rng), static_cast<float>(weight(rng))});
        }
        const ApspUpdateShape ushape{n, n, next};
        const size_t uwsb = gk::apsp_add_edges_workspace_bytes(ushape, edges);
        gk::DeviceBuffer duws = device.buffer(std::max<size_t>(uwsb, 1));
        std::vector<double> update_times;
        for (int rep = -1; rep < 5; ++rep) {
          CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
          auto u =
              gk::apsp_add_edges(ctx, base, next ? nx_base.data() : nullptr, upd,
                                 next ? nx_new.data() : nullptr, ushape, edges, duws.data(), uwsb);
          CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
          if (!u.ok() || u->negative_cycle) {
            std::fprintf(stderr, "update failed at n=%lld edges=%d\n", n, count);
            return 1;
          }
          const double ms = elapsed();
          if (rep >= 0) update_times.push_back(ms);
        }
        // The full recomputation of the new graph (its weights: the old ones lowered).
        gk::DeviceArray<GraphEdge> dedges = device.array<GraphEdge>(edges.size());
        CHECK_CUDA(cudaMemcpyAsync(dedges.data(), edges.data(), edges.size() * sizeof(GraphEdge),
                                   cudaMemcpyHostToDevice, stream));
        lower_kernel<<<1, 1, 0, stream>>>(w, n, dedges.data(), count);
        CHECK_CUDA(cudaGetLastError());
        std::vector<double> full_times;
        for (int rep = -1; rep < (next ? 1 : 3); ++rep) {
          CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
          auto f = gk::apsp(ctx, w, full, next ? nx_new.data() : nullptr, shape, dws.data(), wsb,
                            {}, tuning);
          CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
          if (!f.ok() || f->negative_cycle) {
            std::fprintf(stderr, "full apsp failed at n=%lld\n", n);
            return 1;
          }
          const double ms = elapsed();
          if (rep >= 0) full_times.push_back(ms);
        }
        // Distances: the last update's (recomputed: nx_new was reused) against the full ones.
        auto u =
            gk::apsp_add_edges(ctx, base, next ? nx_base.data() : nullptr, upd,
                               next ? nx_new.data() : nullptr, ushape, edges, duws.data(), uwsb);
        if (!u.ok()) return 1;
        unsigned long long* diff = ddiff.data();
        CHECK_CUDA(cudaMemsetAsync(diff, 0, 8, stream));
        count_diff<<<132 * 8, 256, 0, stream>>>(upd, full, n * n, diff);
        CHECK_CUDA(cudaGetLastError());
        unsigned long long h = 0;
        CHECK_CUDA(cudaMemcpyAsync(&h, diff, 8, cudaMemcpyDeviceToHost, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        if (h != 0) {
          std::fprintf(stderr, "MISMATCH: %llu distances differ at n=%lld edges=%d\n", h, n, count);
          return 1;
        }
        // Back to the graph before the batch for the next one.
        gen_kernel<<<132 * 8, 256, 0, stream>>>(w, n, 5);
        CHECK_CUDA(cudaGetLastError());
        std::sort(update_times.begin(), update_times.end());
        std::sort(full_times.begin(), full_times.end());
        rows.push_back({n, count, next, full_times[full_times.size() / 2],
                        update_times[update_times.size() / 2]});
        const Row& row = rows.back();
        std::printf("  n=%lld next=%d edges=%d: update %.3f ms, full %.2f ms (%.2f %%)\n", n, next,
                    count, row.update_ms, row.full_ms, 100 * row.update_ms / row.full_ms);
        std::fflush(stdout);
      }
    }
  }
  {
    gcompute::bench::CsvFile out(csv, "device,n,next_hop,edges,update_ms,full_ms,update_share\n");
    for (const Row& r : rows) {
      out.line("%s,%lld,%d,%d,%.4f,%.3f,%.5f\n", prop.name, r.n, r.next ? 1 : 0, r.edges,
               r.update_ms, r.full_ms, r.update_ms / r.full_ms);
    }
  }
  std::printf("\n%s: batched APSP update vs full recomputation (distances checked equal)\n",
              prop.name);
  std::printf("%7s %9s %7s %11s %10s %9s\n", "n", "next-hop", "edges", "update ms", "full ms",
              "share");
  for (const Row& r : rows) {
    std::printf("%7lld %9s %7d %11.3f %10.2f %8.2f%%\n", r.n, r.next ? "yes" : "no", r.edges,
                r.update_ms, r.full_ms, 100 * r.update_ms / r.full_ms);
  }
  std::printf("csv: %s\n", csv.c_str());
  return 0;
}
