// SPDX-License-Identifier: Apache-2.0
// Shared-memory regions through raw stubs against an in-process server: operands read from
// and results written into a client's POSIX shared memory, checked against plain loops on
// fresh random inputs (ragged shapes, odd offsets, output areas poisoned first), and every
// refusal with its code and the field it names. Built twice: on the CPU backend, and as
// test_service_shared_memory_gpu (GCOMPUTE_SHM_TEST_CUDA, label gpu) on the CUDA backend,
// where regions are page-locked and copies go straight between them and the device.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "service_fixture.hpp"
#include "support/gpu.hpp"
#include "support/ipc_exporter.hpp"
#include "support/random.hpp"
#include "support/shm_object.hpp"

namespace gcompute::service_test {
namespace {

using gcompute::testing::IpcExporter;
using gcompute::testing::Rng;
using gcompute::testing::ShmObject;
constexpr std::byte kPoison{0xA5};
#ifdef GCOMPUTE_SHM_TEST_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif

ServerOptions backend_options() {
  ServerOptions o = test_options();
  o.device = kCuda ? "cuda" : "cpu";
  return o;
}

class ServiceSharedMemory : public ::testing::Test {
 public:
  void SetUp() override {
    if (kCuda) GC_REQUIRE_GPU();
    ts_ = start_server(backend_options());
    ASSERT_NE(ts_, nullptr);
  }
  v1::Compute::Stub& stub() { return *ts_->stub; }

  grpc::Status register_region(const std::string& name, std::uint64_t offset,
                               std::uint64_t byte_size, v1::SharedMemoryRegion* out) {
    return register_device("", 0, offset, byte_size, out, name);
  }
  std::string must_register(const ShmObject& shm) {
    v1::SharedMemoryRegion region;
    EXPECT_TRUE(is_ok(register_region(shm.name(), 0, 0, &region)));
    EXPECT_EQ(region.byte_size(), shm.bytes());
    EXPECT_EQ(region.name(), shm.name());
    EXPECT_EQ(region.device_registered(), kCuda);  // page-locked for the GPU's copies
    return region.region_id();
  }
  grpc::Status register_device(const std::string& handle, int device, std::uint64_t offset,
                               std::uint64_t byte_size, v1::SharedMemoryRegion* out,
                               const std::string& name = "") {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::RegisterSharedMemoryRequest req;
    req.set_name(name);
    req.set_cuda_ipc_handle(handle);
    req.set_cuda_device(device);
    req.set_offset(offset);
    req.set_byte_size(byte_size);
    v1::RegisterSharedMemoryResponse resp;
    grpc::Status st = stub().RegisterSharedMemory(&ctx, req, &resp);
    if (out != nullptr) *out = resp.region();
    return st;
  }
  grpc::Status unregister_region(const std::string& id) {
    grpc::ClientContext ctx;
    deadline(ctx);
    v1::UnregisterSharedMemoryRequest req;
    req.set_region_id(id);
    v1::UnregisterSharedMemoryResponse resp;
    return stub().UnregisterSharedMemory(&ctx, req, &resp);
  }
  grpc::Status transpose(const v1::TransposeRequest& req, v1::TransposeResponse* resp) {
    grpc::ClientContext ctx;
    deadline(ctx);
    return stub().Transpose(&ctx, req, resp);
  }

