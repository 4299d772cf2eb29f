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
#include "engine/cuda/pinned_transpose.hpp"
#include "gcompute/kernels/cuda/resources.hpp"
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

// A GPU idle between calls answers a small transpose slower than the host: operands of at
// most kHostTransposeBytes with host bytes go to the host when the result returns there, and
// small uploads keep host bytes for it. Larger ones, and results that stay, run on the GPU.
TEST_F(CudaBackendTest, SmallTransposesWithHostBytesRunOnTheHost) {
  auto check = [&](const Matrix& a, bool stay, const std::string& where) {
    SCOPED_TRACE(::testing::Message() << a.desc.rows << "x" << a.desc.cols << " stay " << stay);
    JobContext j;
    j.results_stay_on_server = stay;
    auto at = gpu_->transpose(a, j);
    ASSERT_TRUE(at.ok()) << at.status();
    EXPECT_EQ(j.device, where);
    Matrix host = *at;
    ASSERT_TRUE(gpu_->ensure_on_host(host).ok());
    Matrix source = a;
    ASSERT_TRUE(gpu_->ensure_on_host(source).ok());
    const float* in = source.as<float>();
    const float* out = host.as<float>();
    for (std::int64_t i = 0; i < a.desc.rows; ++i) {
      for (std::int64_t k = 0; k < a.desc.cols; ++k) {
        ASSERT_EQ(out[k * a.desc.rows + i], in[i * a.desc.cols + k]) << i << ", " << k;
      }
    }
  };
  constexpr std::int64_t kSide = 128;  // 64 KiB of f32: the largest that runs on the host
  static_assert(kSide * kSide * 4 == cuda::CudaBackend::kHostTransposeBytes);
  check(random_f32(1, kSide, kSide), false, "cpu");
  check(random_f32(1, 1, 1), false, "cpu");
  check(random_f32(1, 3, 5461), false, "cpu");  // 65532 bytes
  check(random_f32(1, kSide, kSide + 1), false, "cuda:0");
  check(random_f32(1, kSide, kSide), true, "cuda:0");
  // Uploads: a small one keeps host bytes beside its device copy; a larger one has none.
  for (const std::int64_t cols : {kSide, kSide + 1}) {
    const Matrix a = random_f32(1, kSide, cols);
    auto sink = gpu_->begin_upload(a.desc);
    ASSERT_TRUE(sink.ok()) << sink.status();
    const std::uint64_t half = a.desc.bytes() / 2;
    const char* bytes = reinterpret_cast<const char*>(a.bytes());
    ASSERT_TRUE((*sink)->write(half, bytes + half, a.desc.bytes() - half).ok());
    ASSERT_TRUE((*sink)->write(0, bytes, half).ok());
    auto stored = (*sink)->finish();
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_NE(stored->device, nullptr);
    const bool small = cols == kSide;
    EXPECT_EQ(stored->on_host(), small);
    if (small) {
      EXPECT_EQ(std::memcmp(stored->bytes(), a.bytes(), a.desc.bytes()), 0);
    }
    check(*stored, false, small ? "cpu" : "cuda:0");
  }
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

// An allocation that fails asks the memory-pressure handler to release what the server keeps
// only to go faster (the APSP cache), then tries once more; without anything released it is
// RESOURCE_EXHAUSTED as before. The test's own allocation stands for the cache's memory.
TEST_F(CudaBackendTest, OutOfMemoryReleasesCachesAndTriesOnceMore) {
  cudaMemPool_t pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);  // the pool's idle reserve back to the GPU
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  constexpr std::size_t kLeft = std::size_t{1} << 30;
  ASSERT_GT(free_bytes, 8 * kLeft);
  const std::size_t held = free_bytes - kLeft;
  // Freed however the test ends: a failed assertion must not leave the GPU full.
  struct Held {
    void* ptr = nullptr;
    ~Held() {
      if (ptr != nullptr) (void)cudaFree(ptr);
    }
  } cached;
  ASSERT_EQ(cudaMalloc(&cached.ptr, held), cudaSuccess);
  int calls = 0;
  bool release = false;
  gpu_->set_memory_pressure_handler([&]() -> std::uint64_t {
    ++calls;
    if (!release || cached.ptr == nullptr) return 0;
    EXPECT_EQ(cudaFree(cached.ptr), cudaSuccess);
    cached.ptr = nullptr;
    return held;
  });
  // C = a (n x 1) times b (1 x n), 2 GiB, kept on the device: more than the 1 GiB left.
  kernels::MatmulShape s;
  s.m = s.n = 23200;
  s.k = 1;
  const Matrix a = random_f32(1, s.m, 1), b = random_f32(1, 1, s.n);
  {
    JobContext j;
    j.results_stay_on_server = true;
    auto refused = gpu_->matmul(a, b, nullptr, s, j);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
    EXPECT_EQ(calls, 1);
  }
  release = true;
  JobContext j;
  j.results_stay_on_server = true;
  auto c = gpu_->matmul(a, b, nullptr, s, j);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cached.ptr, nullptr);
  // Spot checks against the product on the host.
  Matrix host = *c;
  ASSERT_TRUE(gpu_->ensure_on_host(host).ok());
  for (const std::int64_t i : {std::int64_t{0}, s.m / 3, s.m - 1}) {
    for (const std::int64_t k : {std::int64_t{0}, s.n / 2, s.n - 1}) {
      EXPECT_FLOAT_EQ(host.as<float>()[i * s.n + k], a.as<float>()[i] * b.as<float>()[k]);
    }
  }
  gpu_->set_memory_pressure_handler({});
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

