// SPDX-License-Identifier: Apache-2.0
// Every GPU SVD method against every cuSOLVER SVD in one run, on the same square N(0, 1)
// matrices with vectors: ours (polar: QDWH + syevd; jacobi: one-sided Jacobi) and cuSOLVER's
// gesvdp (polar + syevd), gesvdj (Jacobi) and gesvd (QR bidiagonalisation), f32 and f64. Each
// row has the time (CUDA-event median of 3 after a warm-up; one timed call after it from
// n = 2048 on), the
// iterations or sweeps where the routine reports them, and the accuracy of what it returned,
// measured on the GPU in the element precision: residual |A - U S V^T|_F / |A|_F and
// orthogonality |U^T U - I|_F, |V^T V - I|_F, against the bound 50 n eps of the contract.
// Prints a table and writes CSV to $OUT/svd_methods.csv (or argv[1]).
//
// usage: bench_svd_methods [csv_path] [max_n] [sections]
//   sections: "f32" / "f64" restrict the types; "nogesvd" skips gesvd (the slowest);
//   "polar-only" also skips both Jacobi rows (ours and gesvdj).
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
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

using gcompute::bench::check_ok;
using gcompute::kernels::DType;
using gcompute::kernels::SvdInfo;
using gcompute::kernels::SvdMethod;
using gcompute::kernels::SvdShape;
namespace gk = gcompute::kernels::cuda;

using Env = gcompute::bench::SolverEnv;

struct Row {
  std::string method, dtype;
  int n;
  double ms, iterations, residual, orth_u, orth_v, bound;
};

/// Column-major n x n factors of one result: A = U diag(S) V^T.
template <typename T>
struct Factors {
  const T* u;
  const T* s;
  const T* v;
};

template <typename T>
class Accuracy {
 public:
  Accuracy(const Env& env, int n)
      : env_(env), n_(n), w_(env.device.array<T>(nn())), r_(env.device.array<T>(nn())) {}

  /// |A - U S V^T|_F / |A|_F with A the column-major n x n matrix a.
  double residual(const T* a, const Factors<T>& f) {
    cublasHandle_t h = env_.ctx.cublas;
    const T one = 1, minus_one = -1;
    CHECK_LIBRARY(dgmm(h, f.u, f.s, w_.data()));
    CHECK_CUDA(
        cudaMemcpyAsync(r_.data(), a, nn() * sizeof(T), cudaMemcpyDeviceToDevice, env_.stream));
    CHECK_LIBRARY(gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, minus_one, w_.data(), f.v, one, r_.data()));
    return nrm2(h, r_.data()) / nrm2(h, a);
  }

  /// |Q^T Q - I|_F.
  double orthogonality(const T* q) {
    cublasHandle_t h = env_.ctx.cublas;
    std::vector<T> identity(nn(), T(0));
    for (int i = 0; i < n_; ++i) identity[static_cast<std::size_t>(i) * n_ + i] = T(1);
    CHECK_CUDA(cudaMemcpy(r_.data(), identity.data(), nn() * sizeof(T), cudaMemcpyHostToDevice));
    const T one = 1, minus_one = -1;
    CHECK_LIBRARY(gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, one, q, q, minus_one, r_.data()));
    return nrm2(h, r_.data());
  }

 private:
  std::size_t nn() const { return static_cast<std::size_t>(n_) * n_; }
  cublasStatus_t dgmm(cublasHandle_t h, const T* u, const T* s, T* out) const {
    if constexpr (sizeof(T) == 4) {
      return cublasSdgmm(h, CUBLAS_SIDE_RIGHT, n_, n_, u, n_, s, 1, out, n_);
    } else {
      return cublasDdgmm(h, CUBLAS_SIDE_RIGHT, n_, n_, u, n_, s, 1, out, n_);
    }
  }
  cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, T alpha,
                      const T* a, const T* b, T beta, T* c) const {
    if constexpr (sizeof(T) == 4) {
      return cublasSgemm(h, ta, tb, n_, n_, n_, &alpha, a, n_, b, n_, &beta, c, n_);
    } else {
      return cublasDgemm(h, ta, tb, n_, n_, n_, &alpha, a, n_, b, n_, &beta, c, n_);
    }
  }
  double nrm2(cublasHandle_t h, const T* x) const {
    T out = 0;
    if constexpr (sizeof(T) == 4) {
      CHECK_LIBRARY(cublasSnrm2(h, static_cast<int>(nn()), x, 1, &out));
    } else {
      CHECK_LIBRARY(cublasDnrm2(h, static_cast<int>(nn()), x, 1, &out));
    }
    return static_cast<double>(out);
  }

  const Env& env_;
  int n_;
  gk::DeviceArray<T> w_, r_;
};