  std::unique_ptr<TestServer> ts_;
};

v1::SharedMemoryRef shm_ref(const std::string& region, std::uint64_t offset, std::int64_t batch,
                            std::int64_t rows, std::int64_t cols, v1::DType dtype) {
  v1::SharedMemoryRef r;
  r.set_region_id(region);
  r.set_offset(offset);
  r.set_batch(batch);
  r.set_rows(rows);
  r.set_cols(cols);
  r.set_dtype(dtype);
  return r;
}

void to_shared_memory(v1::OutputOptions* out, const std::string& region, std::uint64_t offset) {
  out->set_placement(v1::OutputOptions::PLACEMENT_SHARED_MEMORY);
  out->mutable_shared_memory()->set_region_id(region);
  out->mutable_shared_memory()->set_offset(offset);
}

template <typename T>
void check_transpose_in_place_of(ServiceSharedMemory& t, const ShmObject& shm,
                                 const std::string& region, Rng& rng, std::int64_t batch,
                                 std::int64_t rows, std::int64_t cols, std::uint64_t in_offset,
                                 v1::DType dtype) {
  SCOPED_TRACE(::testing::Message() << batch << " x " << rows << "x" << cols << " "
                                    << v1::DType_Name(dtype) << " at offset " << in_offset);
  const std::int64_t b = batch == 0 ? 1 : batch;
  const std::uint64_t n = static_cast<std::uint64_t>(b * rows * cols);
  std::vector<T> in(n);
  for (T& x : in) x = static_cast<T>(rng.uniform(-1000, 1000));
  if (n > 0)
    std::memcpy(shm.data() + in_offset, in.data(), n * sizeof(T));  // in.data() may be null
  const std::uint64_t out_at = in_offset + n * sizeof(T) + 8;       // not a multiple of 256
  ASSERT_LE(out_at + n * sizeof(T) + 256, shm.bytes());
  std::memset(shm.data() + out_at, static_cast<int>(kPoison), shm.bytes() - out_at);

  v1::TransposeRequest req;
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, in_offset, batch, rows, cols, dtype);
  to_shared_memory(req.mutable_output(), region, out_at);
  v1::TransposeResponse resp;
  ASSERT_TRUE(is_ok(t.transpose(req, &resp)));
  ASSERT_TRUE(resp.at().has_shared_memory());
  const v1::SharedMemoryRef& got = resp.at().shared_memory();
  EXPECT_EQ(got.region_id(), region);
  EXPECT_EQ(got.offset() % 256, 0u);
  EXPECT_GE(got.offset(), out_at);
  EXPECT_LT(got.offset(), out_at + 256);
  EXPECT_EQ(got.rows(), cols);
  EXPECT_EQ(got.cols(), rows);
  EXPECT_EQ(got.batch(), b);
  EXPECT_EQ(got.dtype(), dtype);
  const T* out = shm.at<T>(got.offset());
  for (std::int64_t k = 0; k < b; ++k) {
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        ASSERT_EQ(out[(k * cols + j) * rows + i], in[(k * rows + i) * cols + j])
            << "batch " << k << " row " << i << " col " << j;
      }
    }
  }
  // Nothing beyond the result was written.
  const std::uint64_t end = got.offset() + n * sizeof(T);
  for (std::uint64_t i = end; i < std::min(end + 64, shm.bytes()); ++i) {
    ASSERT_EQ(shm.data()[i], kPoison) << "byte " << i;
  }
}

TEST_F(ServiceSharedMemory, TransposeReadsAndWritesTheRegion) {
  ShmObject shm(8 << 20);
  const std::string region = must_register(shm);
  Rng rng(gcompute::testing::test_seed());
  for (auto [batch, rows, cols] : std::vector<std::array<std::int64_t, 3>>{
           {0, 1, 1}, {0, 1, 7}, {0, 37, 53}, {3, 5, 129}, {0, 256, 33}, {2, 0, 4}}) {
    for (std::uint64_t offset : {0u, 4u, 1000u}) {
      check_transpose_in_place_of<float>(*this, shm, region, rng, batch, rows, cols, offset,
                                         v1::DTYPE_F32);
      check_transpose_in_place_of<double>(*this, shm, region, rng, batch, rows, cols, offset * 2,
                                          v1::DTYPE_F64);
      check_transpose_in_place_of<std::int32_t>(*this, shm, region, rng, batch, rows, cols, offset,
                                                v1::DTYPE_I32);
    }
  }
}