struct PinnedCase {
  kernels::TransposeShape shape;
  std::uint64_t target_bytes;
  std::uint64_t min_row_bytes;
};

// Ragged shapes (1x1, 1xn, nx1, primes, batches) cut into tiles of several sizes: strided copies
// at both ends (min_row_bytes small) and contiguous ones (sides not cut).
std::vector<PinnedCase> pinned_cases() {
  std::vector<PinnedCase> cases;
  for (const kernels::TransposeShape& shape :
       std::vector<kernels::TransposeShape>{{1, 1, 1, 4},
                                            {1, 1, 1000, 4},
                                            {1, 1000, 1, 8},
                                            {1, 997, 1009, 4},
                                            {3, 37, 530, 8},
                                            {5, 64, 64, 2},
                                            {1, 4099, 3, 1},
                                            {2, 600, 700, 4},
                                            {7, 0, 5, 4},
                                            {0, 3, 3, 4}}) {
    for (std::uint64_t target :
         {std::uint64_t{1} << 10, std::uint64_t{64} << 10, std::uint64_t{32} << 20}) {
      for (std::uint64_t min_row : {std::uint64_t{64}, cuda::kMinRowBytes}) {
        cases.push_back({shape, target, min_row});
      }
    }
  }
  return cases;
}

::testing::Message describe(const PinnedCase& c) {
  const kernels::TransposeShape& s = c.shape;
  return ::testing::Message() << s.batch << " x " << s.rows << "x" << s.cols << " of "
                              << s.element_bytes << " B, target " << c.target_bytes
                              << ", rows of at least " << c.min_row_bytes;
}

// Tiles cover every element once: whole matrices where one fits the target, else equal tiles
// whose cut sides are at least min_row_bytes long.
TEST(PinnedTransposePlan, TilesCoverEveryElementOnce) {
  for (const PinnedCase& c : pinned_cases()) {
    const kernels::TransposeShape& s = c.shape;
    SCOPED_TRACE(describe(c));
    const cuda::TransposeTiles plan =
        cuda::plan_transpose_tiles(s, c.target_bytes, c.min_row_bytes);
    if (s.batch == 0 || s.rows == 0 || s.cols == 0) {
      EXPECT_TRUE(plan.tiles.empty());
      continue;
    }
    std::vector<int> covered(static_cast<std::size_t>(s.batch * s.rows * s.cols), 0);
    const std::uint64_t matrix_bytes =
        static_cast<std::uint64_t>(s.rows * s.cols) * s.element_bytes;
    std::set<std::int64_t> tile_rows, tile_cols;
    for (const cuda::TransposeTile& t : plan.tiles) {
      ASSERT_GE(t.matrix, 0);
      ASSERT_GE(t.matrices, 1);
      ASSERT_LE(t.matrix + t.matrices, s.batch);
      ASSERT_GE(t.row0, 0);
      ASSERT_GE(t.rows, 1);
      ASSERT_LE(t.row0 + t.rows, s.rows);
      ASSERT_GE(t.col0, 0);
      ASSERT_GE(t.cols, 1);
      ASSERT_LE(t.col0 + t.cols, s.cols);
      EXPECT_LE(t.bytes(s), plan.max_tile_bytes);
      if (t.matrices > 1 || matrix_bytes <= c.target_bytes) {
        EXPECT_TRUE(t.full_rows(s) && t.full_cols(s));
      }
      if (!t.full_cols(s)) {
        EXPECT_GE(static_cast<std::uint64_t>(t.rows) * s.element_bytes, c.min_row_bytes);
      }
      if (!t.full_rows(s)) {
        EXPECT_GE(static_cast<std::uint64_t>(t.cols) * s.element_bytes, c.min_row_bytes);
      }
      tile_rows.insert(t.rows);
      tile_cols.insert(t.cols);
      for (std::int64_t m = t.matrix; m < t.matrix + t.matrices; ++m) {
        for (std::int64_t r = t.row0; r < t.row0 + t.rows; ++r) {
          for (std::int64_t col = t.col0; col < t.col0 + t.cols; ++col) {
            ++covered[static_cast<std::size_t>((m * s.rows + r) * s.cols + col)];
          }
        }
      }
    }
    for (std::size_t i = 0; i < covered.size(); ++i) ASSERT_EQ(covered[i], 1) << "element " << i;
    // Equal tiles: sides differ by at most one element.
    EXPECT_LE(*tile_rows.rbegin() - *tile_rows.begin(), 1);
    EXPECT_LE(*tile_cols.rbegin() - *tile_cols.begin(), 1);
  }
}

