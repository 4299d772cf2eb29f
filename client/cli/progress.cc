// SPDX-License-Identifier: Apache-2.0
#include "cli/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <memory>

namespace gcompute::cli {

client::ProgressCallback make_progress_bar(uint64_t min_bytes) {
  if (!isatty(STDERR_FILENO)) return {};
  auto last_percent = std::make_shared<int>(-1);
  return [min_bytes, last_percent](uint64_t done, uint64_t total) {
    if (total < min_bytes) return;
    const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
    if (done == 0) *last_percent = -1;  // a new transfer starts
    if (percent == *last_percent) return;
    *last_percent = percent;
    constexpr int kWidth = 30;
    char bar[kWidth + 1];
    for (int i = 0; i < kWidth; ++i) bar[i] = i < percent * kWidth / 100 ? '#' : ' ';
    bar[kWidth] = '\0';
    std::fprintf(stderr, "\r[%s] %3d%% %.1f/%.1f MiB", bar, percent,
                 static_cast<double>(done) / client::kMiB,
                 static_cast<double>(total) / client::kMiB);
    if (done >= total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

}  // namespace gcompute::cli
