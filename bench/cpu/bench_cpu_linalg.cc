// SPDX-License-Identifier: Apache-2.0
// The CPU backend's SVD and Eigh, timed one call at a time for a driver that measures its
// baselines in the same run (bench/cpu/bench_cpu_linalg.py runs numpy.linalg on the same
// matrices, interleaved with these calls).
//
// usage: bench_cpu_linalg   (reads commands on stdin, answers each with one line on stdout)
//   svd METHOD DTYPE BATCH M N FILE CHECK  METHOD auto|jacobi|polar, DTYPE f32|f64
//     -> "ok SECONDS SWEEPS CONVERGED RESIDUAL ORTHOGONALITY"
//   eigh DTYPE BATCH N FILE CHECK
//     -> "ok SECONDS RESIDUAL ORTHOGONALITY"
//   lapack ROUTINE DTYPE N FILE  ROUTINE gesdd|syevd: the plain LAPACK call on an N x N matrix
//     (vectors; gesdd JOBZ 'S'), workspace allocated and touched beforehand -> "ok SECONDS"
//   concurrent THREADS N FILE   (f64 SVDs with vectors, one per thread, all started at once)
//     -> "ok SECONDS_CPU_SVD SECONDS_RAW_DGESDD"
// FILE holds BATCH matrices (row-major, little-endian DTYPE). SECONDS is the wall time of the
// kernel call alone. With CHECK 1 the first matrix's accuracy is measured in double (not
// timed): RESIDUAL = |A - U S Vt|_F / |A|_F (|A V - V diag(w)|_F / |A|_F for eigh),
// ORTHOGONALITY = max |Q^T Q - I| over U, V (V); otherwise both are printed as -1.
// "concurrent" runs the threads through cpu::svd (which takes turns on OpenBLAS) and then
// through plain LAPACK dgesdd calls at once (which contend for its thread pool).
#include <cblas.h>
#include <lapack.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gcompute/kernels/cpu/eigh.hpp"
#include "gcompute/kernels/cpu/svd.hpp"

namespace {

namespace gk = gcompute::kernels;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

template <typename T>
bool read_file(const std::string& path, std::vector<T>& out, std::size_t count) {
  std::ifstream f(path, std::ios::binary);
  out.resize(count);
  return static_cast<bool>(
      f.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(count * sizeof(T))));
}

// max |Q^T Q - I| for the columns of a row-major rows x cols matrix.
double orthogonality(const std::vector<double>& q, int rows, int cols) {
  std::vector<double> g(static_cast<std::size_t>(cols) * cols);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cols, cols, rows, 1.0, q.data(), cols,
              q.data(), cols, 0.0, g.data(), cols);
  double worst = 0;
  for (int i = 0; i < cols; ++i) {
    for (int j = 0; j < cols; ++j) worst = std::max(worst, std::fabs(g[i * cols + j] - (i == j)));
  }
  return worst;
}

double frobenius(const std::vector<double>& a) {
  double n = 0;
  for (double x : a) n += x * x;
  return std::sqrt(n);
}

double frobenius_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(d);
}

template <typename T>
std::string run_svd(gk::SvdMethod method, int batch, int m, int n, const std::string& path,
                    bool check) {
  std::vector<T> a;
  if (!read_file(path, a, static_cast<std::size_t>(batch) * m * n)) return "error reading " + path;
  const int p = std::min(m, n);
  std::vector<T> s(static_cast<std::size_t>(batch) * p), u(static_cast<std::size_t>(batch) * m * p),
      vt(static_cast<std::size_t>(batch) * p * n);
  gk::SvdShape shape;
  shape.batch = batch;
  shape.m = m;
  shape.n = n;
  shape.dtype = std::is_same_v<T, float> ? gk::DType::kF32 : gk::DType::kF64;
  shape.method = method;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<gk::SvdInfo> info = gk::cpu::svd(a.data(), s.data(), u.data(), vt.data(), shape);
  const double secs = seconds_since(start);
  if (!info.ok()) return "error " + std::string(info.status().message());
  double residual = -1, orth = -1;
  if (check) {
    std::vector<double> ad(a.begin(), a.begin() + m * n), us(u.begin(), u.begin() + m * p),
        vd(vt.begin(), vt.begin() + p * n), rec(static_cast<std::size_t>(m) * n);
    orth = std::max(orthogonality(us, m, p), 0.0);
    std::vector<double> v_cols(static_cast<std::size_t>(n) * p);  // V = Vt^T, columns
    for (int k = 0; k < p; ++k) {
      for (int j = 0; j < n; ++j) v_cols[static_cast<std::size_t>(j) * p + k] = vd[k * n + j];
    }
    orth = std::max(orth, orthogonality(v_cols, n, p));
    for (int i = 0; i < m; ++i) {
      for (int k = 0; k < p; ++k) us[static_cast<std::size_t>(i) * p + k] *= s[k];
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, p, 1.0, us.data(), p, vd.data(), n,
                0.0, rec.data(), n);
    residual = frobenius_difference(ad, rec) / std::max(frobenius(ad), 1e-300);
  }
  char line[256];
  std::snprintf(line, sizeof line, "ok %.6f %d %d %.3e %.3e", secs, info->sweeps,
                info->converged ? 1 : 0, residual, orth);
  return line;
}