// On the GPU a large transpose between pinned regions writes tiles of its result while it still
// reads the operand. Where the result may overlap the operand (in the same region, or in a
// second region mapping the same object) the operand must still be read whole first; past the
// operand, a second mapping of the object takes the tiled path. Each case: the plain loop, and
// on the GPU the path taken (the read-whole-first path books an upload; the tiled one, whose
// copies overlap the kernel, books it all as compute).
TEST_F(ServiceSharedMemory, AResultOverlappingItsOperandIsStillItsTranspose) {
  constexpr std::int64_t rows = 4096, cols = 4093;  // 64 MiB of f32: 2 x 2 tiles on a GPU
  constexpr std::uint64_t bytes = rows * cols * 4;
  constexpr std::uint64_t second_at = 4 << 20;  // the second region's start in the object
  ShmObject shm(3 * bytes);
  const std::string whole = must_register(shm);
  v1::SharedMemoryRegion second;
  ASSERT_TRUE(is_ok(register_region(shm.name(), second_at, 0, &second)));
  Rng rng(gcompute::testing::test_seed());
  const std::vector<float> in = gcompute::testing::random_uniform<float>(rng, rows * cols);
  struct Case {
    const char* what;
    std::string region;
    std::uint64_t region_at;  ///< the region's start in the object
    std::uint64_t offset;     ///< the result's, in the region
    bool tiled;               ///< the path expected on the GPU
  };
  for (const Case& c :
       {Case{"the operand's region, overlapping", whole, 0, 256, false},
        Case{"a second mapping, overlapping", second.region_id(), second_at, 0, false},
        Case{"a second mapping, past the operand", second.region_id(), second_at, bytes, true}}) {
    SCOPED_TRACE(c.what);
    std::memcpy(shm.data(), in.data(), bytes);
    std::memset(shm.data() + bytes, static_cast<int>(kPoison), shm.bytes() - bytes);
    v1::TransposeRequest req;
    *req.mutable_a()->mutable_shared_memory() = shm_ref(whole, 0, 0, rows, cols, v1::DTYPE_F32);
    to_shared_memory(req.mutable_output(), c.region, c.offset);
    v1::TransposeResponse resp;
    ASSERT_TRUE(is_ok(transpose(req, &resp)));
    ASSERT_EQ(resp.at().shared_memory().offset(), c.offset);
    if (kCuda) {
      EXPECT_EQ(resp.stats().h2d_seconds() == 0, c.tiled) << resp.stats().ShortDebugString();
    }
    const float* out = shm.at<float>(c.region_at + c.offset);
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t j = 0; j < cols; ++j) {
        if (out[j * rows + i] != in[i * cols + j]) {
          FAIL() << "row " << i << " col " << j << ": " << out[j * rows + i] << " vs "
                 << in[i * cols + j];
        }
      }
    }
    const std::uint64_t end = c.region_at + c.offset + bytes;
    for (std::uint64_t i = end; i < std::min(end + 64, shm.bytes()); ++i) {
      ASSERT_EQ(shm.data()[i], kPoison) << "byte " << i;
    }
  }
}

TEST_F(ServiceSharedMemory, MatMulTakesOperandsFromTheRegionAndAnswersInline) {
  ShmObject shm(1 << 20);
  const std::string region = must_register(shm);
  Rng rng(gcompute::testing::test_seed());
  const std::int64_t m = 13, k = 29, n = 7;
  std::vector<double> a(m * k), b(k * n);
  for (double& x : a) x = rng.uniform(-1, 1);
  for (double& x : b) x = rng.uniform(-1, 1);
  const std::uint64_t b_at = 4096 + 24;
  std::memcpy(shm.data(), a.data(), a.size() * 8);
  std::memcpy(shm.data() + b_at, b.data(), b.size() * 8);
  v1::MatMulRequest req;
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 0, 0, m, k, v1::DTYPE_F64);
  *req.mutable_b()->mutable_shared_memory() = shm_ref(region, b_at, 0, k, n, v1::DTYPE_F64);
  v1::MatMulResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub().MatMul(&ctx, req, &resp)));
  ASSERT_TRUE(resp.c().has_inline_());
  const std::vector<double> c = values_of<double>(resp.c().inline_());
  ASSERT_EQ(c.size(), static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      long double want = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        want += static_cast<long double>(a[i * k + p]) * b[p * n + j];
      }
      EXPECT_NEAR(c[i * n + j], static_cast<double>(want), 1e-13) << i << "," << j;
    }
  }
}

