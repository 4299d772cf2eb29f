// SPDX-License-Identifier: Apache-2.0
// cuda::DeviceGraph batch edits, against the CPU twin (cpu::DynamicGraph) measured in the same
// run on the same machine.
//
// 1. Throughput: a device-resident graph of E edges (n = E/16 vertices, power-law-ish out
//    degrees: src = n*u^3, dst uniform) gets batches of B = 1e6 edges: 10% hit existing edges
//    (weight updates), ~5% repeat another element of the batch, the rest are new. Timed with
//    CUDA events around the whole insert_edges call (key build, radix sort, dedupe, overflow
//    count, growth when needed, insert, and the two count read-backs), median over fresh
//    batches; then update_weights and delete_edges of the same batch (which restores the graph).
//    The sort alone (cub::DeviceRadixSort on the same keys) is timed as the floor of the
//    preparation.
// 2. Crossover: on the E = 1e7 graph and an identical CPU twin, batch sizes 1..1e6 from pinned
//    host memory: GPU = wall clock of H2D copy + insert_edges (which ends synchronised); CPU =
//    wall clock of the twin's insert_edges (one thread below 32768 edges, all cores above).
//    Each batch is deleted again (untimed) on both. The two graphs are exported and compared.
//
// usage: bench_graph_edits [csv_path] [graph sizes, e.g. 10000000,100000000] [batch]
// CSV goes to argv[1], else $OUT/graph_edits.csv.
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench_args.hpp"
#include "bench_device.hpp"
#include "exit_on_error.hpp"
#include "gcompute/kernels/cpu/graph_batch.hpp"
#include "gcompute/kernels/cuda/graph_device.hpp"

namespace {

using gcompute::kernels::GraphBatchResult;
using gcompute::kernels::GraphEdge;
using gcompute::kernels::HostCsr;
namespace gk = gcompute::kernels::cuda;
namespace gc = gcompute::kernels::cpu;

template <class T>
T check(absl::StatusOr<T> r, const char* what) {
  if (!r.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, std::string(r.status().message()).c_str());
    std::exit(1);
  }
  return *std::move(r);
}

__host__ __device__ inline unsigned long long splitmix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Edge i of the random graph with this seed.
__host__ __device__ inline GraphEdge gen_edge(unsigned long long i, unsigned long long seed,
                                              std::uint32_t n) {
  const unsigned long long a = splitmix(i * 0x2545F4914F6CDD1Dull ^ seed);
  const unsigned long long b = splitmix(a);
  const double u = static_cast<double>(a >> 11) * (1.0 / 9007199254740992.0);
  const double s = static_cast<double>(n) * u * u * u;
  GraphEdge e;
  e.src = s >= n - 1 ? n - 1 : static_cast<std::uint32_t>(s);
  e.dst = static_cast<std::uint32_t>((b >> 32) % n);
  e.weight = static_cast<float>(b & 0xFFFFF) * (1.0f / 1024.0f);
  return e;
}

/// Element j of a batch: 10% an existing graph edge (new weight), 5% a copy of another
/// element's fresh edge (an in-batch duplicate when that element is fresh), else fresh.
__host__ __device__ inline GraphEdge batch_edge(unsigned long long j, unsigned long long count,
                                                unsigned long long seed,
                                                unsigned long long graph_seed,
                                                unsigned long long graph_edges, std::uint32_t n) {
  const unsigned long long h = splitmix(j ^ (seed * 0x9E3779B97F4A7C15ull));
  const unsigned r = static_cast<unsigned>(h % 100);
  GraphEdge e;
  if (r < 10 && graph_edges > 0) {
    e = gen_edge((h >> 8) % graph_edges, graph_seed, n);
  } else if (r < 15) {
    e = gen_edge((h >> 8) % count, seed, n);
  } else {
    e = gen_edge(j, seed, n);
  }
  e.weight = static_cast<float>((h >> 40) & 0xFFFF) * (1.0f / 256.0f);
  return e;
}

__global__ void gen_graph_kernel(GraphEdge* out, unsigned long long count, unsigned long long seed,
                                 std::uint32_t n) {
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
    out[i] = gen_edge(i, seed, n);
}

