// SPDX-License-Identifier: Apache-2.0
#include "store/graphs/graph_wal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "store/graphs/byte_codec.hpp"
#include "store/graphs/graph_codec.hpp"
#include "store/graphs/snapshot.hpp"

namespace gcompute::server {
namespace {

// Record types on disk. Never renumber.
enum RecordType : std::uint8_t { kCreate = 1, kApply = 2, kRemove = 3 };

constexpr std::size_t kHeaderBytes = 8;  // u32 length, u32 crc32c
// type, lsn, and at least the length byte of the graph id: shorter is never a record (a
// zero-filled tail would otherwise read as empty records with a matching CRC of 0).
constexpr std::uint32_t kMinPayload = 1 + 8 + 1;
constexpr std::uint32_t kMaxPayload = 0x7FFFFFFFu;

/// Checks the frame at `off`: OK with the payload length, or why it is not a record.
absl::StatusOr<std::uint32_t> check_frame(const std::string& data, std::size_t off) {
  const std::size_t left = data.size() - off;
  if (left < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat("a ", left, "-byte fragment of a record header"));
  }
  const std::uint32_t len = codec::load_le<std::uint32_t>(data.data() + off);
  if (len < kMinPayload || len > kMaxPayload) {
    return absl::DataLossError(absl::StrCat("record length ", len, " is impossible"));
  }
  if (left - kHeaderBytes < len) {
    return absl::DataLossError(absl::StrCat("record length ", len,
                                            " runs past the end of the file (", left - kHeaderBytes,
                                            " bytes left)"));
  }
  if (codec::crc32c(0, data.data() + off + kHeaderBytes, len) !=
      codec::load_le<std::uint32_t>(data.data() + off + 4)) {
    return absl::DataLossError("checksum mismatch");
  }
  return len;
}

struct Numbered {
  std::uint64_t lsn = 0;
  std::string path;
  bool operator<(const Numbered& o) const { return lsn < o.lsn; }
};

/// "<prefix><20 digits><suffix>" -> the number.
bool parse_name(const std::string& name, const std::string& prefix, const std::string& suffix,
                std::uint64_t& lsn) {
  if (name.size() != prefix.size() + 20 + suffix.size() || name.compare(0, prefix.size(), prefix) ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix)) {
    return false;
  }
  lsn = 0;
  for (std::size_t i = prefix.size(); i < prefix.size() + 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    lsn = lsn * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return true;
}

absl::Status truncate_file(const std::string& path, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  absl::Status s;
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    s = absl::InternalError(absl::StrCat("cannot truncate ", path, ": ", std::strerror(errno)));
  } else {
    s = fileio::sync_fd(fd, path);
  }
  ::close(fd);
  return s;
}

}  // namespace

absl::StatusOr<FsyncPolicy> parse_fsync_policy(const std::string& text) {
  if (text == "always") return FsyncPolicy::kAlways;
  if (text == "never") return FsyncPolicy::kNever;
  return absl::InvalidArgumentError(
      absl::StrCat("--fsync = \"", text, "\": expected always or never"));
}

GraphWal::GraphWal(GraphWalOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<GraphWal>> GraphWal::open(GraphWalOptions options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("the data directory is empty");
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create data directory ", options.dir, ": ", ec.message()));
  }
  std::unique_ptr<GraphWal> wal(new GraphWal(std::move(options)));
  const std::string lock_path = wal->options_.dir + "/LOCK";
  wal->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (wal->lock_fd_ < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", lock_path, ": ", std::strerror(errno)));
  }
  if (::flock(wal->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("data directory ", wal->options_.dir,
                                                      " is in use by another process (", lock_path,
                                                      " is locked)"));
  }
  return wal;
}

GraphWal::~GraphWal() {
  stop();
  {
    absl::MutexLock lock(&mu_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void GraphWal::log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "gcompute-server: " << line << std::endl;
  }
}

absl::Status GraphWal::open_segment(std::uint64_t first_lsn) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  segment_path_ = fileio::numbered_path(options_.dir, "wal-", first_lsn, ".log");
  fd_ = ::open(segment_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open log segment ", segment_path_, ": ", std::strerror(errno)));
  }
  return fileio::sync_dir(options_.dir);  // the new name must survive a crash
}

