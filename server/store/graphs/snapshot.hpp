// SPDX-License-Identifier: Apache-2.0
// Snapshot files of the graph store (graph_wal.hpp) and the small POSIX file helpers the log
// shares with them.
//
// A snapshot "snap-<LSN>.snap" holds every graph as it was after exactly the log records
// with sequence numbers below LSN. Layout (integers little-endian):
//   "GCSNAP01" | u64 lsn | then per graph: u32 length | u32 crc32c(payload) | payload
//   (codec::encode_image) | and last a u32 0xFFFFFFFF end marker | u64 graph count |
//   u32 crc32c of the 16 header bytes and the count.
// It is written to "snap-<LSN>.snap.tmp", fsynced, renamed, and the directory fsynced, so a
// snapshot file under its final name is always complete; any damage to one is corruption,
// and recovery refuses to start rather than guess.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/graphs/graph_model.hpp"

namespace gcompute::server {

namespace fileio {
/// write(2) until done (EINTR retried); INTERNAL naming `path` and errno otherwise.
absl::Status write_all(int fd, const char* data, std::size_t size, const std::string& path);
/// fsync(2) of a file or directory descriptor.
absl::Status sync_fd(int fd, const std::string& path);
/// Opens and fsyncs a directory, so that created, renamed or removed names in it are durable.
absl::Status sync_dir(const std::string& dir);
/// The whole file; NOT_FOUND if missing.
absl::StatusOr<std::string> read_file(const std::string& path);
/// "<dir>/<prefix><20-digit lsn><suffix>".
std::string numbered_path(const std::string& dir, const char* prefix, std::uint64_t lsn,
                          const char* suffix);
}  // namespace fileio

/// Writes one snapshot: create(), add() per graph, finish(). Destroying it unfinished
/// removes the temporary file.
class SnapshotWriter {
 public:
  /// Opens "<dir>/snap-<lsn>.snap.tmp" (truncating a leftover).
  static absl::StatusOr<std::unique_ptr<SnapshotWriter>> create(const std::string& dir,
                                                                std::uint64_t lsn);
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  absl::Status add(const GraphImage& image);
  /// End marker, fsync, close, rename to "snap-<lsn>.snap", fsync of the directory.
  absl::Status finish();

  const std::string& path() const { return final_path_; }

 private:
  SnapshotWriter() = default;
  absl::Status flush();
  std::string dir_, tmp_path_, final_path_;
  int fd_ = -1;
  std::uint64_t lsn_ = 0;
  std::uint64_t count_ = 0;
  std::string buffer_;
  bool finished_ = false;
};

/// Reads a snapshot, calling `graph` for each image in file order. DATA_LOSS naming the file
/// and offset for any damage (bad magic, checksum, truncation, trailing bytes).
/// Returns the snapshot's LSN.
absl::StatusOr<std::uint64_t> read_snapshot(const std::string& path,
                                            const std::function<absl::Status(GraphImage)>& graph);

}  // namespace gcompute::server