__global__ void gen_batch_kernel(GraphEdge* out, unsigned long long count, unsigned long long seed,
                                 unsigned long long graph_seed, unsigned long long graph_edges,
                                 std::uint32_t n) {
  for (unsigned long long j =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       j < count; j += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
    out[j] = batch_edge(j, count, seed, graph_seed, graph_edges, n);
}

__global__ void sort_keys_kernel(const GraphEdge* e, unsigned long long count, int dbits,
                                 unsigned long long* keys, std::uint32_t* idx) {
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    keys[i] = (static_cast<unsigned long long>(e[i].src) << dbits) | e[i].dst;
    idx[i] = static_cast<std::uint32_t>(i);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Row {
  std::string kind;  // throughput | crossover | build | sort_floor
  unsigned long long graph_edges;
  unsigned long long batch;
  std::string op;       // insert | update | delete | sort
  std::string backend;  // gpu | gpu+h2d | cpu
  double ms;
  double edges_per_s;
  int reps;
};

const int kGridBlocks = 132 * 8;

}  // namespace

int main(int argc, char** argv) {
  const std::string csv = gcompute::bench::csv_path_arg(argc, argv, "graph_edits.csv");
  const std::vector<unsigned long long> sizes =
      gcompute::bench::sizes_arg<unsigned long long>(argc, argv, {10000000ull, 100000000ull});
  const unsigned long long batch = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000000ull;
  const unsigned long long graph_seed = 0x5EEDull;

  const cudaDeviceProp prop = gcompute::bench::device_properties();
  std::printf("device: %s, %d SMs; host: %u hardware threads\n", prop.name,
              prop.multiProcessorCount, std::thread::hardware_concurrency());
  // One blocking stream and the device's pool, as the graph mirror's device has.
  const gcompute::bench::BenchDevice device(gk::ResourcesOptions{
      .non_blocking = false, .priority_stream = false, .cublas = false, .cusolver = false});
  const gk::Context ctx = device.context();
  const cudaStream_t stream = ctx.stream.value();
  const gk::Event ev0 = gcompute::bench::timing_event(), ev1 = gcompute::bench::timing_event();
  auto event_ms = [&] {
    CHECK_CUDA(cudaEventSynchronize(ev1.value()));
    return static_cast<double>(
        gcompute::bench::check_ok(gk::elapsed_ms(ev0, ev1), "cudaEventElapsedTime"));
  };
  std::vector<Row> rows;
  bool ok = true;
  double crossover = -1;

  for (unsigned long long E : sizes) {
    const std::uint32_t n = static_cast<std::uint32_t>(std::max<unsigned long long>(E / 16, 2));
    std::printf("\n== graph: %llu generated edges, %u vertices ==\n", E, n);
    std::fflush(stdout);
    gk::DeviceArray<GraphEdge> graph_edges = device.array<GraphEdge>(std::max(E, batch));
    GraphEdge* dedges = graph_edges.data();
    gen_graph_kernel<<<kGridBlocks, 256, 0, stream>>>(dedges, E, graph_seed, n);
    CHECK_CUDA(cudaGetLastError());
    gk::DeviceGraph g = check(gk::DeviceGraph::create(ctx, device.memory(), n), "create");
    CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
    GraphBatchResult br = check(g.insert_edges(ctx, dedges, E), "build");
    CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
    const double build_ms = event_ms();
    std::printf(
        "build: %.1f ms (%.3f G edges/s), %llu distinct edges, %llu in-batch duplicates, "
        "pool %.2f GiB (%.2f slots/edge)\n",
        build_ms, E / (build_ms * 1e6), static_cast<unsigned long long>(br.inserted),
        static_cast<unsigned long long>(br.superseded), g.pool_capacity() * 8.0 / (1ull << 30),
        static_cast<double>(g.pool_used()) / std::max<unsigned long long>(1, g.num_edges()));
    rows.push_back({"build", E, E, "insert", "gpu", build_ms, E / (build_ms * 1e-3), 1});
    graph_edges.reset();

    // --- throughput with the batch already on the device ---
    gk::DeviceArray<GraphEdge> batch_edges = device.array<GraphEdge>(batch);
    GraphEdge* dbatch = batch_edges.data();
    if (absl::Status s = g.reserve_batch(ctx, batch); !s.ok()) return 1;
    const int reps = E >= 50000000ull ? 5 : 7;
    std::vector<double> t_ins, t_upd, t_del;
    std::uint64_t grown = 0;
    int rebuilds = 0;
    for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up
      gen_batch_kernel<<<kGridBlocks, 256, 0, stream>>>(dbatch, batch, 1000 + rep, graph_seed, E,
                                                        n);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
      GraphBatchResult r = check(g.insert_edges(ctx, dbatch, batch), "insert");
      CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
      const double ti = event_ms();
      CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
      check(g.update_weights(ctx, dbatch, batch), "update");
      CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
      const double tu = event_ms();
      CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
      check(g.delete_edges(ctx, dbatch, batch), "delete");
      CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
      const double td = event_ms();
      if (rep < 0) continue;
      t_ins.push_back(ti);
      t_upd.push_back(tu);
      t_del.push_back(td);
      grown += r.grown_vertices;
      rebuilds += r.rebuilt;
      std::printf(
          "  rep %d: insert %.3f ms (ins %llu upd %llu sup %llu, grown %llu%s), update "
          "%.3f ms, delete %.3f ms\n",
          rep, ti, static_cast<unsigned long long>(r.inserted),
          static_cast<unsigned long long>(r.updated), static_cast<unsigned long long>(r.superseded),
          static_cast<unsigned long long>(r.grown_vertices), r.rebuilt ? ", REBUILT" : "", tu, td);
    }
    const double mi = median(t_ins), mu = median(t_upd), md = median(t_del);
    rows.push_back({"throughput", E, batch, "insert", "gpu", mi, batch / (mi * 1e-3), reps});
    rows.push_back({"throughput", E, batch, "update", "gpu", mu, batch / (mu * 1e-3), reps});
    rows.push_back({"throughput", E, batch, "delete", "gpu", md, batch / (md * 1e-3), reps});
    std::printf(
        "median over %d fresh batches of %llu: insert %.3f ms = %.3f G edges/s; update "
        "%.3f ms = %.3f G/s; delete %.3f ms = %.3f G/s (grown tables %llu, rebuilds %d)\n",
        reps, batch, mi, batch / (mi * 1e6), mu, batch / (mu * 1e6), md, batch / (md * 1e6),
        static_cast<unsigned long long>(grown), rebuilds);

    // --- the radix sort alone, on the same keys: the preparation's floor ---
    {
      const int dbits = std::max(1, static_cast<int>(std::bit_width(n - 1)));
      const int kbits = dbits + static_cast<int>(std::bit_width(n));
      gk::DeviceArray<unsigned long long> dk0 = device.array<unsigned long long>(batch),
                                          dk1 = device.array<unsigned long long>(batch);
      gk::DeviceArray<std::uint32_t> di0 = device.array<std::uint32_t>(batch),
                                     di1 = device.array<std::uint32_t>(batch);
      unsigned long long *k0 = dk0.data(), *k1 = dk1.data();
      std::uint32_t *i0 = di0.data(), *i1 = di1.data();
      std::size_t tb = 0;
      CHECK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, tb, k0, k1, i0, i1, batch, 0, kbits));
      gk::DeviceBuffer dtmp = device.buffer(tb);
      void* tmp = dtmp.data();
      sort_keys_kernel<<<kGridBlocks, 256, 0, stream>>>(dbatch, batch, dbits, k0, i0);
      CHECK_CUDA(cudaGetLastError());
      std::vector<double> ts;
      for (int rep = -1; rep < 9; ++rep) {
        CHECK_CUDA(cudaEventRecord(ev0.value(), stream));
        CHECK_CUDA(
            cub::DeviceRadixSort::SortPairs(tmp, tb, k0, k1, i0, i1, batch, 0, kbits, stream));
        CHECK_CUDA(cudaEventRecord(ev1.value(), stream));
        const double t = event_ms();
        if (rep >= 0) ts.push_back(t);
      }
      const double ms = median(ts);
      rows.push_back({"sort_floor", E, batch, "sort", "gpu", ms, batch / (ms * 1e-3), 9});
      std::printf(
          "cub::DeviceRadixSort::SortPairs alone (%d-bit keys): %.3f ms (%.0f%% of insert)\n",
          kbits, ms, 100.0 * ms / mi);
    }
    batch_edges.reset();
    std::fflush(stdout);

    // --- crossover against the CPU twin (on the smallest graph only) ---
    if (E != sizes.front()) continue;
    std::vector<GraphEdge> hedges(E);
    {
      const unsigned T = std::max(1u, std::thread::hardware_concurrency());
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < T; ++t)
        pool.emplace_back([&, t] {
          for (unsigned long long i = t; i < E; i += T) hedges[i] = gen_edge(i, graph_seed, n);
        });
      for (auto& th : pool) th.join();
    }
    gc::DynamicGraph twin = check(gc::DynamicGraph::create(n), "cpu create");
    const auto c0 = std::chrono::steady_clock::now();
    GraphBatchResult cb = check(twin.insert_edges(hedges), "cpu build");
    const double cpu_build_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
    std::printf("CPU twin build: %.1f ms (%.3f G edges/s), %llu distinct\n", cpu_build_ms,
                E / (cpu_build_ms * 1e6), static_cast<unsigned long long>(cb.inserted));
    rows.push_back({"build", E, E, "insert", "cpu", cpu_build_ms, E / (cpu_build_ms * 1e-3), 1});
    hedges.clear();
    hedges.shrink_to_fit();
    // A fresh device graph from the same edges (the throughput runs above deleted the edges
    // their batches hit), so that both sides start identical.
    {
      gk::DeviceArray<GraphEdge> fresh_edges = device.array<GraphEdge>(E);
      gen_graph_kernel<<<kGridBlocks, 256, 0, stream>>>(fresh_edges.data(), E, graph_seed, n);
      CHECK_CUDA(cudaGetLastError());
      g = check(gk::DeviceGraph::create(ctx, device.memory(), n), "create");
      check(g.insert_edges(ctx, fresh_edges.data(), E), "rebuild");
    }
    if (twin.num_edges() != g.num_edges()) {
      std::printf("MISMATCH: CPU twin has %llu edges, GPU %llu\n",
                  static_cast<unsigned long long>(twin.num_edges()),
                  static_cast<unsigned long long>(g.num_edges()));
      ok = false;
    }

    const unsigned long long max_b = 1000000ull;
    gk::PinnedBuffer host_batch =
        check(gk::PinnedBuffer::create(max_b * sizeof(GraphEdge)), "pinned batch");
    GraphEdge* hbatch = host_batch.data_as<GraphEdge>();
    batch_edges = device.array<GraphEdge>(max_b);
    dbatch = batch_edges.data();
    std::printf("\ncrossover on the %llu-edge graph (wall clock, median):\n", E);
    std::printf("%9s %14s %14s %10s\n", "batch", "GPU+H2D us", "CPU twin us", "GPU/CPU");
    double prev_b = 0, prev_ratio = 0;
    for (unsigned long long b = 1; b <= max_b; b *= 10) {
      const int r = b <= 1000 ? 41 : b <= 10000 ? 21 : b <= 100000 ? 9 : 5;
      std::vector<double> tg, tc;
      for (int rep = -2; rep < r; ++rep) {
        for (unsigned long long j = 0; j < b; ++j)
          hbatch[j] = batch_edge(j, b, 777000 + b * 1000 + (rep + 2), graph_seed, E, n);
        std::span<const GraphEdge> hs(hbatch, b);
        auto g0 = std::chrono::steady_clock::now();
        CHECK_CUDA(
            cudaMemcpyAsync(dbatch, hbatch, b * sizeof(GraphEdge), cudaMemcpyHostToDevice, stream));
        GraphBatchResult rg = check(g.insert_edges(ctx, dbatch, b), "gpu insert");
        auto g1 = std::chrono::steady_clock::now();
        GraphBatchResult rc = check(twin.insert_edges(hs), "cpu insert");
        auto g2 = std::chrono::steady_clock::now();
        if (rg.inserted != rc.inserted || rg.updated != rc.updated ||
            rg.superseded != rc.superseded) {
          std::printf("MISMATCH at batch %llu: gpu ins/upd/sup %llu/%llu/%llu cpu %llu/%llu/%llu\n",
                      b, static_cast<unsigned long long>(rg.inserted),
                      static_cast<unsigned long long>(rg.updated),
                      static_cast<unsigned long long>(rg.superseded),
                      static_cast<unsigned long long>(rc.inserted),
                      static_cast<unsigned long long>(rc.updated),
                      static_cast<unsigned long long>(rc.superseded));
          ok = false;
        }
        check(g.delete_edges(ctx, dbatch, b), "gpu delete");
        check(twin.delete_edges(hs), "cpu delete");
        if (rep < 0) continue;
        tg.push_back(std::chrono::duration<double, std::micro>(g1 - g0).count());
        tc.push_back(std::chrono::duration<double, std::micro>(g2 - g1).count());
      }
      const double mg = median(tg), mc = median(tc);
      rows.push_back({"crossover", E, b, "insert", "gpu+h2d", mg / 1e3, b / (mg * 1e-6), r});
      rows.push_back({"crossover", E, b, "insert", "cpu", mc / 1e3, b / (mc * 1e-6), r});
      std::printf("%9llu %14.1f %14.1f %10.3f\n", b, mg, mc, mg / mc);
      const double ratio = mg / mc;
      if (crossover < 0 && ratio < 1.0) {
        // Log-linear interpolation of GPU/CPU between the two batch sizes around 1.
        if (prev_b > 0 && prev_ratio >= 1.0) {
          const double x0 = std::log10(prev_b), x1 = std::log10(static_cast<double>(b));
          const double y0 = std::log10(prev_ratio), y1 = std::log10(ratio);
          crossover = std::pow(10.0, x0 + (0 - y0) * (x1 - x0) / (y1 - y0));
        } else {
          crossover = static_cast<double>(b);
        }
      }
      prev_b = static_cast<double>(b);
      prev_ratio = ratio;
      std::fflush(stdout);
    }
    if (crossover > 0) {
      std::printf(
          "crossover: the GPU (H2D + insert_edges) beats the CPU twin from about %.0f "
          "edges per batch\n",
          crossover);
    } else {
      std::printf("crossover: the GPU did not beat the CPU twin up to %llu edges\n", max_b);
    }
    host_batch.reset();
    batch_edges.reset();

    // --- the two graphs must be identical after all of this ---
    HostCsr a = check(g.export_csr(ctx), "gpu export");
    HostCsr c = twin.export_csr();
    const bool same =
        a.row_offsets == c.row_offsets && a.cols == c.cols &&
        std::memcmp(a.weights.data(), c.weights.data(), a.weights.size() * sizeof(float)) == 0 &&
        a.weights.size() == c.weights.size();
    std::printf("GPU export == CPU twin export (%llu edges): %s\n",
                static_cast<unsigned long long>(a.cols.size()), same ? "yes" : "NO");
    ok = ok && same;
  }

  {
    gcompute::bench::CsvFile out(csv,
                                 "device,kind,graph_edges,batch,op,backend,ms,edges_per_s,reps\n");
    for (const Row& r : rows) {
      out.line("%s,%s,%llu,%llu,%s,%s,%.6f,%.6e,%d\n", prop.name, r.kind.c_str(), r.graph_edges,
               r.batch, r.op.c_str(), r.backend.c_str(), r.ms, r.edges_per_s, r.reps);
    }
  }
  std::printf("\n%s summary\n%-11s %12s %9s %8s %8s %12s %10s\n", prop.name, "kind", "graph",
              "batch", "op", "backend", "ms", "G edges/s");
  for (const Row& r : rows) {
    std::printf("%-11s %12llu %9llu %8s %8s %12.4f %10.4f\n", r.kind.c_str(), r.graph_edges,
                r.batch, r.op.c_str(), r.backend.c_str(), r.ms, r.edges_per_s / 1e9);
  }
  if (crossover > 0) std::printf("crossover batch size: ~%.0f edges\n", crossover);
  std::printf("csv: %s\n%s\n", csv.c_str(), ok ? "CHECKS PASSED" : "CHECKS FAILED");
  return ok ? 0 : 1;
}
