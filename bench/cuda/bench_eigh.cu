// SPDX-License-Identifier: Apache-2.0
// GPU Eigh against cuSOLVER in the same run, on the same random symmetric inputs, vectors on:
//  * square f32 and f64 matrices: cuda::eigh (cusolverDnXsyevd inside, plus the input copy and
//    the transpose into row-major V) against cusolverDnXsyevd alone and cusolverDn<t>syevj
//    (default tolerance and sweeps; up to n = 4096, where one run already takes seconds);
//  * batches of 16 x 16 and 32 x 32 (our Jacobi kernel) against cusolverDn<t>syevjBatched.
// cuSOLVER overwrites its input, so each of its runs copies A first (a D2D copy, included in
// its time; ours copies too). Times are CUDA-event medians after a warm-up. Prints a table;
// writes CSV to $OUT/eigh_bench.csv (or argv[1]).
//
// usage: bench_eigh [csv_path] [max_n]   (max_n: largest square n, default 8192)
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_args.hpp"
#include "bench_device.hpp"
#include "exit_on_error.hpp"
#include "gcompute/kernels/cuda/eigh.hpp"
#include "support/seed.hpp"

namespace {

using gcompute::kernels::DType;
using gcompute::kernels::EighShape;
namespace gk = gcompute::kernels::cuda;

constexpr int kSyevjMaxN = 4096;

using Env = gcompute::bench::SolverEnv;

/// Median of `reps` timings of f() after a warm-up, in ms.
template <typename F>
double time_ms(const Env& env, int reps, F&& f) {
  return gcompute::bench::median_ms(env.stream, reps, std::forward<F>(f));
}

struct Row {
  std::string what, dtype, ref_name;
  long long batch, n;
  double ours_ms, ref_ms, ref2_ms;  // ref2: syevj beside syevd (square rows)
  double err;                       // max |w_ours - w_ref| / max |w_ref|
};

/// `batch` random symmetric n x n matrices (standard normal entries), row-major.
template <typename T>
std::vector<T> random_symmetric(long long batch, int n, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  std::vector<T> h(static_cast<std::size_t>(batch) * n * n);
  for (long long b = 0; b < batch; ++b) {
    T* m = h.data() + static_cast<std::size_t>(b) * n * n;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) m[i * n + j] = m[j * n + i] = static_cast<T>(nd(rng));
    }
  }
  return h;
}

/// cuda::eigh on device matrices `a` into w, v, timed; exits on failure.
template <typename T>
double time_ours(const Env& env, const T* a, T* w, T* v, long long batch, int n, int reps) {
  EighShape shape;
  shape.batch = batch;
  shape.n = n;
  shape.dtype = sizeof(T) == 4 ? DType::kF32 : DType::kF64;
  const std::size_t wsb =
      gcompute::bench::check_ok(gk::eigh_workspace_bytes(env.ctx, shape), "eigh_workspace_bytes");
  gk::DeviceBuffer dws = env.device.buffer(wsb);
  void* ws = dws.data();
  return time_ms(env, reps, [&] {
    auto r = gk::eigh(env.ctx, a, w, v, shape, ws, wsb);
    if (!r.ok()) {
      std::fprintf(stderr, "eigh: %s\n", r.status().ToString().c_str());
      std::exit(1);
    }
    if (!r->converged) std::fprintf(stderr, "eigh: not converged (batch %lld, n %d)\n", batch, n);
  });
}

