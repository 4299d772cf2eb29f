// SPDX-License-Identifier: Apache-2.0
// What only the CUDA backend does: device-resident results and uploads, phase times, where each
// SVD method runs, out-of-memory per request, and concurrent requests on distinct lanes. The
// operations' contracts, on every backend, are in test_backend_contract.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "engine/cpu_backend.hpp"
#include "engine/cuda/cuda_backend.hpp"
#include "support/gpu.hpp"

namespace gcompute::server {
namespace {

std::mt19937_64& rng() {
  static std::mt19937_64 r{std::random_device{}()};
  return r;
}

Matrix random_f32(std::int64_t batch, std::int64_t rows, std::int64_t cols, float lo = -1,
                  float hi = 1) {
  Matrix m = *allocate_matrix(MatrixDesc{DType::kF32, batch, rows, cols});
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = m.as_mutable<float>();
  for (std::uint64_t i = 0; i < m.desc.elements(); ++i) p[i] = d(rng());
  return m;
}

Matrix random_f64(std::int64_t rows, std::int64_t cols) {
  Matrix m = *allocate_matrix(MatrixDesc{DType::kF64, 1, rows, cols});
  std::normal_distribution<double> d;
  double* p = m.as_mutable<double>();
  for (std::uint64_t i = 0; i < m.desc.elements(); ++i) p[i] = d(rng());
  return m;
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GC_REQUIRE_GPU();
    BackendOptions o;
    o.lanes_per_device = 4;
    o.pinned_pool_bytes = 64ull << 20;  // small: large transfers must stream through it
    auto b = cuda::CudaBackend::create(o);
    ASSERT_TRUE(b.ok()) << b.status();
    gpu_ = *std::move(b);
  }
  std::unique_ptr<cuda::CudaBackend> gpu_;
  CpuBackend cpu_{2};
};

TEST_F(CudaBackendTest, ResultsAndUploadsStayOnTheDeviceUntilAskedFor) {
  Matrix a = random_f32(1, 513, 257);
  JobContext j;
  j.results_stay_on_server = true;
  auto g = gpu_->transpose(a, j);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(j.device, "cuda:0");
  EXPECT_FALSE(g->on_host());
  ASSERT_TRUE(g->device);
  EXPECT_GT(j.times.h2d_seconds, 0);
  EXPECT_EQ(j.times.d2h_seconds, 0);
  // Feeding the device result back in needs no host-to-device copy; its result comes back.
  JobContext j2;
  auto back = gpu_->transpose(*g, j2);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->on_host());
  EXPECT_EQ(j2.times.h2d_seconds, 0);
  EXPECT_GT(j2.times.d2h_seconds, 0);

  // An upload lands on the device: the stored matrix has no host bytes until asked for.
  auto sink = gpu_->begin_upload(a.desc);
  ASSERT_TRUE(sink.ok()) << sink.status();
  ASSERT_TRUE((*sink)->write(0, a.data->data(), a.desc.bytes()).ok());
  auto m = (*sink)->finish();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->on_host());
  EXPECT_TRUE(m->device);
}

TEST_F(CudaBackendTest, EverySvdMethodRunsOnTheGpuAndTheyAgree) {
  // Jacobi, QDWH and AUTO (QDWH here: min(m, n) > 64) all run on the device, and the job's
  // device says so; their singular values agree.
  kernels::SvdShape s;
  s.m = 90;
  s.n = 70;
  s.dtype = DType::kF64;
  Matrix a = random_f64(s.m, s.n);
  std::vector<double> first;
  for (const auto method :
       {kernels::SvdMethod::kAuto, kernels::SvdMethod::kJacobi, kernels::SvdMethod::kPolar}) {
    SCOPED_TRACE(kernels::svd_method_name(method));
    s.method = method;
    JobContext j;
    auto g = gpu_->svd(a, s, j);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(j.device, "cuda:0");
    EXPECT_TRUE(g->info.converged);
    ASSERT_TRUE(gpu_->ensure_on_host(g->s).ok());
    const double* values = g->s.as<double>();
    if (first.empty()) {
      first.assign(values, values + s.n);
      continue;
    }
    for (std::int64_t k = 0; k < s.n; ++k) {
      EXPECT_NEAR(values[k], first[k], 1e-12 * first[0]) << "s[" << k << "]";
    }
  }
}

TEST_F(CudaBackendTest, UploadTakesDeviceMemoryAsChunksArrive) {
  const auto device_used = [this] {
    std::uint64_t used = 0;
    for (const auto& d : gpu_->resource_stats().devices) used += d.used_bytes;
    return used;
  };
  Matrix a = random_f32(1, 8000, 8000);  // 256 MB
  const std::uint64_t total = a.desc.bytes(), chunk = 4 << 20;
  const std::uint64_t before = device_used();
  auto sink = gpu_->begin_upload(a.desc);
  ASSERT_TRUE(sink.ok()) << sink.status();
  EXPECT_EQ(device_used(), before) << "a header alone took device memory";
  ASSERT_TRUE((*sink)->write(0, a.data->data(), 1 << 20).ok());
  EXPECT_LE(device_used() - before, std::uint64_t{16} << 20) << "after the first MiB";
  // The rest out of order: the buffer grows under writes landing anywhere in it.
  std::vector<std::uint64_t> offsets;
  for (std::uint64_t o = 1 << 20; o < total; o += chunk) offsets.push_back(o);
  std::shuffle(offsets.begin(), offsets.end(), rng());
  for (std::uint64_t o : offsets) {
    ASSERT_TRUE((*sink)->write(o, a.data->data() + o, std::min(chunk, total - o)).ok());
  }
  auto m = (*sink)->finish();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_GE(device_used() - before, total);
  ASSERT_TRUE(gpu_->ensure_on_host(*m).ok());
  EXPECT_EQ(std::memcmp(m->bytes(), a.bytes(), total), 0);
}