TEST_F(ServiceSharedMemory, SvdResultsLieOneAfterAnotherAligned) {
  ShmObject shm(1 << 20);
  const std::string region = must_register(shm);
  Rng rng(gcompute::testing::test_seed());
  const std::int64_t rows = 11, cols = 5;
  std::vector<double> a(rows * cols);
  for (double& x : a) x = rng.uniform(-1, 1);
  std::memcpy(shm.data(), a.data(), a.size() * 8);
  std::memset(shm.data() + 4096, static_cast<int>(kPoison), shm.bytes() - 4096);
  v1::SvdRequest req;
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 0, 0, rows, cols, v1::DTYPE_F64);
  to_shared_memory(req.mutable_output(), region, 4096 + 1);
  v1::SvdResponse resp;
  grpc::ClientContext ctx;
  deadline(ctx);
  ASSERT_TRUE(is_ok(stub().Svd(&ctx, req, &resp)));
  ASSERT_TRUE(resp.s().has_shared_memory() && resp.u().has_shared_memory() &&
              resp.vt().has_shared_memory());
  const auto& s = resp.s().shared_memory();
  const auto& u = resp.u().shared_memory();
  const auto& vt = resp.vt().shared_memory();
  EXPECT_EQ(s.offset(), 4096u + 256);
  EXPECT_EQ(u.offset(), (s.offset() + cols * 8 + 255) / 256 * 256);
  EXPECT_EQ(vt.offset(), (u.offset() + rows * cols * 8 + 255) / 256 * 256);
  EXPECT_EQ(u.rows(), rows);
  EXPECT_EQ(u.cols(), cols);
  EXPECT_EQ(vt.rows(), cols);
  EXPECT_EQ(vt.cols(), cols);
  const double* S = shm.at<double>(s.offset());
  const double* U = shm.at<double>(u.offset());
  const double* Vt = shm.at<double>(vt.offset());
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      long double sum = 0;
      for (std::int64_t p = 0; p < cols; ++p) {
        sum += static_cast<long double>(U[i * cols + p]) * S[p] * Vt[p * cols + j];
      }
      EXPECT_NEAR(static_cast<double>(sum), a[i * cols + j], 1e-12);
    }
  }
}

TEST_F(ServiceSharedMemory, AJobWritesItsResultIntoTheRegion) {
  ShmObject shm(1 << 16);
  const std::string region = must_register(shm);
  const std::vector<float> a = random_floats(6 * 4, gcompute::testing::test_seed());
  std::memcpy(shm.data(), a.data(), a.size() * 4);
  v1::SubmitJobRequest req;
  *req.mutable_transpose()->mutable_a()->mutable_shared_memory() =
      shm_ref(region, 0, 0, 6, 4, v1::DTYPE_F32);
  to_shared_memory(req.mutable_transpose()->mutable_output(), region, 1024);
  v1::SubmitJobResponse submitted;
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    ASSERT_TRUE(is_ok(stub().SubmitJob(&ctx, req, &submitted)));
  }
  std::vector<v1::Job> seen;
  ASSERT_TRUE(is_ok(watch_job(stub(), submitted.job_id(), 60, &seen)));
  ASSERT_FALSE(seen.empty());
  const v1::Job& done = seen.back();
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.error_message();
  const v1::SharedMemoryRef& at = done.result().transpose().at().shared_memory();
  EXPECT_EQ(at.offset(), 1024u);
  const float* out = shm.at<float>(at.offset());
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 4; ++j) ASSERT_EQ(out[j * 6 + i], a[i * 4 + j]);
  }
}

