// SPDX-License-Identifier: Apache-2.0
// cuda::transpose against a plain-loop oracle on fresh random bytes: every element size,
// ragged and degenerate shapes, batches, misaligned pointers (narrower vector paths and the
// padded fallback), int64 indexing past 2^31 elements, and argument errors.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gcompute/kernels/cuda/transpose.hpp"
#include "kernels/cuda/test_device.hpp"
#include "support/gpu.hpp"

namespace gcompute::kernels::cuda {
namespace {

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call

/// Device bytes released on scope exit (a failed allocation has failed the test already).
class Bytes {
 public:
  Bytes(const testing::TestDevice& device, std::size_t bytes) : buffer_(device.buffer(bytes)) {}
  std::uint8_t* get() { return static_cast<std::uint8_t*>(buffer_.data()); }
  bool ok(std::size_t bytes) const { return buffer_.size() == bytes; }

 private:
  DeviceBuffer buffer_;
};

std::mt19937_64& rng() {
  static std::mt19937_64 gen{std::random_device{}()};
  return gen;
}

/// Random bytes in 0..254: no element can equal the 0xFF poison, so an unwritten output
/// element always mismatches.
std::vector<std::uint8_t> random_bytes(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  std::uniform_int_distribution<int> dist(0, 254);
  for (auto& b : v) b = static_cast<std::uint8_t>(dist(rng()));
  return v;
}

std::vector<std::uint8_t> oracle(const std::vector<std::uint8_t>& in, const TransposeShape& s) {
  const std::size_t e = s.element_bytes;
  std::vector<std::uint8_t> out(in.size());
  for (std::int64_t b = 0; b < s.batch; ++b) {
    const std::size_t base = static_cast<std::size_t>(b * s.rows * s.cols) * e;
    for (std::int64_t i = 0; i < s.rows; ++i) {
      for (std::int64_t j = 0; j < s.cols; ++j) {
        std::memcpy(&out[base + static_cast<std::size_t>(j * s.rows + i) * e],
                    &in[base + static_cast<std::size_t>(i * s.cols + j) * e], e);
      }
    }
  }
  return out;
}

class CudaTransposeTest : public testing::DeviceTest {
 protected:
  CudaTransposeTest() : DeviceTest(/*priority_stream=*/false, /*libraries=*/false) {}