/// out <- in^T for n x n column-major matrices.
template <typename T>
void transpose(const Env& env, const T* in, T* out, int n) {
  const T one = 1, zero = 0;
  if constexpr (sizeof(T) == 4) {
    CHECK_LIBRARY(cublasSgeam(env.ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, &one, in, n, &zero,
                              out, n, out, n));
  } else {
    CHECK_LIBRARY(cublasDgeam(env.ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, &one, in, n, &zero,
                              out, n, out, n));
  }
}

/// Which rows a run has (the sections argument).
struct Rows {
  bool gesvd = true;
  bool jacobi = true;  // ours and gesvdj
};

template <typename T>
void run_size(const Env& env, int n, std::mt19937_64& rng, const Rows& want,
              std::vector<Row>& rows) {
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  const char* dtype = sizeof(T) == 4 ? "f32" : "f64";
  const double bound = 50.0 * n * std::numeric_limits<T>::epsilon();
  std::vector<T> h(nn);
  std::normal_distribution<double> nd;
  for (T& x : h) x = static_cast<T>(nd(rng));
  gk::DeviceArray<T> a = env.device.array<T>(nn), work_a = env.device.array<T>(nn),
                     s = env.device.array<T>(n), u = env.device.array<T>(nn),
                     v = env.device.array<T>(nn), vt = env.device.array<T>(nn);
  gk::DeviceArray<int> info = env.device.array<int>(1);
  CHECK_CUDA(cudaMemcpy(a.data(), h.data(), nn * sizeof(T), cudaMemcpyHostToDevice));
  const int reps = n >= 2048 ? 1 : 3;  // after one warm-up call
  Accuracy<T> acc(env, n);
  auto add = [&](const char* method, double ms, double iterations, const Factors<T>& f) {
    rows.push_back(Row{method, dtype, n, ms, iterations, acc.residual(a.data(), f),
                       acc.orthogonality(f.u), acc.orthogonality(f.v), bound});
    std::fprintf(stderr, "done %s %s %d\n", method, dtype, n);
  };

  // Ours. The row-major buffer is the column-major A^T = V S U^T: the factors swap roles.
  SvdShape shape{.m = n, .n = n, .dtype = sizeof(T) == 4 ? DType::kF32 : DType::kF64};
  for (const SvdMethod method : {SvdMethod::kPolar, SvdMethod::kJacobi}) {
    if (method == SvdMethod::kJacobi && !want.jacobi) continue;
    shape.method = method;
    const bool polar = method == SvdMethod::kPolar;
    // The server's knobs (docs/dev/knobs.md) apply here too: GCOMPUTE_SVD_PROFILE=1 prints
    // where each call's time goes.
    static const gcompute::kernels::SvdTuning tuning = gk::tuning_from_environment().svd;
    const std::size_t wsb = polar ? check_ok(gk::svd_polar_workspace_bytes(env.ctx, shape), "ws")
                                  : gk::svd_workspace_bytes(shape, tuning);
    gk::DeviceBuffer ws = env.device.buffer(wsb);
    SvdInfo result;
    const double ms = gcompute::bench::median_ms(env.stream, reps, [&] {
      result = check_ok(polar ? gk::svd_polar(env.ctx, a.data(), s.data(), u.data(), vt.data(),
                                              shape, ws.data(), wsb, {}, tuning)
                              : gk::svd_jacobi(env.ctx, a.data(), s.data(), u.data(), vt.data(),
                                               shape, ws.data(), wsb, {}, tuning),
                        "ours");
    });
    // u holds U^T column-major: its transpose into v is the V of A^T = V S U^T.
    transpose(env, u.data(), v.data(), n);
    add(polar ? "ours polar" : "ours jacobi", ms, result.sweeps,
        Factors<T>{vt.data(), s.data(), v.data()});
  }

  // cuSOLVER gesvdp: A is overwritten, so each call starts from a copy (included in the time,
  // as for every cuSOLVER row: a D2D copy of n^2 elements).
  {
    std::size_t dev_bytes = 0, host_bytes = 0;
    const cudaDataType_t t = gcompute::bench::cuda_data_type<T>();
    CHECK_LIBRARY(cusolverDnXgesvdp_bufferSize(
        env.ctx.cusolver, env.params, CUSOLVER_EIG_MODE_VECTOR, 0, n, n, t, work_a.data(), n, t,
        s.data(), t, u.data(), n, t, v.data(), n, t, &dev_bytes, &host_bytes));
    gk::DeviceBuffer dev = env.device.buffer(std::max<std::size_t>(dev_bytes, 1));
    std::vector<char> host(std::max<std::size_t>(host_bytes, 1));
    double err_sigma = 0;
    const double ms = gcompute::bench::median_ms(env.stream, reps, [&] {
      CHECK_CUDA(cudaMemcpyAsync(work_a.data(), a.data(), nn * sizeof(T), cudaMemcpyDeviceToDevice,
                                 env.stream));
      CHECK_LIBRARY(cusolverDnXgesvdp(env.ctx.cusolver, env.params, CUSOLVER_EIG_MODE_VECTOR, 0, n,
                                      n, t, work_a.data(), n, t, s.data(), t, u.data(), n, t,
                                      v.data(), n, t, dev.data(), dev_bytes, host.data(),
                                      host_bytes, info.data(), &err_sigma));
    });
    add("cusolver gesvdp", ms, NAN, Factors<T>{u.data(), s.data(), v.data()});
  }

  // cuSOLVER gesvdj (default tolerance and sweeps).
  if (want.jacobi) {
    gesvdjInfo_t params;
    CHECK_LIBRARY(cusolverDnCreateGesvdjInfo(&params));
    int lwork = 0;
    if constexpr (sizeof(T) == 4) {
      CHECK_LIBRARY(cusolverDnSgesvdj_bufferSize(env.ctx.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n,
                                                 n, work_a.data(), n, s.data(), u.data(), n,
                                                 v.data(), n, &lwork, params));
    } else {
      CHECK_LIBRARY(cusolverDnDgesvdj_bufferSize(env.ctx.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n,
                                                 n, work_a.data(), n, s.data(), u.data(), n,
                                                 v.data(), n, &lwork, params));
    }
    gk::DeviceArray<T> work = env.device.array<T>(static_cast<std::size_t>(std::max(lwork, 1)));
    const double ms = gcompute::bench::median_ms(env.stream, reps, [&] {
      CHECK_CUDA(cudaMemcpyAsync(work_a.data(), a.data(), nn * sizeof(T), cudaMemcpyDeviceToDevice,
                                 env.stream));
      if constexpr (sizeof(T) == 4) {
        CHECK_LIBRARY(cusolverDnSgesvdj(env.ctx.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n, n,
                                        work_a.data(), n, s.data(), u.data(), n, v.data(), n,
                                        work.data(), lwork, info.data(), params));
      } else {
        CHECK_LIBRARY(cusolverDnDgesvdj(env.ctx.cusolver, CUSOLVER_EIG_MODE_VECTOR, 0, n, n,
                                        work_a.data(), n, s.data(), u.data(), n, v.data(), n,
                                        work.data(), lwork, info.data(), params));
      }
    });
    int sweeps = 0;
    CHECK_LIBRARY(cusolverDnXgesvdjGetSweeps(env.ctx.cusolver, params, &sweeps));
    CHECK_LIBRARY(cusolverDnDestroyGesvdjInfo(params));
    add("cusolver gesvdj", ms, sweeps, Factors<T>{u.data(), s.data(), v.data()});
  }

  // cuSOLVER gesvd (returns V^T: transposed into v for the checks, outside the timing).
  if (want.gesvd) {
    std::size_t dev_bytes = 0, host_bytes = 0;
    const cudaDataType_t t = gcompute::bench::cuda_data_type<T>();
    CHECK_LIBRARY(cusolverDnXgesvd_bufferSize(env.ctx.cusolver, env.params, 'A', 'A', n, n, t,
                                              work_a.data(), n, t, s.data(), t, u.data(), n, t,
                                              vt.data(), n, t, &dev_bytes, &host_bytes));
    gk::DeviceBuffer dev = env.device.buffer(std::max<std::size_t>(dev_bytes, 1));
    std::vector<char> host(std::max<std::size_t>(host_bytes, 1));
    const double ms = gcompute::bench::median_ms(env.stream, reps, [&] {
      CHECK_CUDA(cudaMemcpyAsync(work_a.data(), a.data(), nn * sizeof(T), cudaMemcpyDeviceToDevice,
                                 env.stream));
      CHECK_LIBRARY(cusolverDnXgesvd(env.ctx.cusolver, env.params, 'A', 'A', n, n, t, work_a.data(),
                                     n, t, s.data(), t, u.data(), n, t, vt.data(), n, t, dev.data(),
                                     dev_bytes, host.data(), host_bytes, info.data()));
    });
    transpose(env, vt.data(), v.data(), n);
    add("cusolver gesvd", ms, NAN, Factors<T>{u.data(), s.data(), v.data()});
  }
}

}  // namespace