TEST_F(ServiceSharedMemory, RegistrationRefusesWhatItCannotMapSafely) {
  ShmObject shm(1 << 16);
  EXPECT_TRUE(has_status(register_region("/gcompute-test-no-such-object", 0, 0, nullptr),
                         grpc::StatusCode::NOT_FOUND, {"no shared-memory object"}));
  for (const std::string& bad : std::vector<std::string>{
           "noslash", "/a/b", "/", "/..", "/gcompute-", "/gcompute-a/b", "/other-service-segment",
           "/sem.gcompute-x", "/gcompute-" + std::string(300, 'x')}) {
    EXPECT_TRUE(has_status(register_region(bad, 0, 0, nullptr), grpc::StatusCode::INVALID_ARGUMENT,
                           {"name = "}))
        << bad;
  }
  EXPECT_TRUE(has_status(register_region("", 0, 0, nullptr), grpc::StatusCode::INVALID_ARGUMENT,
                         {"set exactly one of name", "cuda_ipc_handle"}));
  EXPECT_TRUE(has_status(register_region(shm.name(), 1 << 17, 0, nullptr),
                         grpc::StatusCode::INVALID_ARGUMENT, {"offset = 131072", "65536 bytes"}));
  EXPECT_TRUE(has_status(register_region(shm.name(), 256, 1 << 16, nullptr),
                         grpc::StatusCode::INVALID_ARGUMENT, {"byte_size = 65536"}));
  EXPECT_TRUE(has_status(register_region(shm.name(), 1 << 16, 0, nullptr),
                         grpc::StatusCode::INVALID_ARGUMENT, {"would be empty"}));
  ASSERT_EQ(fchmod(shm.fd(), 0666), 0);
  EXPECT_TRUE(has_status(register_region(shm.name(), 0, 0, nullptr),
                         grpc::StatusCode::PERMISSION_DENIED, {"writable by group or others"}));
  ASSERT_EQ(fchmod(shm.fd(), 0600), 0);
  // A region inside the object, at an offset that is not a page boundary.
  ShmObject big(3 << 20);
  v1::SharedMemoryRegion part;
  EXPECT_TRUE(has_status(register_region(big.name(), 4096 * 3 + 100, 5000, nullptr),
                         grpc::StatusCode::INVALID_ARGUMENT,
                         {"offset = 12388", "multiple of 256"}));
  ASSERT_TRUE(is_ok(register_region(big.name(), 4096 * 3 + 256, 5000, &part)));
  EXPECT_EQ(part.offset(), 4096u * 3 + 256);
  EXPECT_EQ(part.byte_size(), 5000u);
  EXPECT_EQ(part.device_registered(), kCuda);  // the CPU backend pins nothing
  const std::vector<float> a = random_floats(10 * 12, gcompute::testing::test_seed());
  std::memcpy(big.data() + part.offset() + 40, a.data(), a.size() * 4);
  v1::TransposeRequest req;
  *req.mutable_a()->mutable_shared_memory() =
      shm_ref(part.region_id(), 40, 0, 10, 12, v1::DTYPE_F32);
  v1::TransposeResponse resp;
  ASSERT_TRUE(is_ok(transpose(req, &resp)));
  const std::vector<float> at = values_of<float>(resp.at().inline_());
  ASSERT_EQ(at.size(), a.size());
  for (int i = 0; i < 10; ++i) {
    for (int j = 0; j < 12; ++j) ASSERT_EQ(at[j * 10 + i], a[i * 12 + j]);
  }
  // The region's bounds, not the object's, limit what a call may name.
  *req.mutable_a()->mutable_shared_memory() =
      shm_ref(part.region_id(), 5000 - 4 * 10 * 12 + 4, 0, 10, 12, v1::DTYPE_F32);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"a.shared_memory", "5000 bytes"}));
}

