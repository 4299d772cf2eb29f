// SPDX-License-Identifier: Apache-2.0
// Transparent huge pages for buffers that chunk streams are appended into (server upload sinks,
// client downloads).
#pragma once

#include <sys/mman.h>

#include <cstdint>

namespace gcompute::wire {

/// Asks the kernel for transparent huge pages in [data, data + size) (its 2 MiB-aligned part): a
/// fresh 256 MiB buffer then takes 128 page faults instead of 65,536 as chunks land in it, which
/// were most of a transfer's CPU time. Advice only: where THP is off, nothing changes.
inline void advise_huge_pages(char* data, std::uint64_t size) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto start = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = (start + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t end = (start + size) & ~(kHuge - 1);
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace gcompute::wire
