// SPDX-License-Identifier: Apache-2.0
// cpu::transpose against the definition out[b][j][i] = in[b][i][j], byte for byte.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "gcompute/kernels/cpu/transpose.hpp"
#include "support/random.hpp"

namespace gcompute::kernels {
namespace {

using ::gcompute::testing::random_bytes;

// Runs one transpose with the output poisoned by `poison` and guard bytes on both sides, and
// checks every element against the definition and that nothing outside was written.
void check_transpose(::gcompute::testing::Rng& rng, std::int64_t batch, std::int64_t rows,
                     std::int64_t cols, std::size_t eb, std::size_t misalign) {
  SCOPED_TRACE(::testing::Message() << "batch=" << batch << " rows=" << rows << " cols=" << cols
                                    << " element_bytes=" << eb << " misalign=" << misalign);
  const std::size_t bytes = static_cast<std::size_t>(batch * rows * cols) * eb;
  constexpr std::size_t kGuard = 64;
  std::vector<unsigned char> in = random_bytes(rng, bytes + misalign);
  for (const unsigned char poison : {0xffu, 0x00u, 0xa5u}) {
    std::vector<unsigned char> out(bytes + 2 * kGuard + misalign, poison);
    unsigned char* dst = out.data() + kGuard + misalign;
    const TransposeShape shape{batch, rows, cols, eb};
    ASSERT_TRUE(cpu::transpose(in.data() + misalign, dst, shape).ok());
    const unsigned char* src = in.data() + misalign;
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < cols; ++j) {
          const std::size_t from = static_cast<std::size_t>((b * rows + i) * cols + j) * eb;
          const std::size_t to = static_cast<std::size_t>((b * cols + j) * rows + i) * eb;
          if (std::memcmp(src + from, dst + to, eb) != 0) {
            FAIL() << "mismatch at b=" << b << " i=" << i << " j=" << j
                   << " poison=" << static_cast<int>(poison);
          }
        }
      }
    }
    for (std::size_t g = 0; g < kGuard + misalign; ++g) {
      ASSERT_EQ(out[g], poison) << "guard " << g;
    }
    for (std::size_t g = kGuard + misalign + bytes; g < out.size(); ++g) {
      ASSERT_EQ(out[g], poison) << "guard after end, byte " << g;
    }
  }
}

TEST(CpuTranspose, RaggedShapesAllElementSizes) {
  GC_SEEDED_RNG(rng);
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1},   {1, 7},   {7, 1},   {2, 3},   {31, 33}, {32, 32},   {33, 31},
      {64, 65}, {97, 13}, {13, 97}, {128, 3}, {3, 129}, {257, 130}, {200, 200}};
  for (const std::size_t eb : {1u, 2u, 4u, 8u}) {
    for (const auto& [r, c] : shapes) {
      check_transpose(rng, 1, r, c, eb, 0);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(CpuTranspose, Batched) {
  GC_SEEDED_RNG(rng);
  for (const std::size_t eb : {1u, 2u, 4u, 8u}) {
    check_transpose(rng, 3, 37, 41, eb, 0);
    check_transpose(rng, 5, 1, 9, eb, 0);
    check_transpose(rng, 4, 65, 2, eb, 0);
    const std::int64_t r = rng.uniform_int(1, 90), c = rng.uniform_int(1, 90);
    check_transpose(rng, rng.uniform_int(1, 6), r, c, eb, 0);
  }
}

TEST(CpuTranspose, UnalignedBuffers) {
  GC_SEEDED_RNG(rng);
  for (const std::size_t eb : {2u, 4u, 8u}) {
    check_transpose(rng, 2, 45, 70, eb, 1);
    check_transpose(rng, 1, 33, 3, eb, 3);
  }
}

TEST(CpuTranspose, ZeroSizeWritesNothing) {
  GC_SEEDED_RNG(rng);
  for (const auto& [b, r, c] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {0, 5, 5}, {1, 0, 5}, {1, 5, 0}, {3, 0, 0}, {0, 0, 0}}) {
    check_transpose(rng, b, r, c, 4, 0);
  }
  // Nothing to do: null buffers are fine.
  EXPECT_TRUE(cpu::transpose(nullptr, nullptr, TransposeShape{2, 0, 7, 8}).ok());
}

TEST(CpuTranspose, RejectsInvalidShapes) {
  std::vector<unsigned char> buf(64);
  for (const TransposeShape& s :
       {TransposeShape{-1, 2, 2, 4}, TransposeShape{1, -2, 2, 4}, TransposeShape{1, 2, -2, 4},
        TransposeShape{1, 2, 2, 3}, TransposeShape{1, 2, 2, 0}, TransposeShape{1, 2, 2, 16}}) {
    const absl::Status st = cpu::transpose(buf.data(), buf.data() + 32, s);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  }
}

}  // namespace
}  // namespace gcompute::kernels

namespace gcompute::kernels {
namespace {

TEST(CpuTranspose, StopsWhenTheTokenFires) {
  // A stopped transpose is CANCELLED, for one big matrix and for a batch of tiny ones.
  std::atomic<bool> flag{true};
  std::vector<unsigned char> in(1 << 20), out(1 << 20);
  EXPECT_EQ(cpu::transpose(in.data(), out.data(), TransposeShape{1, 512, 512, 4}, StopToken(&flag))
                .code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(
      cpu::transpose(in.data(), out.data(), TransposeShape{1 << 18, 1, 1, 4}, StopToken(&flag))
          .code(),
      absl::StatusCode::kCancelled);
  flag = false;
  EXPECT_TRUE(
      cpu::transpose(in.data(), out.data(), TransposeShape{1, 512, 512, 4}, StopToken(&flag)).ok());
}

}  // namespace
}  // namespace gcompute::kernels