// ---- recovery ---------------------------------------------------------------------------

absl::Status GraphWal::recover(GraphStore& store) {
  store_ = &store;
  replaying_ = true;
  std::vector<Numbered> snapshots, segments;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::uint64_t lsn = 0;
    if (parse_name(name, "snap-", ".snap", lsn)) {
      snapshots.push_back({lsn, entry.path().string()});
    } else if (parse_name(name, "wal-", ".log", lsn)) {
      segments.push_back({lsn, entry.path().string()});
    } else if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      // An unfinished snapshot: the log it was to replace is still complete.
      log(absl::StrCat("removing unfinished snapshot ", entry.path().string()));
      std::filesystem::remove(entry.path(), ec);
    }
  }
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot list ", options_.dir, ": ", ec.message()));
  }
  std::sort(snapshots.begin(), snapshots.end());
  std::sort(segments.begin(), segments.end());

  std::uint64_t expected = 1;  // the LSN of the next record to replay
  std::uint64_t log_since_snapshot = 0;
  if (!snapshots.empty()) {
    const Numbered& latest = snapshots.back();
    absl::StatusOr<std::uint64_t> lsn =
        read_snapshot(latest.path, [&store](GraphImage image) { return store.restore(image); });
    if (!lsn.ok()) return lsn.status();
    if (*lsn != latest.lsn) {
      return absl::DataLossError(absl::StrCat("snapshot ", latest.path, " says it covers LSN ",
                                              *lsn, ", its name says ", latest.lsn));
    }
    expected = latest.lsn;
    report_.snapshot_lsn = latest.lsn;
  }
  for (std::size_t i = 0; i < segments.size(); ++i) {
    // A segment is covered by the snapshot when the next one starts at or before the cut.
    // (Not "before the next record": a segment overlapping one already replayed is corrupt.)
    if (i + 1 < segments.size() && segments[i + 1].lsn <= report_.snapshot_lsn) {
      log(absl::StrCat("log ", segments[i].path, ": wholly below the snapshot's LSN ",
                       report_.snapshot_lsn,
                       " (left by a snapshot whose clean-up did not finish); skipped"));
      continue;
    }
    if (segments[i].lsn > expected) {
      return absl::DataLossError(absl::StrCat(
          "the log has a gap: the next record should be LSN ", expected, " but ", segments[i].path,
          " starts at LSN ", segments[i].lsn, "; refusing to start"));
    }
    if (absl::Status s =
            replay_segment(store, segments[i].path, i + 1 == segments.size(), expected);
        !s.ok()) {
      return s;
    }
    // The log since the snapshot counts towards the next one across restarts.
    const std::uintmax_t size = std::filesystem::file_size(segments[i].path, ec);
    if (!ec) log_since_snapshot += size;
  }
  replaying_ = false;
  report_.next_lsn = expected;
  {
    absl::MutexLock lock(&mu_);
    next_lsn_ = expected;
    log_bytes_ = log_since_snapshot;
    if (absl::Status s = open_segment(expected); !s.ok()) return s;
  }
  bg_wanted_ =
      options_.snapshot_after_bytes > 0 && log_since_snapshot >= options_.snapshot_after_bytes;
  {
    absl::MutexLock lock(&sync_mu_);
    synced_lsn_ = expected - 1;
  }
  if (options_.snapshot_after_bytes > 0) bg_ = std::thread([this] { background_loop(); });
  return absl::OkStatus();
}