int main(int argc, char** argv) {
  const gcompute::bench::SolverArgs args(argc, argv, "svd_methods.csv", 4096, "");
  const Rows want{.gesvd = !args.has("nogesvd"), .jacobi = !args.has("polar-only")};
  const Env env;
  CHECK_LIBRARY(cublasSetPointerMode(env.ctx.cublas, CUBLAS_POINTER_MODE_HOST));
  const std::uint64_t seed = gcompute::testing::test_seed();  // GCOMPUTE_TEST_SEED replays it
  std::mt19937_64 rng(seed);
  std::printf("device: %s (%d SMs), seed %llu\n", env.properties.name,
              env.properties.multiProcessorCount, static_cast<unsigned long long>(seed));
  std::vector<Row> rows;
  for (int n : {256, 512, 1024, 2048, 4096, 8192}) {
    if (n > args.max_n) break;
    if (args.wants_f32()) run_size<float>(env, n, rng, want, rows);
    if (args.wants_f64()) run_size<double>(env, n, rng, want, rows);
  }

  gcompute::bench::CsvFile out(
      args.csv,
      "device,method,dtype,n,ms,iterations,residual,orth_u,orth_v,bound,within_bound,"
      "polar_speedup\n");
  std::printf("%-16s %-4s %5s %10s %5s %10s %10s %10s %6s %8s\n", "method", "type", "n", "ms",
              "iters", "residual", "orth_u", "orth_v", "ok", "ms/polar");
  double polar_ms = NAN;
  for (const Row& r : rows) {
    if (r.method == "ours polar") polar_ms = r.ms;
    const bool ok = r.residual <= r.bound && r.orth_u <= r.bound && r.orth_v <= r.bound;
    std::printf("%-16s %-4s %5d %10.2f %5.0f %10.2e %10.2e %10.2e %6s %8.2f\n", r.method.c_str(),
                r.dtype.c_str(), r.n, r.ms, r.iterations, r.residual, r.orth_u, r.orth_v,
                ok ? "yes" : "NO", r.ms / polar_ms);
    out.line("%s,%s,%s,%d,%.4f,%.0f,%.3e,%.3e,%.3e,%.3e,%d,%.3f\n", env.properties.name,
             r.method.c_str(), r.dtype.c_str(), r.n, r.ms, r.iterations, r.residual, r.orth_u,
             r.orth_v, r.bound, ok ? 1 : 0, r.ms / polar_ms);
  }
  return 0;
}
