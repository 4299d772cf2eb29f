// SPDX-License-Identifier: Apache-2.0
#include "wire/fresh_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace gcompute::wire {
namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack the name
#endif

/// Faulted in per call: small enough that the window moves in steps, large enough that the
/// calls cost nothing next to the zeroing.
constexpr std::uint64_t kStepBytes = std::uint64_t{4} << 20;

/// GCOMPUTE_PREFAULT=0 (developer knob) turns it off, to measure what it gains in one run.
bool prefault_enabled() {
  static const bool enabled = [] {
    const char* knob = std::getenv("GCOMPUTE_PREFAULT");
    return knob == nullptr || std::strcmp(knob, "0") != 0;
  }();
  return enabled;
}

/// Cleared the first time the kernel refuses MADV_POPULATE_WRITE (before Linux 5.14): no thread
/// is started for it again.
std::atomic<bool> kernel_can_populate{true};

}  // namespace

void advise_huge_pages(char* data, std::uint64_t size) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = (start + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t end = (start + size) & ~(kHuge - 1);
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

void PrefaultAhead::start(char* data, std::uint64_t size) {
  stop();
  if (size < kMinBytes || !prefault_enabled() ||
      !kernel_can_populate.load(std::memory_order_relaxed)) {
    return;
  }
  written_.store(0, std::memory_order_relaxed);
  try {
    thread_ = std::thread([this, data, size] { run(data, size); });
  } catch (const std::system_error&) {
    // No thread to spare: the writer faults its pages in as before.
  }
}

void PrefaultAhead::stop() {
  if (!thread_.joinable()) return;
  written_.store(kStopped, std::memory_order_release);
  written_.notify_one();
  thread_.join();
}

void PrefaultAhead::run(char* data, std::uint64_t size) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<std::uintptr_t>(data);
  // Whole pages only: the page holding data[0] is mapped already (the allocator's header lies
  // in it), and a page past the end may belong to another mapping.
  std::uintptr_t next = first & ~(page - 1);
  const std::uintptr_t end = (first + size) & ~(page - 1);
  while (next < end) {
    const std::uint64_t written = written_.load(std::memory_order_acquire);
    if (written == kStopped) return;
    const std::uintptr_t limit = std::min<std::uintptr_t>(
        end, (first + std::min(size, written + window(written))) & ~(page - 1));
    if (next >= limit) {
      written_.wait(written, std::memory_order_acquire);
      continue;
    }
    const std::uintptr_t step_end = std::min<std::uintptr_t>(limit, next + kStepBytes);
    if (::madvise(reinterpret_cast<void*>(next), step_end - next, MADV_POPULATE_WRITE) != 0) {
      if (errno == EINVAL) kernel_can_populate.store(false, std::memory_order_relaxed);
      return;  // not supported here (EINVAL), or out of memory: the writer faults as before
    }
    next = step_end;
  }
}

}  // namespace gcompute::wire