TEST_F(ServiceSharedMemory, EveryMistakeInAnOperandOrOutputIsNamed) {
  ShmObject shm(1 << 16);
  const std::string region = must_register(shm);
  v1::TransposeRequest req;
  v1::TransposeResponse resp;
  *req.mutable_a()->mutable_shared_memory() = shm_ref("shm-nope", 0, 0, 4, 4, v1::DTYPE_F32);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::NOT_FOUND,
                         {"a.shared_memory.region_id", "\"shm-nope\""}));
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 1 << 16, 0, 1, 1, v1::DTYPE_F32);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"a.shared_memory", "65536 bytes"}));
  *req.mutable_a()->mutable_shared_memory() =
      shm_ref(region, ~std::uint64_t{0} - 2, 0, 1, 1, v1::DTYPE_F32);
  EXPECT_TRUE(
      has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT, {"a.shared_memory"}));
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 4, 0, 2, 2, v1::DTYPE_F64);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"a.shared_memory.offset = 4 is not a multiple of 8"}));
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 0, 0, -1, 4, v1::DTYPE_F32);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"a.shared_memory has a negative dimension"}));
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 0, 0, 4, 4, v1::DTYPE_UNSPECIFIED);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"a.shared_memory.dtype"}));

  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 0, 0, 64, 64, v1::DTYPE_F32);
  req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_SHARED_MEMORY);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"needs output.shared_memory"}));
  req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_INLINE);
  req.mutable_output()->mutable_shared_memory()->set_region_id(region);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"output.shared_memory is set", "PLACEMENT_INLINE"}));
  // 64x64 f32 is 16 KiB: from 50000 it would end past the region's 65536 bytes.
  to_shared_memory(req.mutable_output(), region, 50000);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                         {"output.shared_memory (result at, 64x64 f32)", "65536 bytes"}));
  for (std::uint64_t past : {std::uint64_t{65537}, ~std::uint64_t{0}}) {  // no wrap to 0
    to_shared_memory(req.mutable_output(), region, past);
    EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::INVALID_ARGUMENT,
                           {"output.shared_memory.offset = ", "lies past the end"}));
  }
  to_shared_memory(req.mutable_output(), "shm-other", 0);
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::NOT_FOUND,
                         {"output.shared_memory.region_id"}));
}

TEST_F(ServiceSharedMemory, AnUnregisteredRegionCannotBeTouched) {
  ShmObject shm(1 << 16);
  const std::string region = must_register(shm);
  ASSERT_TRUE(is_ok(unregister_region(region)));
  EXPECT_TRUE(has_status(unregister_region(region), grpc::StatusCode::NOT_FOUND,
                         {"region_id = ", "no such shared-memory region"}));
  v1::TransposeRequest req;
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 0, 0, 2, 2, v1::DTYPE_F32);
  v1::TransposeResponse resp;
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::NOT_FOUND,
                         {"a.shared_memory.region_id"}));
}

TEST_F(ServiceSharedMemory, AShrunkObjectIsRefusedNotFaultedOn) {
  ShmObject shm(1 << 16);
  const std::string region = must_register(shm);
  ASSERT_EQ(ftruncate(shm.fd(), 4096), 0);
  v1::TransposeRequest req;
  *req.mutable_a()->mutable_shared_memory() = shm_ref(region, 0, 0, 2, 2, v1::DTYPE_F32);
  v1::TransposeResponse resp;
  EXPECT_TRUE(has_status(transpose(req, &resp), grpc::StatusCode::FAILED_PRECONDITION,
                         {"now has 4096 bytes", "register it again"}));
}

TEST(ServiceSharedMemoryIdle, ARegionNoCallNamesIsDroppedAfterItsIdleTime) {
  if (kCuda) GC_REQUIRE_GPU();
  ServerOptions o = backend_options();
  o.shared_memory_idle = absl::Milliseconds(300);
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  ShmObject shm(1 << 16);
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::RegisterSharedMemoryRequest req;
  req.set_name(shm.name());
  v1::RegisterSharedMemoryResponse resp;
  ASSERT_TRUE(is_ok(ts->stub->RegisterSharedMemory(&ctx, req, &resp)));
  server::RegionRegistry& regions = *ts->server->shared_memory_regions();
  EXPECT_EQ(regions.size(), 1u);
  // The sweeper runs every second: within three the idle region is gone.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (regions.size() != 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(regions.size(), 0u);
  grpc::ClientContext ctx2;
  deadline(ctx2);
  v1::TransposeRequest t;
  *t.mutable_a()->mutable_shared_memory() =
      shm_ref(resp.region().region_id(), 0, 0, 1, 1, v1::DTYPE_F32);
  v1::TransposeResponse tr;
  EXPECT_TRUE(has_status(ts->stub->Transpose(&ctx2, t, &tr), grpc::StatusCode::NOT_FOUND,
                         {"a.shared_memory.region_id"}));
}