absl::Status GraphWal::replay_segment(GraphStore& store, const std::string& path, bool last,
                                      std::uint64_t& expected) {
  absl::StatusOr<std::string> read = fileio::read_file(path);
  if (!read.ok()) return read.status();
  const std::string& data = *read;
  std::size_t off = 0;
  std::optional<std::uint64_t> previous_lsn;  // of the record before, in this segment
  std::uint64_t covered = 0;                  // records below the snapshot's LSN
  auto report_covered = [&] {
    if (covered == 0) return;
    report_.records_in_snapshot += covered;
    log(absl::StrCat("log ", path, ": ", covered, " records below the snapshot's LSN ",
                     report_.snapshot_lsn, " skipped (the snapshot holds their effect)"));
  };
  while (off < data.size()) {
    absl::StatusOr<std::uint32_t> len = check_frame(data, off);
    if (!len.ok()) {
      const std::string why(len.status().message());
      if (!last) {
        return absl::DataLossError(absl::StrCat(
            "log ", path, " is corrupt at offset ", off, " (", why,
            ") and it is not the last segment: corruption in the middle of the log; refusing "
            "to start (repair or move the data directory)"));
      }
      for (std::size_t p = off + 1; p + kHeaderBytes + kMinPayload <= data.size(); ++p) {
        if (check_frame(data, p).ok()) {
          return absl::DataLossError(absl::StrCat(
              "log ", path, " is corrupt at offset ", off, " (", why,
              ") but a valid record follows at offset ", p,
              ": corruption in the middle of the log, not a torn write; refusing to start "
              "(repair or move the data directory)"));
        }
      }
      log(absl::StrCat("log ", path, ": torn or corrupt tail at offset ", off, " (", why, "; ",
                       data.size() - off, " bytes): not applied, truncated"));
      report_.torn_bytes += data.size() - off;
      report_covered();
      return truncate_file(path, off);
    }
    const std::string_view payload(data.data() + off + kHeaderBytes, *len);
    auto corrupt = [&](const std::string& what) {
      return absl::DataLossError(
          absl::StrCat("log ", path, " at offset ", off, ": ", what, "; refusing to start"));
    };
    codec::Reader r(payload);
    std::uint8_t type = 0;
    std::uint64_t lsn = 0;
    std::string graph_id;
    if (!r.u8(type).ok() || !r.u64_fixed(lsn).ok() || !r.bytes(graph_id).ok()) {
      return corrupt("a record passes its checksum but its header does not decode");
    }
    // Inside a segment LSNs go up by one from record to record; one that does not increase
    // is a duplicated or misplaced record (a copy of a block, a writer bug), never a crash.
    if (previous_lsn && lsn <= *previous_lsn) {
      return corrupt(absl::StrCat("record LSN ", lsn, " follows record LSN ", *previous_lsn,
                                  " in the same segment (sequence numbers must increase): a "
                                  "duplicated or misplaced record"));
    }
    previous_lsn = lsn;
    if (lsn < report_.snapshot_lsn) {
      // The segment began before the snapshot's cut: the snapshot holds this record's effect.
      ++covered;
      off += kHeaderBytes + *len;
      continue;
    }
    if (lsn < expected) {
      return corrupt(absl::StrCat("record LSN ", lsn,
                                  " was already replayed (the next should be LSN ", expected,
                                  "): segments overlap"));
    }
    if (lsn != expected) {
      return corrupt(absl::StrCat("record LSN ", lsn, " where LSN ", expected, " was expected"));
    }
    absl::Status applied;
    if (type == kCreate) {
      // The log holds the id a create got; an empty one would make the store invent one
      // (a different one at every start).
      if (graph_id.empty()) return corrupt("a create record without a graph id");
      std::uint64_t n = 0, m = 0;
      if (!r.varint(n).ok() || !r.varint(m).ok() || m > r.left()) {
        return corrupt("a create record does not decode");
      }
      std::vector<Hyperedge> edges(m);
      for (Hyperedge& e : edges) {
        if (!codec::decode_edge_body(r, e).ok()) return corrupt("a create record does not decode");
      }
      absl::StatusOr<GraphInfo> info = store.create(graph_id, n, std::move(edges));
      applied = info.status();
    } else if (type == kApply) {
      std::uint64_t version = 0;
      if (!r.varint(version).ok() || version < 2) return corrupt("an edit record does not decode");
      absl::StatusOr<std::vector<Edit>> edits = codec::decode_edits(r);
      if (!edits.ok())
        return corrupt(absl::StrCat("an edit record does not decode: ", edits.status().message()));
      absl::StatusOr<ApplyResult> result = store.apply(graph_id, version - 1, *edits);
      applied = result.status();
      if (result.ok() && result->version != version) {
        applied = absl::InternalError(
            absl::StrCat("replay produced version ", result->version, ", the log says ", version));
      }
    } else if (type == kRemove) {
      applied = store.remove(graph_id);
    } else {
      return corrupt(absl::StrCat("unknown record type ", type));
    }
    if (applied.ok() && r.left() != 0)
      applied = absl::DataLossError("trailing bytes in the record");
    if (!applied.ok()) {
      return corrupt(absl::StrCat("record LSN ", lsn, " (graph ", graph_id,
                                  ") does not replay: ", applied.message()));
    }
    ++report_.records_replayed;
    ++expected;
    off += kHeaderBytes + *len;
  }
  report_covered();
  return absl::OkStatus();
}

