// SPDX-License-Identifier: Apache-2.0
// Jobs' records under --data-dir: DIR/jobs/<job id>.job, one gcompute.internal.JobRecord per
// file, replaced atomically on each change (temporary file, fsync, rename, fsync of the
// directory) and removed when the job expires. docs/jobs.md says what survives a restart.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/jobs.hpp"

namespace gcompute::server {

class FileJobJournal final : public ops::JobJournal {
 public:
  /// Inline results up to this many encoded bytes are kept across a restart.
  static constexpr std::uint64_t kMaxResultBytes = 4ull << 20;

  /// Uses DIR/jobs (created if missing) and removes temporary files of writes a crash cut
  /// short (the job's previous record stands). Without `fsync` (--fsync never) records
  /// survive a process crash but not a power loss.
  static absl::StatusOr<std::unique_ptr<FileJobJournal>> open(
      const std::string& data_dir, bool fsync = true,
      std::uint64_t max_result_bytes = kMaxResultBytes);

  /// Every record, a queued job's request decoded. DATA_LOSS naming the file when one cannot
  /// be read: the server refuses to start rather than lose jobs silently.
  absl::StatusOr<std::vector<ops::RestoredJob>> load() const;

  std::shared_ptr<const std::string> encode_result(const ops::JobView& view) override;
  absl::Status save(const ops::JobRecord& record) override;
  absl::Status erase(const std::string& id) override;

  const std::string& dir() const { return dir_; }
  /// The file of job `id`.
  std::string path_of(const std::string& id) const;

 private:
  FileJobJournal(std::string dir, bool fsync, std::uint64_t max_result_bytes)
      : dir_(std::move(dir)), fsync_(fsync), max_result_bytes_(max_result_bytes) {}

  const std::string dir_;
  const bool fsync_;
  const std::uint64_t max_result_bytes_;
};

}  // namespace gcompute::server