template <typename T>
std::string run_eigh(int batch, int n, const std::string& path, bool check) {
  std::vector<T> a;
  if (!read_file(path, a, static_cast<std::size_t>(batch) * n * n)) return "error reading " + path;
  std::vector<T> w(static_cast<std::size_t>(batch) * n), v(static_cast<std::size_t>(batch) * n * n);
  gk::EighShape shape;
  shape.batch = batch;
  shape.n = n;
  shape.dtype = std::is_same_v<T, float> ? gk::DType::kF32 : gk::DType::kF64;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<gk::EighInfo> info = gk::cpu::eigh(a.data(), w.data(), v.data(), shape);
  const double secs = seconds_since(start);
  if (!info.ok()) return "error " + std::string(info.status().message());
  double residual = -1, orth = -1;
  if (check) {
    std::vector<double> ad(a.begin(), a.begin() + n * n), vd(v.begin(), v.begin() + n * n),
        av(static_cast<std::size_t>(n) * n), vw(vd);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, ad.data(), n, vd.data(), n,
                0.0, av.data(), n);
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < n; ++k) vw[static_cast<std::size_t>(i) * n + k] *= w[k];
    }
    residual = frobenius_difference(av, vw) / std::max(frobenius(ad), 1e-300);
    orth = orthogonality(vd, n, n);
  }
  char line[256];
  std::snprintf(line, sizeof line, "ok %.6f %.3e %.3e", secs, residual, orth);
  return line;
}