// ---- appending --------------------------------------------------------------------------

namespace {

/// A payload with a placeholder LSN that append() fills in.
codec::Writer start_record(RecordType type, const std::string& graph_id) {
  codec::Writer w;
  w.u8(type);
  w.u64_fixed(0);
  w.bytes(graph_id);
  return w;
}

}  // namespace

absl::Status GraphWal::on_create(const GraphSnapshot& graph) {
  if (replaying_) return absl::OkStatus();
  codec::Writer w = start_record(kCreate, graph.info.graph_id);
  w.varint(graph.vertices.size());  // create() numbers vertices 0..n-1 and edges 0..m-1
  w.varint(graph.edges.size());
  for (const Hyperedge& e : graph.edges) codec::encode_edge_body(w, e);
  return append(w.take());
}

absl::Status GraphWal::on_apply(const std::string& graph_id, std::span<const Edit> edits,
                                const ApplyResult& result) {
  if (replaying_) return absl::OkStatus();
  codec::Writer w = start_record(kApply, graph_id);
  w.varint(result.version);
  codec::encode_edits(w, edits);
  return append(w.take());
}

absl::Status GraphWal::on_remove(const std::string& graph_id) {
  if (replaying_) return absl::OkStatus();
  return append(start_record(kRemove, graph_id).take());
}

absl::Status GraphWal::append(std::string payload) {
  if (payload.size() > kMaxPayload) {
    return absl::ResourceExhaustedError(absl::StrCat("the change encodes to ", payload.size(),
                                                     " bytes, more than a log record holds (",
                                                     kMaxPayload, ")"));
  }
  std::uint64_t lsn = 0;
  bool want_snapshot = false;
  {
    absl::MutexLock lock(&mu_);
    if (!failed_.ok()) return failed_;
    if (fd_ < 0) return absl::FailedPreconditionError("the graph log is not open (no recover())");
    lsn = next_lsn_;
    codec::store_le(payload.data() + 1, lsn);  // the placeholder after the type byte
    codec::Writer frame;
    frame.u32_fixed(static_cast<std::uint32_t>(payload.size()));
    frame.u32_fixed(codec::crc32c(0, payload.data(), payload.size()));
    frame.out() += payload;
    if (absl::Status s =
            fileio::write_all(fd_, frame.out().data(), frame.out().size(), segment_path_);
        !s.ok()) {
      // Part of the record may be in the file: nothing more may follow it.
      failed_ = absl::InternalError(
          absl::StrCat("the graph write-ahead log failed (", s.message(),
                       "); graph changes are refused until the server restarts"));
      return failed_;
    }
    ++next_lsn_;
    log_bytes_ += frame.out().size();
    want_snapshot =
        options_.snapshot_after_bytes > 0 && log_bytes_ >= options_.snapshot_after_bytes;
  }
  if (want_snapshot) {
    std::lock_guard<std::mutex> lock(bg_mu_);
    bg_wanted_ = true;
    bg_cv_.notify_one();
  }
  if (options_.fsync == FsyncPolicy::kAlways) return sync_through(lsn);
  return absl::OkStatus();
}

