// SPDX-License-Identifier: Apache-2.0
// GPU Jacobi SVD against cuSOLVER in the same run: cusolverDn<t>gesvdj (vectors, default
// tolerance and sweeps) on the same square random matrices, f32 and f64, and
// cusolverDnSgesvdjBatched on the same batch of 32 x 32 matrices. Times are CUDA-event medians
// after a warm-up. Prints a table; writes CSV to $OUT/svd_bench.csv (or argv[1]).
//
// usage: bench_svd [csv_path] [max_n] [sections]
//   sections: comma-separated, default "square,batched"; "f32" / "f64" restrict the square runs
//   to one type, "tall" adds 16384 x 256 and 65536 x 256 (ours only), "noref" skips cuSOLVER in
//   the square runs (for tuning runs with the GCOMPUTE_SVD_* knobs of docs/dev/knobs.md, read
//   once at start as the server does; rows whose block width or inner sweeps differ from the
//   defaults say so in `what`).
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "bench_device.hpp"
#include "exit_on_error.hpp"
#include "gcompute/kernels/cuda/svd.hpp"
#include "gcompute/kernels/cuda/tuning.hpp"
#include "support/seed.hpp"

namespace {

using gcompute::kernels::DType;
using gcompute::kernels::SvdInfo;
using gcompute::kernels::SvdShape;
using gcompute::kernels::SvdTuning;
namespace gk = gcompute::kernels::cuda;

/// The device, and the kernels' tuning.
struct Env : gcompute::bench::SolverEnv {
  SvdTuning tuning = gk::tuning_from_environment().svd;
};

struct Row {
  std::string what, dtype;
  long long batch, n;
  double ours_ms, ours_sweeps, ref_ms, ref_sweeps;
  double err_vs_ref;  // max |s_ours - s_ref| / s_ref[0]
};

template <typename T>
void fill_random(std::vector<T>& v, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  for (auto& x : v) x = static_cast<T>(nd(rng));
}

/// "[SVD_BLOCK=8;SVD_INNER_SWEEPS=2]" for the knobs away from their defaults, else "".
std::string knob_suffix(const SvdTuning& t) {
  const SvdTuning defaults;
  std::string out;
  const auto add = [&out](const char* name, int value) {
    out += std::string(out.empty() ? "" : ";") + name + "=" + std::to_string(value);
  };
  if (t.block != defaults.block) add("SVD_BLOCK", t.block);
  if (t.inner_sweeps != defaults.inner_sweeps) add("SVD_INNER_SWEEPS", t.inner_sweeps);
  if (t.inner_solver != defaults.inner_solver) {
    add("SVD_INNER_SOLVER", static_cast<int>(t.inner_solver));
  }
  if (t.gram_products != defaults.gram_products) add("SVD_GRAM_PRODUCTS", t.gram_products);
  if (t.inner_double != defaults.inner_double) add("SVD_INNER_DOUBLE", t.inner_double);
  if (t.sort_columns != defaults.sort_columns) add("SVD_SORT", t.sort_columns);
  if (t.settle_check != defaults.settle_check) add("SVD_SETTLE_CHECK", t.settle_check);
  return out.empty() ? "" : "[" + out + "]";
}

/// Ours on a random rows x n matrix (rows = n: square, against gesvdj where with_ref; taller:
/// ours alone, "tall" rows).
template <typename T>
Row square(const Env& env, int n, std::mt19937_64& rng, bool with_ref, int rows = 0) {
  const bool f32 = sizeof(T) == 4;
  const bool tall = rows > n;
  const int m = tall ? rows : n;
  const std::size_t nn = static_cast<std::size_t>(m) * n;
  std::vector<T> h(nn);
  fill_random(h, rng);
  gk::DeviceArray<T> da = env.device.array<T>(nn), da2 = env.device.array<T>(nn),
                     ds = env.device.array<T>(n), ds2 = env.device.array<T>(n),
                     du = env.device.array<T>(nn), dvt = env.device.array<T>(nn),
                     du2 = env.device.array<T>(nn), dv2 = env.device.array<T>(nn);
  T *a = da.data(), *s = ds.data(), *u = du.data(), *vt = dvt.data(), *a2 = da2.data(),
    *s2 = ds2.data(), *u2 = du2.data(), *v2 = dv2.data();
  CHECK_CUDA(cudaMemcpy(a, h.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
  SvdShape shape;
  shape.m = m;
  shape.n = n;
  shape.dtype = f32 ? DType::kF32 : DType::kF64;
  const std::size_t wsb = gk::svd_workspace_bytes(shape, env.tuning);
  gk::DeviceBuffer dws = env.device.buffer(wsb);
  void* ws = dws.data();
  SvdInfo info;
  const int reps = n >= 2048 ? 3 : 5;
  const double ours = gcompute::bench::median_ms(env.stream, reps, [&] {
    auto r = gk::svd_jacobi(env.ctx, a, s, u, vt, shape, ws, wsb, {}, env.tuning);
    if (!r.ok()) {
      std::fprintf(stderr, "svd_jacobi: %s\n", std::string(r.status().message()).c_str());
      std::exit(1);
    }
    info = *r;
  });

  if (!with_ref || tall) {
    return Row{(tall ? "tall " + std::to_string(m) + "x" : "square") + knob_suffix(env.tuning),
               f32 ? "f32" : "f64",
               1,
               n,
               ours,
               double(info.sweeps),
               NAN,
               NAN,
               NAN};
  }
  // cuSOLVER gesvdj, vectors, default tolerance and sweeps. It overwrites A: copy it in each time
  // (a D2D copy of n^2 elements, far below the solver's time; included in the measurement).
  gesvdjInfo_t params;
  CHECK_LIBRARY(cusolverDnCreateGesvdjInfo(&params));
  int lwork = 0;
  if constexpr (sizeof(T) == 4) {
    CHECK_LIBRARY(cusolverDnSgesvdj_bufferSize(env.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n, n, a2,
                                               n, s2, u2, n, v2, n, &lwork, params));
  } else {
    CHECK_LIBRARY(cusolverDnDgesvdj_bufferSize(env.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n, n, a2,
                                               n, s2, u2, n, v2, n, &lwork, params));
  }
  gk::DeviceArray<T> dwork = env.device.array<T>(static_cast<std::size_t>(lwork));
  gk::DeviceArray<int> ddinfo = env.device.array<int>(1);
  T* work = dwork.data();
  int* dinfo = ddinfo.data();
  const double ref = gcompute::bench::median_ms(env.stream, reps, [&] {
    CHECK_CUDA(cudaMemcpyAsync(a2, a, nn * sizeof(T), cudaMemcpyDeviceToDevice, env.stream));
    if constexpr (sizeof(T) == 4) {
      CHECK_LIBRARY(cusolverDnSgesvdj(env.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n, n, a2, n, s2,
                                      u2, n, v2, n, work, lwork, dinfo, params));
    } else {
      CHECK_LIBRARY(cusolverDnDgesvdj(env.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n, n, a2, n, s2,
                                      u2, n, v2, n, work, lwork, dinfo, params));
    }
  });
  int ref_sweeps = 0;
  CHECK_LIBRARY(cusolverDnXgesvdjGetSweeps(env.cusolver, params, &ref_sweeps));
  std::vector<T> so(n), sr(n);
  CHECK_CUDA(cudaMemcpy(so.data(), s, n * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(sr.data(), s2, n * sizeof(T), cudaMemcpyDeviceToHost));
  double err = 0;
  for (int k = 0; k < n; ++k) err = std::max(err, std::abs(double(so[k]) - double(sr[k])));
  err /= std::max(1e-300, double(sr[0]));
  CHECK_LIBRARY(cusolverDnDestroyGesvdjInfo(params));
  return Row{"square" + knob_suffix(env.tuning),
             f32 ? "f32" : "f64",
             1,
             n,
             ours,
             double(info.sweeps),
             ref,
             double(ref_sweeps),
             err};
}

/// Batched f32 n x n: ours, and gesvdjBatched beside it where n <= 32.
Row batched(const Env& env, int n, long long batch, std::mt19937_64& rng) {
  const std::size_t el = static_cast<std::size_t>(n) * n * batch;
  std::vector<float> h(el);
  fill_random(h, rng);
  gk::DeviceArray<float> da = env.device.array<float>(el), ds = env.device.array<float>(n * batch),
                         du = env.device.array<float>(el), dvt = env.device.array<float>(el);
  float *a = da.data(), *s = ds.data(), *u = du.data(), *vt = dvt.data();
  CHECK_CUDA(cudaMemcpy(a, h.data(), el * 4, cudaMemcpyHostToDevice));
  SvdShape shape;
  shape.batch = batch;
  shape.m = n;
  shape.n = n;
  shape.dtype = DType::kF32;
  const std::size_t wsb = gk::svd_workspace_bytes(shape, env.tuning);
  gk::DeviceBuffer dws = env.device.buffer(wsb);
  void* ws = dws.data();
  SvdInfo info;
  const double ours = gcompute::bench::median_ms(env.stream, 5, [&] {
    auto r = gk::svd_jacobi(env.ctx, a, s, u, vt, shape, ws, wsb, {}, env.tuning);
    if (!r.ok()) {
      std::fprintf(stderr, "svd_jacobi: %s\n", std::string(r.status().message()).c_str());
      std::exit(1);
    }
    info = *r;
  });
  double ref = NAN, err = NAN;
  if (n <= 32) {
    gk::DeviceArray<float> da2 = env.device.array<float>(el),
                           ds2 = env.device.array<float>(n * batch),
                           du2 = env.device.array<float>(el), dv2 = env.device.array<float>(el);
    gk::DeviceArray<int> ddinfo = env.device.array<int>(batch);
    float *a2 = da2.data(), *s2 = ds2.data(), *u2 = du2.data(), *v2 = dv2.data();
    int* dinfo = ddinfo.data();
    gesvdjInfo_t params;
    CHECK_LIBRARY(cusolverDnCreateGesvdjInfo(&params));
    int lwork = 0;
    CHECK_LIBRARY(cusolverDnSgesvdjBatched_bufferSize(env.cusolver, CUSOLVER_EIG_MODE_VECTOR, n, n,
                                                      a2, n, s2, u2, n, v2, n, &lwork, params,
                                                      static_cast<int>(batch)));
    gk::DeviceArray<float> dwork = env.device.array<float>(static_cast<std::size_t>(lwork));
    float* work = dwork.data();
    ref = gcompute::bench::median_ms(env.stream, 5, [&] {
      CHECK_CUDA(cudaMemcpyAsync(a2, a, el * 4, cudaMemcpyDeviceToDevice, env.stream));
      CHECK_LIBRARY(cusolverDnSgesvdjBatched(env.cusolver, CUSOLVER_EIG_MODE_VECTOR, n, n, a2, n,
                                             s2, u2, n, v2, n, work, lwork, dinfo, params,
                                             static_cast<int>(batch)));
    });
    // gesvdjBatched sorts by default; compare the first matrices' values.
    std::vector<float> so(n * 64), sr(n * 64);
    CHECK_CUDA(cudaMemcpy(so.data(), s, so.size() * 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(sr.data(), s2, sr.size() * 4, cudaMemcpyDeviceToHost));
    err = 0;
    for (int b = 0; b < 64; ++b) {
      for (int k = 0; k < n; ++k) {
        err = std::max(err, std::abs(double(so[b * n + k]) - sr[b * n + k]) / sr[b * n]);
      }
    }
    CHECK_LIBRARY(cusolverDnDestroyGesvdjInfo(params));
  }
  // Per-matrix microseconds in the *_ms columns' place would confuse: keep ms for the batch.
  return Row{"batched", "f32", batch, n, ours, double(info.sweeps), ref, NAN, err};
}

}  // namespace

int main(int argc, char** argv) {
  const gcompute::bench::SolverArgs args(argc, argv, "svd_bench.csv", 4096, "square,batched");
  const bool with_ref = !args.has("noref");
  const Env env;
  // GCOMPUTE_TEST_SEED replays a run's matrices (as for the tests): A/B runs of a knob then time
  // the same inputs, whose sweep counts otherwise differ by one either way from seed to seed.
  const std::uint64_t seed = gcompute::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::printf("device: %s (%d SMs), seed %llu\n", env.properties.name,
              env.properties.multiProcessorCount, static_cast<unsigned long long>(seed));
  std::vector<Row> rows;
  for (int n : {256, 512, 1024, 2048, 4096}) {
    if (n > args.max_n || !args.has("square") || !args.wants_f32()) break;
    rows.push_back(square<float>(env, n, rng, with_ref));
    std::fprintf(stderr, "done f32 %d\n", n);
  }
  for (int n : {256, 512, 1024, 2048, 4096}) {
    if (n > args.max_n || !args.has("square") || !args.wants_f64()) break;
    rows.push_back(square<double>(env, n, rng, with_ref));
    std::fprintf(stderr, "done f64 %d\n", n);
  }
  if (args.has("tall")) {  // ours only: W of 16384 and 65536 rows, 256 columns
    for (const int m : {16384, 65536}) {
      if (args.wants_f32()) rows.push_back(square<float>(env, 256, rng, false, m));
      if (args.wants_f64()) rows.push_back(square<double>(env, 256, rng, false, m));
    }
  }
  if (args.has("batched")) {
    rows.push_back(batched(env, 32, 100000, rng));
    rows.push_back(batched(env, 16, 100000, rng));
    rows.push_back(batched(env, 64, 100000, rng));
  }

  gcompute::bench::CsvFile out(args.csv,
                               "device,what,dtype,batch,n,ours_ms,ours_sweeps,cusolver_ms,"
                               "cusolver_sweeps,speedup,max_sv_diff_rel\n");
  std::printf("%-28s %-4s %7s %5s %11s %6s %13s %6s %8s %10s\n", "what", "type", "batch", "n",
              "ours_ms", "sweeps", "cusolver_ms", "sweeps", "speedup", "sv_diff");
  for (const Row& r : rows) {
    std::printf("%-28s %-4s %7lld %5lld %11.3f %6.0f %13.3f %6.0f %8.2f %10.2e\n", r.what.c_str(),
                r.dtype.c_str(), r.batch, r.n, r.ours_ms, r.ours_sweeps, r.ref_ms, r.ref_sweeps,
                r.ref_ms / r.ours_ms, r.err_vs_ref);
    out.line("%s,%s,%s,%lld,%lld,%.4f,%.0f,%.4f,%.0f,%.3f,%.3e\n", env.properties.name,
             r.what.c_str(), r.dtype.c_str(), r.batch, r.n, r.ours_ms, r.ours_sweeps, r.ref_ms,
             r.ref_sweeps, r.ref_ms / r.ours_ms, r.err_vs_ref);
  }
  return 0;
}
