// SPDX-License-Identifier: Apache-2.0
// Fresh buffers that chunk streams are appended into (server upload sinks, client downloads):
// the kernel's cost of their first touch, taken off the thread that receives the chunks.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace gcompute::wire {

/// Asks the kernel for transparent huge pages in [data, data + size) (its 2 MiB-aligned part): a
/// fresh 256 MiB buffer then takes 128 page faults instead of 65,536 as chunks land in it, which
/// were most of a transfer's CPU time. Advice only: where THP is off, nothing changes.
void advise_huge_pages(char* data, std::uint64_t size);

/// Faults in the pages of a fresh buffer on a thread of its own, a bounded window ahead of a
/// writer that fills it from the front. Zeroing fresh pages was the largest cost left in a
/// chunked transfer (22 % of a download's CPU in the profile, on the receiving thread); here it
/// runs beside the receiving. MADV_POPULATE_WRITE changes no byte, so it may run while the
/// writer writes. The window is as large as what was written, between kMinWindowBytes and
/// kMaxWindowBytes: a stream that stalls holds at most twice what it sent (and 4 MiB), a
/// header alone 4 MiB. Buffers under kMinBytes: nothing happens; on a kernel without
/// MADV_POPULATE_WRITE (before Linux 5.14) the first thread finds out and no other is started;
/// where no thread can be created, none is. The writer then faults its pages in itself.
class PrefaultAhead {
 public:
  static constexpr std::uint64_t kMinBytes = std::uint64_t{16} << 20;
  static constexpr std::uint64_t kMinWindowBytes = std::uint64_t{4} << 20;
  static constexpr std::uint64_t kMaxWindowBytes = std::uint64_t{64} << 20;

  /// How far ahead of `written` bytes pages are faulted in.
  static constexpr std::uint64_t window(std::uint64_t written) {
    return written < kMinWindowBytes   ? kMinWindowBytes
           : written > kMaxWindowBytes ? kMaxWindowBytes
                                       : written;
  }

  PrefaultAhead() = default;
  ~PrefaultAhead() { stop(); }
  PrefaultAhead(const PrefaultAhead&) = delete;
  PrefaultAhead& operator=(const PrefaultAhead&) = delete;

  /// Starts faulting in [data, data + size) (stops a previous buffer's first).
  void start(char* data, std::uint64_t size);
  /// The writer has filled the first `bytes`: the window moves on.
  void written(std::uint64_t bytes) {
    if (!thread_.joinable()) return;
    written_.store(bytes, std::memory_order_release);
    written_.notify_one();
  }
  /// Stops and joins the thread; the buffer may then go.
  void stop();

 private:
  void run(char* data, std::uint64_t size);

  static constexpr std::uint64_t kStopped = ~std::uint64_t{0};
  std::atomic<std::uint64_t> written_{0};
  std::thread thread_;
};

}  // namespace gcompute::wire