absl::Status GraphWal::sync_through(std::uint64_t lsn) {
  // Group commit: whoever holds sync_mu_ fsyncs every record written so far; the callers
  // queued behind it usually find their record already covered.
  absl::MutexLock sync_lock(&sync_mu_);
  if (synced_lsn_ >= lsn) return absl::OkStatus();
  int fd = -1;
  std::uint64_t upto = 0;
  std::string path;
  {
    absl::MutexLock lock(&mu_);
    if (!failed_.ok()) return failed_;
    fd = fd_;  // stable: rotation holds sync_mu_
    upto = next_lsn_ - 1;
    path = segment_path_;
  }
  if (::fdatasync(fd) != 0) {
    const std::string why = std::strerror(errno);
    absl::MutexLock lock(&mu_);
    failed_ = absl::InternalError(
        absl::StrCat("fdatasync of the graph write-ahead log ", path, " failed (", why,
                     "); graph changes are refused until the server restarts"));
    return failed_;
  }
  synced_lsn_ = upto;
  return absl::OkStatus();
}

// ---- snapshots --------------------------------------------------------------------------

absl::Status GraphWal::snapshot() {
  absl::MutexLock snapshot_lock(&snapshot_mu_);
  if (store_ == nullptr || replaying_) {
    return absl::FailedPreconditionError("snapshot before recovery finished");
  }
  std::unique_ptr<SnapshotWriter> writer;
  std::uint64_t cut = 0;
  absl::Status status = store_->checkpoint(
      [&](const std::vector<std::pair<std::string, const GraphState*>>& graphs) -> absl::Status {
        {
          // No change is in progress (checkpoint holds every graph): rotate at the cut.
          absl::MutexLock sync_lock(&sync_mu_);
          absl::MutexLock lock(&mu_);
          if (!failed_.ok()) return failed_;
          cut = next_lsn_;
          if (absl::Status s = open_segment(cut); !s.ok()) {
            failed_ = absl::InternalError(
                absl::StrCat("the graph write-ahead log failed (", s.message(),
                             "); graph changes are refused until the server restarts"));
            return failed_;
          }
          log_bytes_ = 0;
          synced_lsn_ = cut - 1;  // every earlier record's appender has returned
        }
        absl::StatusOr<std::unique_ptr<SnapshotWriter>> w =
            SnapshotWriter::create(options_.dir, cut);
        if (!w.ok()) return w.status();
        writer = *std::move(w);
        for (const auto& [id, state] : graphs) {
          if (absl::Status s = writer->add(state->image(id)); !s.ok()) return s;
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (absl::Status s = writer->finish(); !s.ok()) return s;
  // The snapshot is durable: what it covers can go.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir, ec)) {
    const std::string name = entry.path().filename().string();
    std::uint64_t lsn = 0;
    if ((parse_name(name, "snap-", ".snap", lsn) || parse_name(name, "wal-", ".log", lsn)) &&
        lsn < cut) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
  return fileio::sync_dir(options_.dir);
}

void GraphWal::background_loop() {
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (true) {
    bg_cv_.wait(lock, [this] { return bg_stop_ || bg_wanted_; });
    if (bg_stop_) return;
    bg_wanted_ = false;
    lock.unlock();
    absl::Status s = snapshot();
    lock.lock();
    if (!s.ok()) {
      log(absl::StrCat("graph snapshot failed (retrying in 10 s): ", s.message()));
      bg_cv_.wait_for(lock, std::chrono::seconds(10), [this] { return bg_stop_; });
    }
  }
}

void GraphWal::stop() {
  {
    std::lock_guard<std::mutex> lock(bg_mu_);
    bg_stop_ = true;
    bg_cv_.notify_all();
  }
  if (bg_.joinable()) bg_.join();
}

}  // namespace gcompute::server