// Tiles uploaded on one stream, transposed and downloaded on the other, between page-locked
// buffers: byte for byte the plain loop, nothing written past the result.
TEST(PinnedTranspose, TilesBetweenPinnedBuffersMatchThePlainLoop) {
  GC_REQUIRE_GPU();
  auto resources = kernels::cuda::Resources::create(0);
  ASSERT_TRUE(resources.ok()) << resources.status();
  const kernels::cuda::Context ctx = resources->context();
  auto events = cuda::make_staging_events();
  ASSERT_TRUE(events.ok()) << events.status();
  for (const PinnedCase& c : pinned_cases()) {
    const kernels::TransposeShape& s = c.shape;
    SCOPED_TRACE(describe(c));
    const std::size_t e = s.element_bytes;
    const std::size_t bytes = static_cast<std::size_t>(s.batch * s.rows * s.cols) * e;
    constexpr std::size_t kTail = 64;
    void* src_memory = nullptr;
    void* dst_memory = nullptr;
    ASSERT_EQ(cudaMallocHost(&src_memory, bytes + 1), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&dst_memory, bytes + kTail), cudaSuccess);
    auto* src = static_cast<std::byte*>(src_memory);
    auto* dst = static_cast<std::byte*>(dst_memory);
    for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<std::byte>(rng()());
    std::memset(dst, 0xA5, bytes + kTail);
    const cuda::TransposeTiles plan =
        cuda::plan_transpose_tiles(s, c.target_bytes, c.min_row_bytes);
    cuda::TransposeSlots slots;
    std::vector<void*> device;
    for (std::size_t slot = 0; slot < 2 && !plan.tiles.empty(); ++slot) {
      for (void** p : {&slots.in[slot], &slots.out[slot]}) {
        ASSERT_EQ(cudaMalloc(p, plan.max_tile_bytes), cudaSuccess);
        ASSERT_EQ(cudaMemset(*p, 0xFF, plan.max_tile_bytes), cudaSuccess);  // poison
        device.push_back(*p);
      }
    }
    const absl::Status st =
        cuda::transpose_pinned_host(ctx, ctx.priority_stream, *events, slots, src, dst, s, plan);
    EXPECT_TRUE(st.ok()) << st;
    for (std::int64_t m = 0; m < s.batch && st.ok(); ++m) {
      for (std::int64_t i = 0; i < s.rows; ++i) {
        for (std::int64_t j = 0; j < s.cols; ++j) {
          const std::byte* want = src + ((m * s.rows + i) * s.cols + j) * e;
          const std::byte* got = dst + ((m * s.cols + j) * s.rows + i) * e;
          ASSERT_EQ(std::memcmp(want, got, e), 0) << "matrix " << m << " row " << i << " col " << j;
        }
      }
    }
    for (std::size_t i = bytes; i < bytes + kTail; ++i) {
      ASSERT_EQ(dst[i], std::byte{0xA5}) << "byte " << i << " past the result";
    }
    for (void* p : device) EXPECT_EQ(cudaFree(p), cudaSuccess);
    EXPECT_EQ(cudaFreeHost(src), cudaSuccess);
    EXPECT_EQ(cudaFreeHost(dst), cudaSuccess);
  }
}

}  // namespace
}  // namespace gcompute::server