TEST_F(ServiceSharedMemory, ServerInfoTellsClientsWhetherTheyShareTheHost) {
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::GetServerInfoResponse info;
  ASSERT_TRUE(is_ok(stub().GetServerInfo(&ctx, {}, &info)));
  EXPECT_TRUE(info.shared_memory());
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  std::getline(in, boot_id);
  ASSERT_FALSE(boot_id.empty());
  EXPECT_EQ(info.host_boot_id(), boot_id);
}

TEST_F(ServiceSharedMemory, CudaIpcHandlesAreCheckedBeforeUse) {
  ShmObject shm(4096);
  EXPECT_TRUE(has_status(register_device(std::string(64, '\1'), 0, 0, 0, nullptr, shm.name()),
                         grpc::StatusCode::INVALID_ARGUMENT, {"set exactly one"}));
  if (!kCuda) {
    EXPECT_TRUE(has_status(register_device(std::string(64, '\1'), 0, 0, 0, nullptr),
                           grpc::StatusCode::FAILED_PRECONDITION, {"CUDA backend"}));
    return;
  }
  EXPECT_TRUE(has_status(register_device(std::string(63, '\1'), 0, 0, 0, nullptr),
                         grpc::StatusCode::INVALID_ARGUMENT, {"cuda_ipc_handle has 63 bytes"}));
  EXPECT_TRUE(has_status(register_device(std::string(64, '\1'), 99, 0, 0, nullptr),
                         grpc::StatusCode::INVALID_ARGUMENT, {"cuda_device = 99"}));
}