TEST_F(CudaBackendTest, OutOfMemoryIsPerRequest) {
  kernels::MatmulShape s;
  s.m = 400000;
  s.n = 400000;  // C would be 640 GB
  s.k = 1;
  Matrix a = random_f32(1, s.m, 1), b = random_f32(1, 1, s.n);
  JobContext j;
  auto g = gpu_->matmul(a, b, nullptr, s, j);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kResourceExhausted) << g.status();
  // The next request succeeds.
  Matrix x = random_f32(1, 64, 64);
  JobContext j2;
  auto ok = gpu_->transpose(x, j2);
  EXPECT_TRUE(ok.ok()) << ok.status();
  const ResourceStats stats = gpu_->resource_stats();
  ASSERT_EQ(stats.devices.size(), gpu_->devices().size());
  EXPECT_GT(stats.devices[0].total_bytes, 0u);
  EXPECT_EQ(stats.pinned_used_bytes, 0u);  // every staging block returned
}

TEST_F(CudaBackendTest, ConcurrentSvdsOfDifferentShapesAllLaunch) {
  // Shapes whose kernels need different dynamic shared memory (small-path sizes and both
  // blocked widths) on four lanes at once: each request once set the kernel's shared-memory
  // limit to its own size, so another request could lower it just before a launch
  // (cudaErrorInvalidValue in 152 of 1.78 million soak calls).
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {40, 30}, {64, 64}, {20, 7}, {200, 150}, {300, 290}, {33, 33}};
  std::vector<Matrix> inputs;
  for (auto [m, n] : shapes) inputs.push_back(random_f64(m, n));
  std::vector<Matrix> expected;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    kernels::SvdShape s{};
    s.m = shapes[i].first;
    s.n = shapes[i].second;
    s.dtype = DType::kF64;
    JobContext j;
    auto h = cpu_.svd(inputs[i], s, j);
    ASSERT_TRUE(h.ok()) << h.status();
    expected.push_back(std::move(h->s));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 60; ++r) {
        const std::size_t i = static_cast<std::size_t>(t + r) % shapes.size();
        kernels::SvdShape s{};
        s.m = shapes[i].first;
        s.n = shapes[i].second;
        s.dtype = DType::kF64;
        s.compute_uv = (r % 2) == 0;
        JobContext j;
        auto g = gpu_->svd(inputs[i], s, j);
        if (!g.ok()) {
          ADD_FAILURE() << s.m << "x" << s.n << ": " << g.status();
          ++failures;
          continue;
        }
        const double* got = g->s.as<double>();
        const double* want = expected[i].as<double>();
        for (std::int64_t k = 0; k < std::min(s.m, s.n); ++k) {
          if (std::abs(got[k] - want[k]) > 1e-10 * want[0]) {
            ADD_FAILURE() << s.m << "x" << s.n << " value " << k << ": " << got[k] << " vs "
                          << want[k];
            ++failures;
            break;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(CudaBackendTest, ConcurrentRequestsRunOnDistinctLanesAtOnce) {
  // A 256x256 SVD keeps the GPU busy for ~10 ms with only a few blocks per launch, so lanes
  // running together finish in much less than the sum of their times; if requests were
  // serialised, the concurrent run would take as long as the serial one.
  kernels::SvdShape s;
  s.m = 256;
  s.n = 256;
  s.dtype = DType::kF32;
  const int kJobs = 8;
  std::vector<Matrix> inputs;
  for (int i = 0; i < kJobs; ++i) inputs.push_back(random_f32(1, 256, 256));
  auto run = [&](int i, JobContext& j) { return gpu_->svd(inputs[i], s, j).status(); };
  {  // warm-up
    JobContext j;
    ASSERT_TRUE(run(0, j).ok());
  }
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (int i = 0; i < kJobs; ++i) {
    JobContext j;
    ASSERT_TRUE(run(i, j).ok());
  }
  const double serial = std::chrono::duration<double>(Clock::now() - t0).count();

  struct Span {
    Clock::time_point begin, end;
    int lane;
    std::string device;
  };
  std::vector<Span> spans(kJobs);
  const auto t1 = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < kJobs; ++i) {
    threads.emplace_back([&, i] {
      JobContext j;
      spans[i].begin = Clock::now();
      EXPECT_TRUE(run(i, j).ok());
      spans[i].end = Clock::now();
      spans[i].lane = j.lane;
      spans[i].device = j.device;
    });
  }
  for (auto& t : threads) t.join();
  const double concurrent = std::chrono::duration<double>(Clock::now() - t1).count();

  int max_overlap = 0;
  std::set<std::pair<std::string, int>> lanes;
  std::set<std::string> devices;
  for (const Span& a : spans) {
    lanes.insert({a.device, a.lane});
    devices.insert(a.device);
    int overlap = 0;
    for (const Span& b : spans) overlap += (b.begin < a.end && a.begin < b.end) ? 1 : 0;
    max_overlap = std::max(max_overlap, overlap);
  }
  std::printf("serial %.2f ms, concurrent %.2f ms, lanes used %zu on %zu GPUs, max overlap %d\n",
              serial * 1e3, concurrent * 1e3, lanes.size(), devices.size(), max_overlap);
  EXPECT_GE(lanes.size(), 2u);
  // Lanes go to the least-loaded device first, so with several GPUs every one of them serves.
  EXPECT_EQ(devices.size(), std::min<std::size_t>(gpu_->devices().size(), kJobs));
  EXPECT_GE(max_overlap, 2);
  EXPECT_LT(concurrent, 0.7 * serial) << "requests did not run concurrently";
}

}  // namespace
}  // namespace gcompute::server
