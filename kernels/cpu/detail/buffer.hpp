// SPDX-License-Identifier: Apache-2.0
// Scratch buffers of the LAPACK-based CPU kernels, backed by transparent huge pages when large.
//
// Every call allocates its copies and LAPACK workspace afresh (tens of MB at n = 1000), and
// first-touch page faults of fresh 4 KiB pages cost far more than the zeroing itself: on the
// development VM, writing 64 MB of freshly malloc'ed memory took 450 ms, the same in memory
// aligned to 2 MiB and advised MADV_HUGEPAGE 6-10 ms (THP in "madvise" mode, Debian's default).
// A 500 x 500 f64 SVD took 0.10-0.22 s with ordinary allocations against 0.09-0.10 s for the
// bare dgesdd call, and now takes what that call takes. The advice is only a hint: where THP is
// off, these are ordinary allocations.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace gcompute::kernels::cpu::detail {

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
/// From this size on an allocation takes huge pages. (From 256 KiB on, the n = 100 SVD got
/// slower: a huge-page fault may compact memory first, which only pays for whole pages.)
constexpr std::size_t kLargeAllocationBytes = kHugePageBytes;

/// A std::allocator for trivially copyable T whose allocations of kLargeAllocationBytes and
/// more are rounded up to 2 MiB, 2 MiB aligned and advised MADV_HUGEPAGE.
template <typename T>
struct LargePageAllocator {
  using value_type = T;

  LargePageAllocator() = default;
  template <typename U>
  LargePageAllocator(const LargePageAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T) - kHugePageBytes) throw std::bad_alloc();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kLargeAllocationBytes) return static_cast<T*>(::operator new(bytes));
    const std::size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, rounded);
    if (p == nullptr) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure leaves ordinary pages
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < kLargeAllocationBytes) {
      ::operator delete(p);
    } else {
      std::free(p);
    }
  }

  template <typename U>
  bool operator==(const LargePageAllocator<U>&) const {
    return true;
  }
};

/// The kernels' scratch vector.
template <typename T>
using Buffer = std::vector<T, LargePageAllocator<T>>;

}  // namespace gcompute::kernels::cpu::detail
