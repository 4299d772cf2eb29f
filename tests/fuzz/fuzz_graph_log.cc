// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: recovery of the graph store from a data directory (GraphWal::recover):
// log record frames, LSN order, snapshot files, and the replay of every record through the
// store's validation. The input is a packed directory (graph_log_input.hpp) whose checksums
// are repaired when its flags say so: then mutations reach the decoders, not only the checks.
//
// Properties: recovery never crashes, leaks or reads out of bounds (ASan, UBSan); it either
// fails with a message or yields a store whose invariants hold; and after a successful
// recovery (which may truncate a torn tail and opens a new segment) a second recovery of the
// same directory succeeds with the same graphs, nothing left to truncate.
//
// The store's size limits are small here (4096 vertices and edges per graph): a create record
// may legitimately ask for 2^26 vertices, which is memory admission, not decoding.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "graph_log_input.hpp"
#include "store/graphs/graph_store.hpp"
#include "store/graphs/graph_wal.hpp"
#include "store/graphs/snapshot.hpp"

namespace {

namespace fs = std::filesystem;
using gcompute::server::GraphStore;
using gcompute::server::GraphWal;
using gcompute::server::GraphWalOptions;

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz_graph_log: %s\n", why.c_str());
  std::abort();
}

/// A fresh directory for one input, on tmpfs when there is one (recovery fsyncs), removed
/// when done (libFuzzer may end the process without running exit handlers).
class ScratchDir {
 public:
  ScratchDir() {
    const fs::path base =
        fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    path_ = (base / "gc-fuzz-log-XXXXXX").string();
    if (::mkdtemp(path_.data()) == nullptr) fail("mkdtemp failed");
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) fail("cannot write " + path);
}

struct Recovered {
  std::unique_ptr<GraphWal> wal;
  std::unique_ptr<GraphStore> store;
  absl::Status status;
};

Recovered recover(const std::string& dir) {
  Recovered r;
  GraphWalOptions o;
  o.dir = dir;
  o.fsync = gcompute::server::FsyncPolicy::kNever;
  o.snapshot_after_bytes = 0;  // no background thread
  o.log = [](const std::string&) {};
  auto wal = GraphWal::open(o);
  if (!wal.ok()) fail("open: " + std::string(wal.status().message()));
  r.wal = *std::move(wal);
  GraphStore::Options so;
  so.limits.max_vertices = 4096;
  so.limits.max_edges = 4096;
  so.max_graphs = 64;
  so.journal = r.wal.get();
  r.store = std::make_unique<GraphStore>(so);
  r.status = r.wal->recover(*r.store);
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ScratchDir scratch;
  const std::string& dir = scratch.path();

  gcompute::fuzz::DataDir files =
      gcompute::fuzz::unpack(std::string_view(reinterpret_cast<const char*>(data), size));
  if (files.repair_checksums) {
    if (files.snapshot) gcompute::fuzz::repair_snapshot(*files.snapshot);
    for (std::string& segment : files.segments) gcompute::fuzz::repair_segment(segment);
  }
  std::uint64_t next_name = 1;
  if (files.snapshot) {
    next_name = gcompute::fuzz::snapshot_lsn(*files.snapshot);
    write_file(gcompute::server::fileio::numbered_path(dir, "snap-", next_name, ".snap"),
               *files.snapshot);
  }
  for (const std::string& segment : files.segments) {
    const std::uint64_t lsn = gcompute::fuzz::segment_lsn(segment, next_name);
    const std::string path = gcompute::server::fileio::numbered_path(dir, "wal-", lsn, ".log");
    if (!fs::exists(path)) write_file(path, segment);
    next_name = lsn + 1;
  }

  std::vector<gcompute::server::GraphSnapshot> first;
  std::uint64_t replayed = 0;
  {
    Recovered r = recover(dir);
    if (!r.status.ok()) {
      if (r.status.message().empty()) fail("recovery failed without a message");
      return 0;
    }
    if (absl::Status s = r.store->check_invariants(); !s.ok()) {
      fail("invariants after recovery: " + std::string(s.message()));
    }
    for (const auto& info : r.store->list()) first.push_back(*r.store->get(info.graph_id));
    replayed = r.wal->report().records_replayed;
    r.wal->stop();
  }
  Recovered again = recover(dir);
  if (!again.status.ok()) {
    fail("a second recovery failed: " + std::string(again.status.message()));
  }
  if (again.wal->report().torn_bytes != 0 || again.wal->report().records_replayed != replayed) {
    fail("a second recovery found a torn tail or replayed a different number of records");
  }
  std::vector<gcompute::server::GraphSnapshot> second;
  for (const auto& info : again.store->list()) second.push_back(*again.store->get(info.graph_id));
  if (first != second) fail("a second recovery yields different graphs");
  again.wal->stop();
  return 0;
}