void lapack_gesdd(lapack_int n, double* a, double* s, double* u, double* vt, double* work,
                  lapack_int lwork, lapack_int* iwork, lapack_int* info) {
  LAPACK_dgesdd("S", &n, &n, a, &n, s, u, &n, vt, &n, work, &lwork, iwork, info);
}
void lapack_gesdd(lapack_int n, float* a, float* s, float* u, float* vt, float* work,
                  lapack_int lwork, lapack_int* iwork, lapack_int* info) {
  LAPACK_sgesdd("S", &n, &n, a, &n, s, u, &n, vt, &n, work, &lwork, iwork, info);
}
void lapack_syevd(lapack_int n, double* a, double* w, double* work, lapack_int lwork,
                  lapack_int* iwork, lapack_int liwork, lapack_int* info) {
  LAPACK_dsyevd("V", "U", &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}
void lapack_syevd(lapack_int n, float* a, float* w, float* work, lapack_int lwork,
                  lapack_int* iwork, lapack_int liwork, lapack_int* info) {
  LAPACK_ssyevd("V", "U", &n, a, &n, w, work, &lwork, iwork, &liwork, info);
}

// The LAPACK routine alone: what cpu::svd / cpu::eigh add to it is the input copy, workspace
// allocation and (eigh) the transpose of V.
template <typename T>
std::string run_lapack(const std::string& routine, int n, const std::string& path) {
  std::vector<T> a;
  if (!read_file(path, a, static_cast<std::size_t>(n) * n)) return "error reading " + path;
  std::vector<T> s(n), u(static_cast<std::size_t>(n) * n), vt(u.size());
  std::vector<lapack_int> iwork(8 * static_cast<std::size_t>(n) + 3);
  lapack_int info = 0;
  T query = 0;
  if (routine == "gesdd") {
    lapack_gesdd(n, a.data(), s.data(), u.data(), vt.data(), &query, -1, iwork.data(), &info);
    std::vector<T> work(static_cast<std::size_t>(query) + 1, T(0));
    const auto start = std::chrono::steady_clock::now();
    lapack_gesdd(n, a.data(), s.data(), u.data(), vt.data(), work.data(),
                 static_cast<lapack_int>(work.size()), iwork.data(), &info);
    const double secs = seconds_since(start);
    return info == 0 ? "ok " + std::to_string(secs) : "error gesdd info " + std::to_string(info);
  }
  lapack_int iquery = 0;
  lapack_syevd(n, a.data(), s.data(), &query, -1, &iquery, -1, &info);
  std::vector<T> work(static_cast<std::size_t>(query) + 1, T(0));
  iwork.assign(static_cast<std::size_t>(iquery), 0);
  const auto start = std::chrono::steady_clock::now();
  lapack_syevd(n, a.data(), s.data(), work.data(), static_cast<lapack_int>(work.size()),
               iwork.data(), static_cast<lapack_int>(iwork.size()), &info);
  const double secs = seconds_since(start);
  return info == 0 ? "ok " + std::to_string(secs) : "error syevd info " + std::to_string(info);
}

// THREADS concurrent f64 SVDs of the same n x n matrix, through cpu::svd and then through
// plain dgesdd calls.
std::string run_concurrent(int threads, int n, const std::string& path) {
  std::vector<double> a;
  if (!read_file(path, a, static_cast<std::size_t>(n) * n)) return "error reading " + path;
  auto in_threads = [&](auto&& body) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(body);
    for (std::thread& t : pool) t.join();
    return seconds_since(start);
  };
  const double gated = in_threads([&] {
    std::vector<double> s(n), u(static_cast<std::size_t>(n) * n), vt(u.size());
    gk::SvdShape shape;
    shape.m = shape.n = n;
    (void)gk::cpu::svd(a.data(), s.data(), u.data(), vt.data(), shape);
  });
  const double raw = in_threads([&] {
    std::vector<double> b(a), s(n), u(static_cast<std::size_t>(n) * n), vt(u.size());
    std::vector<lapack_int> iwork(8 * static_cast<std::size_t>(n));
    lapack_int ln = n, lwork = -1, info = 0;
    double query = 0;
    LAPACK_dgesdd("S", &ln, &ln, b.data(), &ln, s.data(), u.data(), &ln, vt.data(), &ln, &query,
                  &lwork, iwork.data(), &info);
    lwork = static_cast<lapack_int>(query);
    std::vector<double> work(static_cast<std::size_t>(lwork));
    LAPACK_dgesdd("S", &ln, &ln, b.data(), &ln, s.data(), u.data(), &ln, vt.data(), &ln,
                  work.data(), &lwork, iwork.data(), &info);
  });
  char line[128];
  std::snprintf(line, sizeof line, "ok %.6f %.6f", gated, raw);
  return line;
}

std::string handle(const std::string& command) {
  std::istringstream in(command);
  std::string op;
  in >> op;
  if (op == "svd") {
    std::string method, dtype, path;
    int batch = 0, m = 0, n = 0, check = 0;
    in >> method >> dtype >> batch >> m >> n >> path >> check;
    if (!in) return "error: svd METHOD DTYPE BATCH M N FILE CHECK";
    const gk::SvdMethod mt = method == "jacobi"  ? gk::SvdMethod::kJacobi
                             : method == "polar" ? gk::SvdMethod::kPolar
                                                 : gk::SvdMethod::kAuto;
    return dtype == "f32" ? run_svd<float>(mt, batch, m, n, path, check != 0)
                          : run_svd<double>(mt, batch, m, n, path, check != 0);
  }
  if (op == "eigh") {
    std::string dtype, path;
    int batch = 0, n = 0, check = 0;
    in >> dtype >> batch >> n >> path >> check;
    if (!in) return "error: eigh DTYPE BATCH N FILE CHECK";
    return dtype == "f32" ? run_eigh<float>(batch, n, path, check != 0)
                          : run_eigh<double>(batch, n, path, check != 0);
  }
  if (op == "lapack") {
    std::string routine, dtype, path;
    int n = 0;
    in >> routine >> dtype >> n >> path;
    if (!in || (routine != "gesdd" && routine != "syevd")) {
      return "error: lapack gesdd|syevd DTYPE N FILE";
    }
    return dtype == "f32" ? run_lapack<float>(routine, n, path)
                          : run_lapack<double>(routine, n, path);
  }
  if (op == "concurrent") {
    int threads = 0, n = 0;
    std::string path;
    in >> threads >> n >> path;
    if (!in) return "error: concurrent THREADS N FILE";
    return run_concurrent(threads, n, path);
  }
  return "error: unknown command " + op;
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::cout << handle(line) << std::endl;
  }
  return 0;
}