/// max over matrices and k of |ours_k - ref_k| / max_k |ref_k|, both ascending.
template <typename T>
double eigenvalue_difference(const T* ours_dev, const T* ref_dev, long long batch, int n) {
  const std::size_t count = static_cast<std::size_t>(batch) * n;
  std::vector<T> ours(count), ref(count);
  CHECK_CUDA(cudaMemcpy(ours.data(), ours_dev, count * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(ref.data(), ref_dev, count * sizeof(T), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (long long b = 0; b < batch; ++b) {
    double norm = 0, diff = 0;
    for (int k = 0; k < n; ++k) {
      const std::size_t i = static_cast<std::size_t>(b) * n + k;
      norm = std::max(norm, std::abs(double(ref[i])));
      diff = std::max(diff, std::abs(double(ours[i]) - double(ref[i])));
    }
    worst = std::max(worst, diff / std::max(norm, 1e-300));
  }
  return worst;
}

template <typename T>
Row square(const Env& env, int n, std::mt19937_64& rng) {
  constexpr bool kF32 = sizeof(T) == 4;
  const cudaDataType_t type = gcompute::bench::cuda_data_type<T>();
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  const std::vector<T> h = random_symmetric<T>(1, n, rng);
  gk::DeviceArray<T> da = env.device.array<T>(nn), dw = env.device.array<T>(n),
                     dv = env.device.array<T>(nn), da2 = env.device.array<T>(nn),
                     dw2 = env.device.array<T>(n);
  gk::DeviceArray<int> dinfo = env.device.array<int>(1);
  T *a = da.data(), *w = dw.data(), *v = dv.data(), *a2 = da2.data(), *w2 = dw2.data();
  int* info = dinfo.data();
  CHECK_CUDA(cudaMemcpy(a, h.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
  const int reps = n >= 4096 ? 2 : (n >= 2048 ? 3 : 5);
  const double ours = time_ours<T>(env, a, w, v, 1, n, reps);

  // cusolverDnXsyevd alone (upper triangle of the column-major matrix = our lower one).
  std::size_t dbytes = 0, hbytes = 0;
  CHECK_LIBRARY(cusolverDnXsyevd_bufferSize(env.cusolver, env.params, CUSOLVER_EIG_MODE_VECTOR,
                                            CUBLAS_FILL_MODE_UPPER, n, type, a2, n, type, w2, type,
                                            &dbytes, &hbytes));
  gk::DeviceBuffer dwork = env.device.buffer(std::max<std::size_t>(dbytes, 1));
  std::vector<char> hwork(std::max<std::size_t>(hbytes, 1));
  const double syevd = time_ms(env, reps, [&] {
    CHECK_CUDA(cudaMemcpyAsync(a2, a, nn * sizeof(T), cudaMemcpyDeviceToDevice, env.stream));
    CHECK_LIBRARY(cusolverDnXsyevd(env.cusolver, env.params, CUSOLVER_EIG_MODE_VECTOR,
                                   CUBLAS_FILL_MODE_UPPER, n, type, a2, n, type, w2, type,
                                   dwork.data(), dbytes, hwork.data(), hbytes, info));
  });
  const double err = eigenvalue_difference(w, w2, 1, n);

  // cusolverDn<t>syevj, default tolerance and sweeps.
  double syevj = NAN;
  if (n <= kSyevjMaxN) {
    syevjInfo_t jparams;
    CHECK_LIBRARY(cusolverDnCreateSyevjInfo(&jparams));
    int lwork = 0;
    if constexpr (kF32) {
      CHECK_LIBRARY(cusolverDnSsyevj_bufferSize(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                                CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, &lwork,
                                                jparams));
    } else {
      CHECK_LIBRARY(cusolverDnDsyevj_bufferSize(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                                CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, &lwork,
                                                jparams));
    }
    gk::DeviceArray<T> jwork = env.device.array<T>(static_cast<std::size_t>(std::max(lwork, 1)));
    syevj = time_ms(env, reps, [&] {
      CHECK_CUDA(cudaMemcpyAsync(a2, a, nn * sizeof(T), cudaMemcpyDeviceToDevice, env.stream));
      if constexpr (kF32) {
        CHECK_LIBRARY(cusolverDnSsyevj(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                       CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, jwork.data(), lwork,
                                       info, jparams));
      } else {
        CHECK_LIBRARY(cusolverDnDsyevj(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                       CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, jwork.data(), lwork,
                                       info, jparams));
      }
    });
    CHECK_LIBRARY(cusolverDnDestroySyevjInfo(jparams));
  }
  return Row{"square", kF32 ? "f32" : "f64", "syevd", 1, n, ours, syevd, syevj, err};
}

/// `batch` matrices of n x n (n <= 32): ours against syevjBatched (sorted eigenvalues).
template <typename T>
Row batched(const Env& env, int n, long long batch, std::mt19937_64& rng) {
  constexpr bool kF32 = sizeof(T) == 4;
  const std::size_t el = static_cast<std::size_t>(batch) * n * n;
  const std::size_t wl = static_cast<std::size_t>(batch) * n;
  const std::vector<T> h = random_symmetric<T>(batch, n, rng);
  gk::DeviceArray<T> da = env.device.array<T>(el), dw = env.device.array<T>(wl),
                     dv = env.device.array<T>(el), da2 = env.device.array<T>(el),
                     dw2 = env.device.array<T>(wl);
  gk::DeviceArray<int> dinfo = env.device.array<int>(static_cast<std::size_t>(batch));
  T *a = da.data(), *w = dw.data(), *v = dv.data(), *a2 = da2.data(), *w2 = dw2.data();
  int* info = dinfo.data();
  CHECK_CUDA(cudaMemcpy(a, h.data(), el * sizeof(T), cudaMemcpyHostToDevice));
  const double ours = time_ours<T>(env, a, w, v, batch, n, 5);

  syevjInfo_t params;
  CHECK_LIBRARY(cusolverDnCreateSyevjInfo(&params));
  CHECK_LIBRARY(cusolverDnXsyevjSetSortEig(params, 1));
  int lwork = 0;
  const int b = static_cast<int>(batch);
  if constexpr (kF32) {
    CHECK_LIBRARY(cusolverDnSsyevjBatched_bufferSize(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                                     CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, &lwork,
                                                     params, b));
  } else {
    CHECK_LIBRARY(cusolverDnDsyevjBatched_bufferSize(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                                     CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, &lwork,
                                                     params, b));
  }
  gk::DeviceArray<T> work = env.device.array<T>(static_cast<std::size_t>(std::max(lwork, 1)));
  const double ref = time_ms(env, 5, [&] {
    CHECK_CUDA(cudaMemcpyAsync(a2, a, el * sizeof(T), cudaMemcpyDeviceToDevice, env.stream));
    if constexpr (kF32) {
      CHECK_LIBRARY(cusolverDnSsyevjBatched(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                            CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, work.data(),
                                            lwork, info, params, b));
    } else {
      CHECK_LIBRARY(cusolverDnDsyevjBatched(env.cusolver, CUSOLVER_EIG_MODE_VECTOR,
                                            CUBLAS_FILL_MODE_UPPER, n, a2, n, w2, work.data(),
                                            lwork, info, params, b));
    }
  });
  CHECK_LIBRARY(cusolverDnDestroySyevjInfo(params));
  const double err = eigenvalue_difference(w, w2, batch, n);
  return Row{"batched", kF32 ? "f32" : "f64", "syevjBatched", batch, n, ours, ref, NAN, err};
}

}  // namespace

int main(int argc, char** argv) {
  const gcompute::bench::SolverArgs args(argc, argv, "eigh_bench.csv", 8192, "");
  const Env env;
  const std::uint64_t seed = gcompute::testing::test_seed();  // GCOMPUTE_TEST_SEED replays it
  std::mt19937_64 rng(seed);
  std::printf("device: %s (%d SMs), seed %llu\n", env.properties.name,
              env.properties.multiProcessorCount, static_cast<unsigned long long>(seed));
  std::vector<Row> rows;
  // Batches that take a few ms in our kernel.
  rows.push_back(batched<float>(env, 16, 65536, rng));
  rows.push_back(batched<double>(env, 16, 65536, rng));
  rows.push_back(batched<float>(env, 32, 16384, rng));
  rows.push_back(batched<double>(env, 32, 16384, rng));
  std::fprintf(stderr, "done batched\n");
  for (int n : {256, 512, 1024, 2048, 4096, 8192}) {
    if (n > args.max_n) break;
    rows.push_back(square<float>(env, n, rng));
    rows.push_back(square<double>(env, n, rng));
    std::fprintf(stderr, "done %d\n", n);
  }

  gcompute::bench::CsvFile out(
      args.csv,
      "device,what,dtype,batch,n,ours_ms,ref,ref_ms,ref_over_ours,syevj_ms,"
      "syevj_over_ours,max_w_diff_rel\n");
  std::printf("%-8s %-4s %6s %5s %10s %-13s %10s %8s %10s %8s %10s\n", "what", "type", "batch", "n",
              "ours_ms", "ref", "ref_ms", "ref/ours", "syevj_ms", "j/ours", "w_diff");
  for (const Row& r : rows) {
    std::printf("%-8s %-4s %6lld %5lld %10.3f %-13s %10.3f %8.2f %10.3f %8.2f %10.2e\n",
                r.what.c_str(), r.dtype.c_str(), r.batch, r.n, r.ours_ms, r.ref_name.c_str(),
                r.ref_ms, r.ref_ms / r.ours_ms, r.ref2_ms, r.ref2_ms / r.ours_ms, r.err);
    out.line("%s,%s,%s,%lld,%lld,%.4f,%s,%.4f,%.3f,%.4f,%.3f,%.3e\n", env.properties.name,
             r.what.c_str(), r.dtype.c_str(), r.batch, r.n, r.ours_ms, r.ref_name.c_str(), r.ref_ms,
             r.ref_ms / r.ours_ms, r.ref2_ms, r.ref2_ms / r.ours_ms, r.err);
  }
  return 0;
}