  /// Transposes fresh random input placed `in_offset` / `out_offset` bytes past the base of an
  /// allocation (256-byte aligned, to force narrower paths) and compares every byte with the
  /// oracle.
  void check(const TransposeShape& s, std::size_t in_offset = 0, std::size_t out_offset = 0) {
    SCOPED_TRACE(::testing::Message()
                 << "batch=" << s.batch << " rows=" << s.rows << " cols=" << s.cols
                 << " bytes=" << s.element_bytes << " in+" << in_offset << " out+" << out_offset);
    const std::size_t bytes = static_cast<std::size_t>(s.batch * s.rows * s.cols) * s.element_bytes;
    const std::vector<std::uint8_t> host_in = random_bytes(bytes);
    Bytes in(device_, bytes + in_offset + 1);
    Bytes out(device_, bytes + out_offset + 1);
    ASSERT_TRUE(in.ok(bytes + in_offset + 1) && out.ok(bytes + out_offset + 1));
    ASSERT_CUDA(cudaMemcpy(in.get() + in_offset, host_in.data(), bytes, cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(out.get(), 0xFF, bytes + out_offset + 1));
    const absl::Status st = transpose(ctx_, in.get() + in_offset, out.get() + out_offset, s);
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::vector<std::uint8_t> got(bytes + out_offset + 1);
    ASSERT_CUDA(cudaMemcpy(got.data(), out.get(), got.size(), cudaMemcpyDeviceToHost));
    const std::vector<std::uint8_t> want = oracle(host_in, s);
    std::size_t bad = 0;
    std::size_t first_bad = 0;
    for (std::size_t i = 0; i < bytes; ++i) {
      if (got[out_offset + i] != want[i] && bad++ == 0) first_bad = i;
    }
    EXPECT_EQ(bad, 0u) << "first wrong byte " << first_bad << " (element "
                       << first_bad / s.element_bytes << ")";
    // Nothing written outside the output.
    for (std::size_t i = 0; i < out_offset; ++i) ASSERT_EQ(got[i], 0xFF) << "before output";
    EXPECT_EQ(got[out_offset + bytes], 0xFF) << "past the output";
  }
};

struct Dims {
  std::int64_t rows;
  std::int64_t cols;
};

// Degenerate, prime, tile-ragged (64/128 tiles; 16-, 8- and 4-byte vector multiples) shapes.
const Dims kShapes[] = {{1, 1},     {1, 7},      {7, 1},     {1, 1000},  {1000, 1},  {2, 2},
                        {2, 3},     {3, 5},      {6, 10},    {12, 20},   {13, 17},   {31, 33},
                        {64, 64},   {63, 65},    {128, 128}, {127, 129}, {200, 136}, {136, 200},
                        {256, 40},  {40, 256},   {96, 1024}, {1024, 96}, {257, 263}, {4099, 37},
                        {37, 4099}, {1000, 1000}};

TEST_F(CudaTransposeTest, EveryElementSizeAndShape) {
  for (std::size_t e : {1u, 2u, 4u, 8u}) {
    for (const Dims& d : kShapes) {
      check({.batch = 1, .rows = d.rows, .cols = d.cols, .element_bytes = e});
    }
  }
}

TEST_F(CudaTransposeTest, Batches) {
  for (std::size_t e : {1u, 2u, 4u, 8u}) {
    for (const Dims& d : {Dims{1, 1}, Dims{5, 3}, Dims{64, 64}, Dims{130, 70}, Dims{129, 67}}) {
      check({.batch = 3, .rows = d.rows, .cols = d.cols, .element_bytes = e});
    }
  }
  check({.batch = 100, .rows = 16, .cols = 24, .element_bytes = 4});
  check({.batch = 7, .rows = 1, .cols = 33, .element_bytes = 2});
}

TEST_F(CudaTransposeTest, MisalignedPointersTakeNarrowerPaths) {
  for (std::size_t e : {1u, 2u, 4u, 8u}) {
    for (std::size_t off : {e, 2 * e, 4 * e}) {
      check({.batch = 2, .rows = 128, .cols = 256, .element_bytes = e}, off, 0);
      check({.batch = 1, .rows = 96, .cols = 160, .element_bytes = e}, 0, off);
    }
  }
}

TEST_F(CudaTransposeTest, ZeroSizedIsANoOp) {
  for (const TransposeShape& s :
       {TransposeShape{.batch = 0, .rows = 5, .cols = 5, .element_bytes = 4},
        TransposeShape{.batch = 2, .rows = 0, .cols = 5, .element_bytes = 8},
        TransposeShape{.batch = 2, .rows = 5, .cols = 0, .element_bytes = 1}}) {
    Bytes out(device_, 64);
    ASSERT_TRUE(out.ok(64));
    ASSERT_CUDA(cudaMemset(out.get(), 0xFF, 64));
    ASSERT_TRUE(transpose(ctx_, out.get(), out.get(), s).ok());
    ASSERT_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::vector<std::uint8_t> got(64);
    ASSERT_CUDA(cudaMemcpy(got.data(), out.get(), 64, cudaMemcpyDeviceToHost));
    for (std::uint8_t b : got) ASSERT_EQ(b, 0xFF);
  }
}

TEST_F(CudaTransposeTest, RejectsBadArguments) {
  Bytes buf(device_, 4096);
  ASSERT_TRUE(buf.ok(4096));
  auto code = [&](const void* in, void* out, const TransposeShape& s) {
    return transpose(ctx_, in, out, s).code();
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(buf.get(), buf.get() + 2048, {.rows = 4, .cols = 4, .element_bytes = 3}),
            kInvalid);
  EXPECT_EQ(code(buf.get(), buf.get() + 2048, {.rows = -1, .cols = 4}), kInvalid);
  EXPECT_EQ(code(buf.get(), buf.get() + 2048, {.batch = -2, .rows = 4, .cols = 4}), kInvalid);
  // Overlap: in place, and partially.
  EXPECT_EQ(code(buf.get(), buf.get(), {.rows = 8, .cols = 8}), kInvalid);
  EXPECT_EQ(code(buf.get(), buf.get() + 100, {.rows = 8, .cols = 8}), kInvalid);
  EXPECT_EQ(code(nullptr, buf.get(), {.rows = 8, .cols = 8}), kInvalid);
  EXPECT_EQ(code(buf.get(), buf.get() + 2048,
                 {.batch = std::int64_t{1} << 40,
                  .rows = std::int64_t{1} << 20,
                  .cols = std::int64_t{1} << 20}),
            kInvalid);
}

/// Cheap deterministic pattern for the multi-gigabyte cases (a random fill would take longer
/// than the transpose): a 64-bit mix of the element index and a fresh random key.
std::uint8_t pattern(std::uint64_t i, std::uint64_t key) {
  std::uint64_t z = i + key;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<std::uint8_t>((z ^ (z >> 31)) % 255);
}

/// More than 2^31 elements: int64 indexing. Checks the first and last output rows in full and
/// a million random positions.
void check_large(const testing::TestDevice& device, std::int64_t rows, std::int64_t cols) {
  SCOPED_TRACE(::testing::Message() << "rows=" << rows << " cols=" << cols);
  const auto n = static_cast<std::size_t>(rows * cols);
  ASSERT_GT(n, std::size_t{1} << 31);
  const std::uint64_t key = rng()();
  std::vector<std::uint8_t> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = pattern(i, key);
  Bytes in(device, n);
  Bytes out(device, n);
  ASSERT_TRUE(in.ok(n) && out.ok(n));
  ASSERT_CUDA(cudaMemcpy(in.get(), host.data(), n, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemset(out.get(), 0xFF, n));
  const absl::Status st = transpose(device.context(), in.get(), out.get(),
                                    {.rows = rows, .cols = cols, .element_bytes = 1});
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_CUDA(cudaStreamSynchronize(device.stream()));
  ASSERT_CUDA(cudaMemcpy(host.data(), out.get(), n, cudaMemcpyDeviceToHost));
  auto expect_at = [&](std::int64_t j, std::int64_t i) {  // out[j][i] = in[i][j]
    const std::uint8_t want = pattern(static_cast<std::uint64_t>(i * cols + j), key);
    const std::uint8_t got = host[static_cast<std::size_t>(j * rows + i)];
    if (got != want) {
      ADD_FAILURE() << "out[" << j << "][" << i << "] = " << int{got} << ", want " << int{want};
      return false;
    }
    return true;
  };
  for (std::int64_t i = 0; i < rows; ++i) {
    if (!expect_at(0, i) || !expect_at(cols - 1, i)) return;
  }
  std::uniform_int_distribution<std::int64_t> rd(0, rows - 1);
  std::uniform_int_distribution<std::int64_t> cd(0, cols - 1);
  for (int s = 0; s < 1000000; ++s) {
    if (!expect_at(cd(rng()), rd(rng()))) return;
  }
}

TEST_F(CudaTransposeTest, MoreThan2To31ElementsVectorPath) {
  check_large(device_, 40000, 60000);
}

TEST_F(CudaTransposeTest, MoreThan2To31ElementsPaddedPath) {
  check_large(device_, 46341, 46343);
}

}  // namespace
}  // namespace gcompute::kernels::cuda
