// SPDX-License-Identifier: Apache-2.0
#include "cli/progress.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_format.h"

namespace gcompute::cli {
namespace {

constexpr int kBarWidth = 30;

std::string bar_of(double fraction) {
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(kBarWidth, ' ');
  for (int i = 0; i < filled && i < kBarWidth; ++i) bar[static_cast<std::size_t>(i)] = '#';
  return "[" + bar + "]";
}

/// Where CancelOnInterrupt's signal handler writes (-1: nowhere).
std::atomic<int> interrupt_fd{-1};

}  // namespace

bool progress_shown(ProgressMode mode) {
  return mode == ProgressMode::kAlways || (mode == ProgressMode::kAuto && isatty(STDERR_FILENO));
}

client::ProgressCallback make_progress_bar(bool shown, uint64_t min_bytes) {
  if (!shown) return {};
  auto last_percent = std::make_shared<int>(-1);
  return [min_bytes, last_percent](uint64_t done, uint64_t total) {
    if (total < min_bytes) return;
    const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
    if (done == 0) *last_percent = -1;  // a new transfer starts
    if (percent == *last_percent) return;
    *last_percent = percent;
    std::fprintf(stderr, "\r%s %3d%% %.1f/%.1f MiB", bar_of(percent / 100.0).c_str(), percent,
                 static_cast<double>(done) / client::kMiB,
                 static_cast<double>(total) / client::kMiB);
    if (done >= total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

void JobProgressBar::update(const client::JobInfo& job) {
  const double fraction = job.fraction < 0 ? 0 : job.fraction > 1 ? 1 : job.fraction;
  std::string line =
      absl::StrFormat("%s %3d%% %s %s", bar_of(fraction), static_cast<int>(fraction * 100),
                      job.method, job.detail.empty() ? job.phase : job.detail);
  if (line == last_) return;
  // Pad over the rest of a longer previous line.
  const std::size_t width = line.size();
  if (last_.size() > width) line.append(last_.size() - width, ' ');
  err_ << "\r" << line << std::flush;
  last_ = line.substr(0, width);
}

void JobProgressBar::finish() {
  if (!last_.empty()) err_ << "\n" << std::flush;
  last_.clear();
}

CancelOnInterrupt::CancelOnInterrupt(client::Client& client, std::string job_id)
    : client_(client), job_id_(std::move(job_id)) {
  // gRPC's threads may take the signal, so the handler only writes to a pipe (async-signal
  // safe) and a thread of ours does the cancelling. SA_RESETHAND: a second Ctrl-C kills.
  if (pipe(pipe_) != 0) return;
  interrupt_fd.store(pipe_[1]);
  struct sigaction action = {};
  action.sa_handler = [](int) {
    const char byte = 1;
    (void)!write(interrupt_fd.load(), &byte, 1);
  };
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
  waiter_ = std::thread([this] {
    char byte = 0;
    // 0 bytes: the destructor closed the pipe.
    if (read(pipe_[0], &byte, 1) == 1) {
      interrupted_.store(true);
      std::fprintf(stderr, "\ngcompute: interrupted: cancelling job %s\n", job_id_.c_str());
      (void)client_.cancel_job(job_id_);
    }
  });
}

CancelOnInterrupt::~CancelOnInterrupt() {
  if (!waiter_.joinable()) return;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  interrupt_fd.store(-1);
  close(pipe_[1]);
  waiter_.join();
  close(pipe_[0]);
}

}  // namespace gcompute::cli
