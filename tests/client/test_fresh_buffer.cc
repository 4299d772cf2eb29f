// SPDX-License-Identifier: Apache-2.0
// wire::PrefaultAhead: pages of a fresh buffer are faulted in beside a writer without changing
// a byte, and no further than the window ahead of what was written.
#include "wire/fresh_buffer.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string_view>
#include <thread>
#include <vector>

namespace gcompute::wire {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

/// An anonymous mapping, page-aligned, untouched: as fresh as a large allocation gets.
struct Mapping {
  explicit Mapping(std::uint64_t bytes) : size(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    data = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
  ~Mapping() {
    if (data != nullptr) ::munmap(data, size);
  }
  /// Bytes of [0, bytes) that are resident.
  std::uint64_t resident(std::uint64_t bytes) const {
    const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in((bytes + page - 1) / page);
    if (::mincore(data, bytes, in.data()) != 0) return ~std::uint64_t{0};
    std::uint64_t pages = 0;
    for (unsigned char c : in) pages += c & 1;
    return pages * page;
  }
  char* data;
  std::uint64_t size;
};

/// Whether this kernel can populate (Linux 5.14 on): else the class does nothing, by design.
bool can_populate() {
  Mapping probe(2 * kMiB);
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  return probe.data != nullptr && ::madvise(probe.data, 2 * kMiB, MADV_POPULATE_WRITE) == 0;
}

/// Whether the developer knob turned prefaulting off for this process.
bool knob_off() {
  const char* knob = std::getenv("GCOMPUTE_PREFAULT");
  return knob != nullptr && std::string_view(knob) == "0";
}

TEST(PrefaultAhead, StaysWithinTheWindowOfWhatWasWritten) {
  if (!can_populate()) GTEST_SKIP() << "MADV_POPULATE_WRITE is not supported by this kernel";
  if (knob_off()) GTEST_SKIP() << "GCOMPUTE_PREFAULT=0 turns prefaulting off";
  const std::uint64_t size = 4 * PrefaultAhead::kMaxWindowBytes;
  Mapping buffer(size);
  ASSERT_NE(buffer.data, nullptr);
  PrefaultAhead prefault;
  prefault.start(buffer.data, size);
  auto resident_settles_at = [&](std::uint64_t at_least) {
    for (int i = 0; i < 1000 && buffer.resident(size) < at_least; ++i) {  // up to 10 s
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // would it go further?
    return buffer.resident(size);
  };
  // Nothing is written here, so what is resident is what was faulted in: up to `written` plus
  // the window, and no further (2 MiB: a huge page's rounding at the window's end).
  for (const std::uint64_t written :
       {std::uint64_t{0}, PrefaultAhead::kMaxWindowBytes / 2, 2 * PrefaultAhead::kMaxWindowBytes}) {
    SCOPED_TRACE(testing::Message() << "written " << written);
    prefault.written(written);
    const std::uint64_t ahead = written + PrefaultAhead::window(written);
    const std::uint64_t resident = resident_settles_at(ahead);
    EXPECT_GE(resident, ahead);
    EXPECT_LE(resident, ahead + 2 * kMiB);
  }
  // A header alone holds the smallest window; a stream holds at most twice what it sent.
  static_assert(PrefaultAhead::window(0) == PrefaultAhead::kMinWindowBytes);
  static_assert(PrefaultAhead::window(32 * kMiB) == 32 * kMiB);
  static_assert(PrefaultAhead::window(1024 * kMiB) == PrefaultAhead::kMaxWindowBytes);
  prefault.stop();
}

// Guards against a population that writes (a fallback touching each page would race with the
// writer and could undo its bytes): every byte written is read back after the thread stopped.
TEST(PrefaultAhead, ChangesNoByteTheWriterWrites) {
  const std::uint64_t size = 96 * kMiB + 12345;  // not a whole number of pages
  std::vector<char> chunk(kMiB + 7);
  std::iota(chunk.begin(), chunk.end(), 0);
  for (int round = 0; round < 2; ++round) {
    Mapping buffer(size);
    ASSERT_NE(buffer.data, nullptr);
    PrefaultAhead prefault;
    prefault.start(buffer.data + 16, size - 16);  // as an allocator's block starts: not aligned
    std::uint64_t written = 0;
    while (written < size - 16) {
      const std::uint64_t n = std::min<std::uint64_t>(chunk.size(), size - 16 - written);
      std::copy_n(chunk.data(), n, buffer.data + 16 + written);
      written += n;
      prefault.written(written);
    }
    prefault.stop();
    for (std::uint64_t at = 0; at < written; at += 4093) {
      ASSERT_EQ(buffer.data[16 + at], chunk[at % chunk.size()]) << "byte " << at;
    }
    EXPECT_EQ(buffer.data[0], 0);  // before the buffer: untouched
  }
}

TEST(PrefaultAhead, SmallBuffersStartNothing) {
  Mapping buffer(PrefaultAhead::kMinBytes - 4096);
  ASSERT_NE(buffer.data, nullptr);
  PrefaultAhead prefault;
  prefault.start(buffer.data, buffer.size);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(buffer.resident(buffer.size), 0u);
}

}  // namespace
}  // namespace gcompute::wire
