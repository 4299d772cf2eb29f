// SPDX-License-Identifier: Apache-2.0
// Progress on stderr: a bar for transfers (bytes) and one for operations that run as jobs
// (the kernel's own steps), and Ctrl-C that cancels the job a command is waiting for.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>
#include <thread>

#include "gcompute/client/client.hpp"

namespace gcompute::cli {

/// When progress is drawn: `auto` when stderr is a terminal.
enum class ProgressMode { kAuto, kAlways, kNever };
bool progress_shown(ProgressMode mode);

/// A progress callback drawing a bar on stderr for transfers of at least `min_bytes`, or an
/// empty callback when `shown` is false.
client::ProgressCallback make_progress_bar(bool shown, uint64_t min_bytes = 4 * client::kMiB);

/// A job's progress as one line redrawn in place: `[####      ]  42% Apsp round 12 of 28`.
class JobProgressBar {
 public:
  explicit JobProgressBar(std::ostream& err) : err_(err) {}
  void update(const client::JobInfo& job);
  /// Ends the line (once something was drawn).
  void finish();

 private:
  std::ostream& err_;
  std::string last_;
};

/// While alive, SIGINT and SIGTERM cancel `job_id` instead of killing the process, so that an
/// interrupted command does not leave its job running on the server; interrupted() tells the
/// caller why the job ended.
class CancelOnInterrupt {
 public:
  CancelOnInterrupt(client::Client& client, std::string job_id);
  ~CancelOnInterrupt();
  CancelOnInterrupt(const CancelOnInterrupt&) = delete;
  CancelOnInterrupt& operator=(const CancelOnInterrupt&) = delete;
  bool interrupted() const { return interrupted_.load(); }

 private:
  client::Client& client_;
  const std::string job_id_;
  std::atomic<bool> interrupted_{false};
  int pipe_[2] = {-1, -1};
  struct sigaction old_int_ = {};
  struct sigaction old_term_ = {};
  std::thread waiter_;
};

}  // namespace gcompute::cli
