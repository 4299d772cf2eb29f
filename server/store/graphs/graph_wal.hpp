// SPDX-License-Identifier: Apache-2.0
// Durability of the graph store: one global write-ahead log plus snapshots, in a data
// directory (gcompute-server --data-dir). docs/graphs.md describes the format and policy.
//
// GraphWal is the store's GraphJournal: every create, batch and delete is appended to
// the log (and, with FsyncPolicy::kAlways, fsynced) before the store commits it in memory,
// so an acknowledged change is on disk. Records carry a global sequence number (LSN), so
// the order of changes across graphs (delete then re-create of a name) replays exactly.
//
// Files: "wal-<first LSN>.log" segments of records
//   u32 length | u32 crc32c(payload) | payload = u8 type | u64 lsn | graph id | body
// and "snap-<LSN>.snap" snapshots (snapshot.hpp) holding every graph after the records
// below LSN. A snapshot is taken in a consistent cut (GraphStore::checkpoint): the log is
// rotated to a new segment under the cut, the graphs are written to a temporary file,
// which is fsynced and renamed, the directory fsynced, and only then are older segments
// and snapshots deleted.
//
// Recovery (recover()): the newest snapshot, then every later record in LSN order. A bad
// record (short, length or checksum mismatch, undecodable) at the end of the last segment
// is a torn write from a crash: it is reported with file and offset, never applied, and
// truncated away. Records below the snapshot's LSN at the start of a segment that began
// before the snapshot's cut are skipped and counted (the snapshot holds their effect). A bad
// record with any valid record after it, a damaged snapshot, a gap in the LSNs, an LSN that
// does not increase within a segment or repeats one already replayed, or a record that does
// not replay is corruption: recovery fails with DATA_LOSS naming the file, offset and LSNs,
// and the server does not start.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "store/graphs/graph_store.hpp"

namespace gcompute::server {

/// When the log is forced to disk.
enum class FsyncPolicy {
  kAlways,  ///< before a change is acknowledged (concurrent changes share one fsync)
  kNever,   ///< never for records (the OS writes them back); snapshots are still fsynced
};

/// "always" or "never"; INVALID_ARGUMENT otherwise.
absl::StatusOr<FsyncPolicy> parse_fsync_policy(const std::string& text);

struct GraphWalOptions {
  std::string dir;  ///< created if missing
  FsyncPolicy fsync = FsyncPolicy::kAlways;
  /// A background snapshot starts when the log has grown by this much since the last one
  /// (0: only explicit snapshot() calls).
  std::uint64_t snapshot_after_bytes = 64ull << 20;
  /// Server log lines (recovery reports); stderr when empty.
  std::function<void(const std::string&)> log;
};

class GraphWal final : public GraphJournal {
 public:
  /// Opens (creating) the directory and locks it against a second server. Recovers nothing
  /// yet: build the GraphStore with this as its journal, then call recover().
  static absl::StatusOr<std::unique_ptr<GraphWal>> open(GraphWalOptions options);
  ~GraphWal() override;
  GraphWal(const GraphWal&) = delete;
  GraphWal& operator=(const GraphWal&) = delete;

  /// Rebuilds `store` (empty, with this WAL as its journal) from the directory, then opens
  /// the log for appending and starts background snapshots. Call once, before serving.
  absl::Status recover(GraphStore& store);

  /// Takes a snapshot now and deletes the log and snapshots it makes redundant.
  absl::Status snapshot();

  /// Stops background snapshots; call before the store is destroyed.
  void stop();

  // GraphJournal: append (and maybe fsync) one record. A failed write or fsync
  // poisons the log: this and every later change fail with INTERNAL until a restart.
  absl::Status on_create(const GraphSnapshot& graph) override;
  absl::Status on_apply(const std::string& graph_id, std::span<const Edit> edits,
                        const ApplyResult& result) override;
  absl::Status on_remove(const std::string& graph_id) override;

  /// What recovery found, for tests and the start-up line.
  struct RecoveryReport {
    std::uint64_t snapshot_lsn = 0;  ///< 0 without a snapshot
    std::uint64_t records_replayed = 0;
    std::uint64_t records_in_snapshot = 0;  ///< skipped: below the snapshot's LSN
    std::uint64_t torn_bytes = 0;           ///< truncated from the tail
    std::uint64_t next_lsn = 0;
  };
  const RecoveryReport& report() const { return report_; }
  const std::string& dir() const { return options_.dir; }

 private:
  explicit GraphWal(GraphWalOptions options);
  absl::Status append(std::string payload);
  absl::Status sync_through(std::uint64_t lsn);
  absl::Status open_segment(std::uint64_t first_lsn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status replay_segment(GraphStore& store, const std::string& path, bool last,
                              std::uint64_t& expected);
  void log(const std::string& line) const;
  void background_loop();

  const GraphWalOptions options_;
  int lock_fd_ = -1;
  GraphStore* store_ = nullptr;  // set by recover()
  bool replaying_ = false;       // recover() in progress: journal calls write nothing
  RecoveryReport report_;

  absl::Mutex snapshot_mu_;  // one snapshot at a time; taken before mu_
  absl::Mutex sync_mu_;      // one fsync at a time (group commit); taken before mu_
  std::uint64_t synced_lsn_ ABSL_GUARDED_BY(sync_mu_) = 0;

  absl::Mutex mu_;  // the open segment and the LSN counter
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  std::string segment_path_ ABSL_GUARDED_BY(mu_);
  std::uint64_t next_lsn_ ABSL_GUARDED_BY(mu_) = 1;
  std::uint64_t log_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // appended since the last snapshot
  absl::Status failed_ ABSL_GUARDED_BY(mu_);

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool bg_stop_ = false;    // guarded by bg_mu_
  bool bg_wanted_ = false;  // guarded by bg_mu_
  std::thread bg_;
};

}  // namespace gcompute::server