#ifdef GCOMPUTE_SHM_TEST_CUDA
TEST_F(ServiceSharedMemory, GpuMemoryOfAnotherProcessIsReadAndWrittenInPlace) {
  Rng rng(gcompute::testing::test_seed());
  const std::int64_t rows = 301, cols = 77;  // not multiples of any tile
  std::vector<float> a(rows * cols);
  for (float& x : a) x = static_cast<float>(rng.uniform(-1000, 1000));
  std::vector<double> b(64 * 33), c(33 * 5);
  for (double& x : b) x = rng.uniform(-1, 1);
  for (double& x : c) x = rng.uniform(-1, 1);
  const std::uint64_t b_at = 1 << 20, c_at = b_at + b.size() * 8, out_at = 2 << 20;
  const std::uint64_t bytes = 4 << 20;
  std::vector<std::byte> in(c_at + c.size() * 8);
  std::memcpy(in.data(), a.data(), a.size() * 4);
  std::memcpy(in.data() + b_at, b.data(), b.size() * 8);
  std::memcpy(in.data() + c_at, c.data(), c.size() * 8);
  IpcExporter exporter(gcompute::testing::ipc_exporter_path(GCOMPUTE_IPC_EXPORTER), in, bytes);
  const std::string handle = exporter.handle();
  ASSERT_EQ(handle.size(), 64u) << "the exporter gave no handle";

  EXPECT_TRUE(has_status(register_device(handle, 0, bytes, 1, nullptr),
                         grpc::StatusCode::INVALID_ARGUMENT, {"the device allocation has"}));
  v1::SharedMemoryRegion region;
  ASSERT_TRUE(is_ok(register_device(handle, 0, 0, 0, &region)));
  EXPECT_TRUE(region.cuda_ipc());
  EXPECT_GE(region.byte_size(), bytes);  // the allocation may be rounded up

  v1::TransposeRequest t;
  *t.mutable_a()->mutable_shared_memory() =
      shm_ref(region.region_id(), 0, 0, rows, cols, v1::DTYPE_F32);
  to_shared_memory(t.mutable_output(), region.region_id(), out_at);
  v1::TransposeResponse tr;
  ASSERT_TRUE(is_ok(transpose(t, &tr)));
  EXPECT_EQ(tr.at().shared_memory().offset(), out_at);

  v1::MatMulRequest m;
  *m.mutable_a()->mutable_shared_memory() =
      shm_ref(region.region_id(), b_at, 0, 64, 33, v1::DTYPE_F64);
  *m.mutable_b()->mutable_shared_memory() =
      shm_ref(region.region_id(), c_at, 0, 33, 5, v1::DTYPE_F64);
  v1::MatMulResponse mr;
  {
    grpc::ClientContext ctx;
    deadline(ctx);
    ASSERT_TRUE(is_ok(stub().MatMul(&ctx, m, &mr)));
  }
  const std::vector<double> got = values_of<double>(mr.c().inline_());
  ASSERT_EQ(got.size(), 64u * 5);
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 5; ++j) {
      long double want = 0;
      for (int p = 0; p < 33; ++p) want += static_cast<long double>(b[i * 33 + p]) * c[p * 5 + j];
      EXPECT_NEAR(got[i * 5 + j], static_cast<double>(want), 1e-13);
    }
  }
  // Bounds hold on the device as on the host.
  *t.mutable_a()->mutable_shared_memory() =
      shm_ref(region.region_id(), region.byte_size() - 8, 0, 1, 4, v1::DTYPE_F32);
  EXPECT_TRUE(
      has_status(transpose(t, &tr), grpc::StatusCode::INVALID_ARGUMENT, {"a.shared_memory"}));
  ASSERT_TRUE(is_ok(unregister_region(region.region_id())));

  const std::string after = exporter.finish();
  ASSERT_EQ(after.size(), bytes);
  const auto* at = reinterpret_cast<const float*>(after.data() + out_at);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(at[j * rows + i], a[i * cols + j]) << i << "," << j;
    }
  }
  // Nothing past the result was written (the exporter filled its memory with 0x5a).
  const std::uint64_t end = out_at + static_cast<std::uint64_t>(rows * cols) * 4;
  for (std::uint64_t k = end; k < end + 256; ++k) ASSERT_EQ(after[k], '\x5a') << k;
}
#endif

TEST(ServiceSharedMemoryOff, RegistrationIsRefusedAndInfoSaysSo) {
  if (kCuda) GC_REQUIRE_GPU();
  ServerOptions o = backend_options();
  o.shared_memory = false;
  auto ts = start_server(o);
  ASSERT_NE(ts, nullptr);
  ShmObject shm(4096);
  grpc::ClientContext ctx;
  deadline(ctx);
  v1::RegisterSharedMemoryRequest req;
  req.set_name(shm.name());
  v1::RegisterSharedMemoryResponse resp;
  EXPECT_TRUE(has_status(ts->stub->RegisterSharedMemory(&ctx, req, &resp),
                         grpc::StatusCode::FAILED_PRECONDITION, {"--shared-memory=false"}));
  grpc::ClientContext ctx2;
  deadline(ctx2);
  v1::GetServerInfoResponse info;
  ASSERT_TRUE(is_ok(ts->stub->GetServerInfo(&ctx2, {}, &info)));
  EXPECT_FALSE(info.shared_memory());
  grpc::ClientContext ctx3;
  deadline(ctx3);
  v1::TransposeRequest treq;
  *treq.mutable_a()->mutable_shared_memory() = shm_ref("shm-x", 0, 0, 1, 1, v1::DTYPE_F32);
  v1::TransposeResponse tresp;
  EXPECT_TRUE(has_status(ts->stub->Transpose(&ctx3, treq, &tresp),
                         grpc::StatusCode::FAILED_PRECONDITION, {"a.shared_memory.region_id"}));
}

}  // namespace
}  // namespace gcompute::service_test
