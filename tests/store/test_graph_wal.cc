// SPDX-License-Identifier: Apache-2.0
// GraphWal: restarts reproduce the store exactly (creates, batches, deletes, re-creates, id
// counters), snapshots + log replay, torn and corrupt tails (reported, never applied,
// truncated), corruption in the middle and sequence numbers that do not increase (start-up
// refused), records already in the snapshot (skipped, counted), damaged snapshots, the
// directory lock, concurrent appenders (group commit), background snapshots, and the on-disk
// byte layout.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "store/graphs/graph_codec.hpp"
#include "store/graphs/graph_store.hpp"
#include "store/graphs/graph_wal.hpp"

namespace gcompute::server {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

/// A fresh directory under TMPDIR, removed at the end.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = absl::StrCat(base ? base : "/tmp", "/gc-wal-XXXXXX");
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// A store with its WAL, recovered from `dir`.
struct Node {
  std::vector<std::string> log;
  std::unique_ptr<GraphWal> wal;
  std::unique_ptr<GraphStore> store;
  absl::Status recovered;

  explicit Node(const std::string& dir, std::uint64_t snapshot_after = 0,
                FsyncPolicy fsync = FsyncPolicy::kAlways) {
    GraphWalOptions o;
    o.dir = dir;
    o.fsync = fsync;
    o.snapshot_after_bytes = snapshot_after;
    o.log = [this](const std::string& line) { log.push_back(line); };
    absl::StatusOr<std::unique_ptr<GraphWal>> w = GraphWal::open(o);
    if (!w.ok()) {
      recovered = w.status();
      return;
    }
    wal = *std::move(w);
    GraphStore::Options so;
    so.journal = wal.get();
    store = std::make_unique<GraphStore>(so);
    recovered = wal->recover(*store);
  }
  ~Node() {
    if (wal) wal->stop();
    store.reset();
    wal.reset();
  }
};

/// A data dir under test and a reference store without a WAL that gets the same successful
/// operations, with the source of their random batches.
struct Twin {
  explicit Twin(std::uint64_t seed) : rng(seed) {}
  TempDir dir;
  GraphStore ref;
  std::mt19937_64 rng;

  void create(GraphStore& s, const std::string& id, std::uint64_t n, std::vector<Hyperedge> e) {
    ASSERT_TRUE(s.create(id, n, e).ok());
    ASSERT_TRUE(ref.create(id, n, e).ok());
  }
  /// A random batch against graph `id`, mostly valid. Returns whether it applied.
  bool random_batch(GraphStore& s, const std::string& id) {
    absl::StatusOr<GraphSnapshot> snap = ref.get(id);
    EXPECT_TRUE(snap.ok());
    std::vector<Edit> edits;
    const int count = 1 + static_cast<int>(rng() % 4);
    std::vector<std::uint64_t> vs = snap->vertices;
    std::vector<std::uint64_t> es;
    for (const Hyperedge& e : snap->edges) es.push_back(e.id);
    auto pick = [&](const std::vector<std::uint64_t>& ids) { return ids[rng() % ids.size()]; };
    for (int i = 0; i < count; ++i) {
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 2 || vs.empty()) {
        edits.push_back(AddVertex{});
      } else if (kind < 5) {
        std::uint64_t a = pick(vs), b = pick(vs);
        edits.push_back(AddEdge{{a}, {b}, static_cast<double>(rng() % 100) / 4});
      } else if (kind < 7 && !es.empty()) {
        edits.push_back(SetWeight{pick(es), static_cast<double>(rng() % 100) - 20.5});
      } else if (kind < 8 && !es.empty()) {
        const std::uint64_t e = pick(es);
        edits.push_back(DeleteEdge{e});
        std::erase(es, e);
      } else if (kind < 9) {
        const std::uint64_t v = pick(vs);
        edits.push_back(DeleteVertex{v});
        std::erase(vs, v);
        es.clear();  // incident edges may be gone: later edits in this batch avoid edges
      } else {
        edits.push_back(DecomposeVertex{pick(vs), {}, 1.5});
      }
    }
    if (rng() % 20 == 0) edits.push_back(DeleteEdge{1u << 30});  // fails: nothing applies
    absl::StatusOr<ApplyResult> a = s.apply(id, std::nullopt, edits);
    absl::StatusOr<ApplyResult> b = ref.apply(id, std::nullopt, edits);
    EXPECT_EQ(a.ok(), b.ok()) << a.status() << " vs " << b.status();
    if (a.ok() && b.ok()) {
      EXPECT_EQ(*a, *b);
    }
    return a.ok();
  }
};

/// Both stores hold the same graphs, and continue identically (id counters included).
void expect_same(GraphStore& got, GraphStore& want) {
  ASSERT_EQ(got.list(), want.list());
  for (const GraphInfo& info : want.list()) {
    EXPECT_EQ(*got.get(info.graph_id), *want.get(info.graph_id)) << info.graph_id;
  }
  EXPECT_TRUE(got.check_invariants().ok());
}

std::vector<std::string> files(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_all(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

/// Offsets of the records in a segment (walking the length prefixes).
std::vector<std::size_t> record_offsets(const std::string& data) {
  std::vector<std::size_t> out;
  std::size_t off = 0;
  while (off + 8 <= data.size()) {
    out.push_back(off);
    std::uint32_t len = 0;
    for (int i = 0; i < 4; ++i)
      len |= std::uint32_t{static_cast<unsigned char>(data[off + i])} << (8 * i);
    off += 8 + len;
  }
  return out;
}

TEST(GraphWal, CreateEditDeleteRecreateSurviveRestarts) {
  Twin twin(11);
  {
    Node node(twin.dir.path());
    ASSERT_TRUE(node.recovered.ok()) << node.recovered;
    twin.create(*node.store, "a", 4, {Hyperedge{0, {0, 1}, {2}, 1.5}});
    twin.create(*node.store, "b", 2, {});
    twin.create(*node.store, "gone", 3, {});
    for (int i = 0; i < 40; ++i) twin.random_batch(*node.store, i % 2 ? "a" : "b");
    ASSERT_TRUE(node.store->remove("gone").ok());
    ASSERT_TRUE(twin.ref.remove("gone").ok());
    ASSERT_TRUE(node.store->remove("b").ok());
    ASSERT_TRUE(twin.ref.remove("b").ok());
    twin.create(*node.store, "b", 7, {Hyperedge{0, {6}, {0}, -2}});  // same name, new graph
    for (int i = 0; i < 10; ++i) twin.random_batch(*node.store, "b");
  }
  for (int restart = 0; restart < 2; ++restart) {
    Node node(twin.dir.path());
    ASSERT_TRUE(node.recovered.ok()) << node.recovered;
    EXPECT_EQ(node.wal->report().torn_bytes, 0u);
    expect_same(*node.store, twin.ref);
    // Ids continue where they were (counters survive even after deletions).
    for (int i = 0; i < 10; ++i) twin.random_batch(*node.store, i % 2 ? "a" : "b");
    expect_same(*node.store, twin.ref);
  }
}

TEST(GraphWal, SnapshotThenLogReplayEqualsTheStore) {
  Twin twin(12);
  {
    Node node(twin.dir.path());
    ASSERT_TRUE(node.recovered.ok()) << node.recovered;
    twin.create(*node.store, "g", 10, {Hyperedge{0, {0}, {1}, 1}});
    twin.create(*node.store, "h", 3, {});
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 30; ++i) twin.random_batch(*node.store, i % 3 ? "g" : "h");
      ASSERT_TRUE(node.wal->snapshot().ok());
      // The snapshot replaced everything before it: one snapshot, one (fresh) segment.
      EXPECT_EQ(files(twin.dir.path(), "snap-").size(), 1u);
      EXPECT_EQ(files(twin.dir.path(), "wal-").size(), 1u);
    }
    ASSERT_TRUE(node.store->remove("h").ok());
    ASSERT_TRUE(twin.ref.remove("h").ok());
    for (int i = 0; i < 30; ++i) twin.random_batch(*node.store, "g");
  }
  Node node(twin.dir.path());
  ASSERT_TRUE(node.recovered.ok()) << node.recovered;
  EXPECT_GT(node.wal->report().snapshot_lsn, 0u);
  EXPECT_GT(node.wal->report().records_replayed, 0u);
  expect_same(*node.store, twin.ref);
  for (int i = 0; i < 10; ++i) twin.random_batch(*node.store, "g");
  expect_same(*node.store, twin.ref);
}

/// Writes "g" with three batches (versions 2..4); returns the reference before the last.
void three_batches(const std::string& dir, GraphSnapshot& before_last, GraphSnapshot& last) {
  Node node(dir);
  ASSERT_TRUE(node.recovered.ok()) << node.recovered;
  ASSERT_TRUE(node.store->create("g", 2, {}).ok());
  std::vector<Edit> a{AddEdge{{0}, {1}, 2}}, b{AddVertex{}}, c{AddEdge{{1}, {2}, 3}, AddVertex{}};
  ASSERT_TRUE(node.store->apply("g", std::nullopt, a).ok());
  ASSERT_TRUE(node.store->apply("g", std::nullopt, b).ok());
  before_last = *node.store->get("g");
  ASSERT_TRUE(node.store->apply("g", std::nullopt, c).ok());
  last = *node.store->get("g");
}

/// A data dir after three_batches(), whose last WAL segment a test damages before a restart.
struct ThreeBatchDir {
  TempDir dir;
  GraphSnapshot before_last, last;  // the graph before and after the last batch
  std::string segment;              // the last WAL segment
  std::string bytes;                // its contents as written

  void write() {
    ASSERT_NO_FATAL_FAILURE(three_batches(dir.path(), before_last, last));
    segment = files(dir.path(), "wal-").back();
    bytes = read_all(segment);
  }
};

TEST(GraphWal, TruncatedTailIsReportedNotAppliedAndCutAway) {
  for (std::size_t cut : {1, 5, 9, 14}) {  // inside the header and inside the payload
    ThreeBatchDir w;
    ASSERT_NO_FATAL_FAILURE(w.write());
    std::string data = w.bytes;
    const std::size_t last_off = record_offsets(data).back();
    const std::size_t last_len = data.size() - last_off;
    ASSERT_LT(cut, last_len);
    data.resize(data.size() - cut);
    write_all(w.segment, data);

    Node node(w.dir.path());
    ASSERT_TRUE(node.recovered.ok()) << node.recovered;
    EXPECT_EQ(*node.store->get("g"), w.before_last) << "cut " << cut;
    EXPECT_EQ(node.wal->report().torn_bytes, last_len - cut);
    ASSERT_EQ(node.log.size(), 1u);
    EXPECT_THAT(node.log[0], HasSubstr(w.segment));
    EXPECT_THAT(node.log[0], HasSubstr(absl::StrCat("offset ", last_off)));
    EXPECT_EQ(fs::file_size(w.segment), last_off);  // truncated
    // Appending goes on, and a restart sees it.
    std::vector<Edit> again{AddVertex{}};
    ASSERT_TRUE(node.store->apply("g", 3, again).ok());
    GraphSnapshot after = *node.store->get("g");
    node.~Node();
    new (&node) Node(w.dir.path());
    ASSERT_TRUE(node.recovered.ok()) << node.recovered;
    EXPECT_EQ(*node.store->get("g"), after);
    EXPECT_TRUE(node.log.empty());
  }
}

TEST(GraphWal, FlippedByteInTheTailIsDetectedNotApplied) {
  for (std::size_t at : {0, 4, 8, 12, 20}) {  // length, crc, type, lsn, body
    ThreeBatchDir w;
    ASSERT_NO_FATAL_FAILURE(w.write());
    std::string data = w.bytes;
    const std::size_t last_off = record_offsets(data).back();
    ASSERT_LT(last_off + at, data.size());
    data[last_off + at] ^= 0x10;
    write_all(w.segment, data);

    Node node(w.dir.path());
    ASSERT_TRUE(node.recovered.ok()) << node.recovered;
    EXPECT_EQ(*node.store->get("g"), w.before_last) << "flipped byte " << at;
    ASSERT_EQ(node.log.size(), 1u);
    EXPECT_THAT(node.log[0], HasSubstr(absl::StrCat("offset ", last_off)));
    EXPECT_EQ(fs::file_size(w.segment), last_off);
  }
}

TEST(GraphWal, ZeroFilledTailIsTorn) {
  ThreeBatchDir w;
  ASSERT_NO_FATAL_FAILURE(w.write());
  std::string data = w.bytes;
  const std::size_t size = data.size();
  data.append(4096, '\0');  // a file extended but not written before the crash
  write_all(w.segment, data);
  Node node(w.dir.path());
  ASSERT_TRUE(node.recovered.ok()) << node.recovered;
  EXPECT_EQ(*node.store->get("g"), w.last);
  EXPECT_EQ(node.wal->report().torn_bytes, 4096u);
  EXPECT_EQ(fs::file_size(w.segment), size);
}

TEST(GraphWal, CorruptionInTheMiddleStopsStartUp) {
  ThreeBatchDir w;
  ASSERT_NO_FATAL_FAILURE(w.write());
  const std::string& original = w.bytes;
  const std::vector<std::size_t> offs = record_offsets(original);
  ASSERT_EQ(offs.size(), 4u);  // create + 3 batches
  for (std::size_t rec : {0, 1, 2}) {
    std::string data = original;
    data[offs[rec] + 12] ^= 0x01;
    write_all(w.segment, data);
    Node node(w.dir.path());
    EXPECT_EQ(node.recovered.code(), absl::StatusCode::kDataLoss) << node.recovered;
    EXPECT_THAT(std::string(node.recovered.message()), HasSubstr(w.segment));
    EXPECT_THAT(std::string(node.recovered.message()),
                HasSubstr(absl::StrCat("corrupt at offset ", offs[rec])));
    EXPECT_THAT(std::string(node.recovered.message()), HasSubstr("middle of the log"));
    EXPECT_EQ(read_all(w.segment), data) << "nothing may be truncated when start-up is refused";
  }
}

TEST(GraphWal, DamagedSnapshotStopsStartUp) {
  TempDir dir;
  {
    Node node(dir.path());
    ASSERT_TRUE(node.recovered.ok());
    ASSERT_TRUE(node.store->create("g", 5, {Hyperedge{0, {0}, {4}, 1}}).ok());
    ASSERT_TRUE(node.wal->snapshot().ok());
  }
  const std::string snap = files(dir.path(), "snap-").back();
  std::string data = read_all(snap);
  data[20] ^= 0x40;
  write_all(snap, data);
  Node node(dir.path());
  EXPECT_EQ(node.recovered.code(), absl::StatusCode::kDataLoss) << node.recovered;
  EXPECT_THAT(std::string(node.recovered.message()), HasSubstr(snap));
}

TEST(GraphWal, UnfinishedSnapshotIsIgnored) {
  TempDir dir;
  {
    Node node(dir.path());
    ASSERT_TRUE(node.recovered.ok());
    ASSERT_TRUE(node.store->create("g", 5, {}).ok());
  }
  write_all(dir.path() + "/snap-00000000000000000002.snap.tmp", "half a snapshot");
  Node node(dir.path());
  ASSERT_TRUE(node.recovered.ok()) << node.recovered;
  EXPECT_EQ(node.store->info("g")->num_vertices, 5u);
  EXPECT_TRUE(files(dir.path(), "snap-").empty());
}

TEST(GraphWal, SecondServerOnTheDirectoryIsRefused) {
  TempDir dir;
  Node first(dir.path());
  ASSERT_TRUE(first.recovered.ok());
  Node second(dir.path());
  EXPECT_EQ(second.recovered.code(), absl::StatusCode::kFailedPrecondition) << second.recovered;
}

TEST(GraphWal, ConcurrentWritersGroupCommitAndBackgroundSnapshots) {
  TempDir dir;
  constexpr int kThreads = 6;
  constexpr int kBatches = 60;
  std::vector<GraphSnapshot> want(kThreads);
  {
    Node node(dir.path(), /*snapshot_after=*/4096);
    ASSERT_TRUE(node.recovered.ok());
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&node, &want, t] {
        const std::string id = absl::StrCat("t", t);
        ASSERT_TRUE(node.store->create(id, 1, {}).ok());
        for (int i = 0; i < kBatches; ++i) {
          std::vector<Edit> e{AddVertex{},
                              AddEdge{{0}, {static_cast<std::uint64_t>(i + 1)}, 0.5 * i}};
          ASSERT_TRUE(node.store->apply(id, std::nullopt, e).ok());
        }
        want[t] = *node.store->get(id);
      });
    }
    for (auto& th : threads) th.join();
    // Background snapshots ran (the log grew far past 4 KiB).
    EXPECT_FALSE(files(dir.path(), "snap-").empty());
  }
  Node node(dir.path());
  ASSERT_TRUE(node.recovered.ok()) << node.recovered;
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(*node.store->get(absl::StrCat("t", t)), want[t]);
}

TEST(GraphWal, FsyncNeverStillRecovers) {
  TempDir dir;
  GraphSnapshot want;
  {
    Node node(dir.path(), 0, FsyncPolicy::kNever);
    ASSERT_TRUE(node.recovered.ok());
    ASSERT_TRUE(node.store->create("g", 3, {}).ok());
    std::vector<Edit> e{AddEdge{{0, 1}, {2}, 1}};
    ASSERT_TRUE(node.store->apply("g", std::nullopt, e).ok());
    want = *node.store->get("g");
  }
  Node node(dir.path());
  ASSERT_TRUE(node.recovered.ok());
  EXPECT_EQ(*node.store->get("g"), want);
  EXPECT_EQ(parse_fsync_policy("always").value(), FsyncPolicy::kAlways);
  EXPECT_FALSE(parse_fsync_policy("sometimes").ok());
}

/// Writes "g" with three batches, then returns the segment's bytes and record offsets
/// (LSNs 1..4: the create and the batches).
std::string four_records(const std::string& dir, std::vector<std::size_t>& offsets) {
  GraphSnapshot before_last, last;
  three_batches(dir, before_last, last);
  const std::string data = read_all(files(dir, "wal-").back());
  offsets = record_offsets(data);
  return data;
}

TEST(GraphWal, RecordWithANonIncreasingLsnInASegmentStopsStartUp) {
  // A record repeated in place, and an old record copied after the newest one: a sequence
  // number not greater than the previous one inside a segment is corruption, never skipped.
  for (const bool at_end : {false, true}) {
    TempDir dir;
    std::vector<std::size_t> offs;
    const std::string original = four_records(dir.path(), offs);
    ASSERT_EQ(offs.size(), 4u);
    const std::string seg = files(dir.path(), "wal-").back();
    // Record 2 (LSN 3) again: right after itself, or after record 3 (LSN 4).
    const std::string copy = original.substr(offs[2], offs[3] - offs[2]);
    const std::size_t at = at_end ? original.size() : offs[3];
    std::string data = original;
    data.insert(at, copy);
    write_all(seg, data);
    Node node(dir.path());
    EXPECT_EQ(node.recovered.code(), absl::StatusCode::kDataLoss) << node.recovered;
    const std::string msg(node.recovered.message());
    EXPECT_THAT(msg, HasSubstr(seg));
    EXPECT_THAT(msg, HasSubstr(absl::StrCat("at offset ", at)));
    EXPECT_THAT(msg, HasSubstr(absl::StrCat("record LSN 3 follows record LSN ", at_end ? 4 : 3)));
    EXPECT_EQ(read_all(seg), data) << "nothing may be truncated when start-up is refused";
  }
}

TEST(GraphWal, OverlappingSegmentsStopStartUp) {
  // A second segment that repeats records already replayed from the first.
  TempDir dir;
  std::vector<std::size_t> offs;
  const std::string original = four_records(dir.path(), offs);
  const std::string copy = dir.path() + "/wal-00000000000000000003.log";
  write_all(copy, original.substr(offs[2]));  // LSNs 3 and 4, under a later name
  Node node(dir.path());
  EXPECT_EQ(node.recovered.code(), absl::StatusCode::kDataLoss) << node.recovered;
  const std::string msg(node.recovered.message());
  EXPECT_THAT(msg, HasSubstr(copy));
  EXPECT_THAT(msg, HasSubstr("at offset 0"));
  EXPECT_THAT(msg, HasSubstr("record LSN 3 was already replayed (the next should be LSN 5)"));
}

TEST(GraphWal, RecordsBelowTheSnapshotAreSkippedAndCounted) {
  // A segment that began before the snapshot's cut (a snapshot that rotated nothing, or a
  // lost rotation): its records below the cut are in the snapshot, so they are skipped and
  // counted; those from the cut on are replayed.
  TempDir dir;
  std::string before_cut;
  GraphSnapshot want;
  {
    Node node(dir.path());
    ASSERT_TRUE(node.recovered.ok());
    ASSERT_TRUE(node.store->create("g", 2, {}).ok());
    for (int i = 0; i < 3; ++i) {
      std::vector<Edit> e{AddVertex{}};
      ASSERT_TRUE(node.store->apply("g", std::nullopt, e).ok());
    }
    before_cut = read_all(files(dir.path(), "wal-").back());  // LSNs 1..4
    ASSERT_TRUE(node.wal->snapshot().ok());                   // snap-5, wal-5
    std::vector<Edit> e{AddEdge{{0}, {4}, 2.5}};
    ASSERT_TRUE(node.store->apply("g", std::nullopt, e).ok());  // LSN 5
    ASSERT_TRUE(node.store->apply("g", std::nullopt, e).ok());  // LSN 6
    want = *node.store->get("g");
  }
  ASSERT_EQ(files(dir.path(), "wal-").size(), 1u);
  const std::string after_cut = dir.path() + "/wal-00000000000000000005.log";
  const std::string merged = dir.path() + "/wal-00000000000000000001.log";
  write_all(merged, before_cut + read_all(after_cut));
  fs::remove(after_cut);
  {
    Node node(dir.path());
    ASSERT_TRUE(node.recovered.ok()) << node.recovered;
    EXPECT_EQ(node.wal->report().snapshot_lsn, 5u);
    EXPECT_EQ(node.wal->report().records_in_snapshot, 4u);
    EXPECT_EQ(node.wal->report().records_replayed, 2u);
    EXPECT_EQ(node.wal->report().next_lsn, 7u);
    EXPECT_EQ(*node.store->get("g"), want);
    ASSERT_EQ(node.log.size(), 1u);
    EXPECT_THAT(node.log[0], HasSubstr(merged));
    EXPECT_THAT(node.log[0], HasSubstr("4 records below the snapshot's LSN 5 skipped"));
  }
  // A duplicate among the skipped records is still corruption.
  const std::vector<std::size_t> offs = record_offsets(before_cut);
  std::string data = before_cut + read_all(merged).substr(before_cut.size());
  data.insert(offs[2], before_cut.substr(offs[1], offs[2] - offs[1]));  // LSN 2 twice
  write_all(merged, data);
  for (const std::string& seg : files(dir.path(), "wal-")) {
    if (seg != merged) fs::remove(seg);  // the segment the last start opened
  }
  Node node(dir.path());
  EXPECT_EQ(node.recovered.code(), absl::StatusCode::kDataLoss) << node.recovered;
  EXPECT_THAT(
      std::string(node.recovered.message()),
      HasSubstr(absl::StrCat("at offset ", offs[2], ": record LSN 2 follows record LSN 2")));
}

TEST(GraphWal, SegmentsLeftBelowTheSnapshotAreSkipped) {
  // A crash between a snapshot's rename and its clean-up leaves the old segment behind.
  TempDir dir;
  std::string old_segment, old_path;
  GraphSnapshot want;
  {
    Node node(dir.path());
    ASSERT_TRUE(node.recovered.ok());
    ASSERT_TRUE(node.store->create("g", 2, {}).ok());
    std::vector<Edit> e{AddVertex{}};
    ASSERT_TRUE(node.store->apply("g", std::nullopt, e).ok());
    old_path = files(dir.path(), "wal-").back();
    old_segment = read_all(old_path);
    ASSERT_TRUE(node.wal->snapshot().ok());
    ASSERT_TRUE(node.store->apply("g", std::nullopt, e).ok());
    want = *node.store->get("g");
  }
  write_all(old_path, old_segment);
  Node node(dir.path());
  ASSERT_TRUE(node.recovered.ok()) << node.recovered;
  EXPECT_EQ(*node.store->get("g"), want);
  EXPECT_EQ(node.wal->report().records_replayed, 1u);
  ASSERT_EQ(node.log.size(), 1u);
  EXPECT_THAT(node.log[0], HasSubstr(old_path));
  EXPECT_THAT(node.log[0], HasSubstr("wholly below the snapshot's LSN 3"));
}

TEST(GraphWal, CreateRecordWithoutAGraphIdIsCorruption) {
  // A checksummed create record with an empty id (found by fuzz_graph_log): replaying it would
  // let the store invent a random id, a different graph at every start.
  TempDir dir;
  codec::Writer payload;
  payload.u8(1);         // create
  payload.u64_fixed(1);  // LSN
  payload.bytes("");     // graph id
  payload.varint(3);     // vertices
  payload.varint(0);     // edges
  codec::Writer frame;
  frame.u32_fixed(static_cast<std::uint32_t>(payload.out().size()));
  frame.u32_fixed(codec::crc32c(0, payload.out().data(), payload.out().size()));
  const std::string seg = dir.path() + "/wal-00000000000000000001.log";
  write_all(seg, frame.out() + payload.out());
  Node node(dir.path());
  EXPECT_EQ(node.recovered.code(), absl::StatusCode::kDataLoss) << node.recovered;
  EXPECT_THAT(std::string(node.recovered.message()),
              HasSubstr(seg + " at offset 0: a create record without a graph id"));
}

// Little-endian bytes of `v`, written out here independently of the store's codec.
std::string le(std::uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return out;
}

TEST(GraphWal, FilesHaveTheDocumentedByteLayout) {
  // The on-disk format of docs/graphs.md, byte for byte: a create and an edit record, then a
  // snapshot of the result.
  TempDir dir;
  std::string segment;
  {
    Node node(dir.path());
    ASSERT_TRUE(node.recovered.ok());
    ASSERT_TRUE(node.store->create("g", 2, {Hyperedge{0, {0}, {1}, 1.5}}).ok());
    std::vector<Edit> e{AddVertex{}};
    ASSERT_TRUE(node.store->apply("g", std::nullopt, e).ok());
    segment = read_all(files(dir.path(), "wal-").back());
    ASSERT_TRUE(node.wal->snapshot().ok());
  }
  const std::string one_half = le(0x3FF8000000000000u, 8);                 // 1.5 as IEEE-754
  const std::string edge = std::string("\x01\x00\x01\x01", 4) + one_half;  // tails {0}, heads {1}
  const std::string create = std::string("\x01", 1) + le(1, 8) + "\x01g" + "\x02\x01" + edge;
  const std::string apply = std::string("\x02", 1) + le(2, 8) + "\x01g" + "\x02\x01\x01";
  auto frame = [](const std::string& payload) {
    return le(payload.size(), 4) + le(codec::crc32c(0, payload.data(), payload.size()), 4) +
           payload;
  };
  EXPECT_EQ(segment, frame(create) + frame(apply));

  // Image: id, version 2, next vertex 3, next edge 1, 3 vertices as deltas 0 1 1, 1 edge.
  const std::string image = std::string("\x01g\x02\x03\x01\x03\x00\x01\x01\x01\x00", 11) + edge;
  const std::string header = std::string("GCSNAP01") + le(3, 8);
  const std::string snapshot = header + frame(image) + le(0xFFFFFFFFu, 4) + le(1, 8) +
                               le(codec::crc32c(0, (header + le(1, 8)).data(), 24), 4);
  ASSERT_EQ(files(dir.path(), "snap-").size(), 1u);
  EXPECT_EQ(files(dir.path(), "snap-")[0], dir.path() + "/snap-00000000000000000003.snap");
  EXPECT_EQ(read_all(files(dir.path(), "snap-")[0]), snapshot);
}

TEST(GraphCodec, RoundTripsEditsAndImagesBitExactly) {
  std::vector<Edit> edits{
      AddVertex{},   DeleteVertex{300},   AddEdge{{1, std::uint64_t{1} << 40}, {7}, -0.0},
      DeleteEdge{9}, SetWeight{3, 1e300}, DecomposeVertex{5, {1, 2, 3}, -2.25}};
  codec::Writer w;
  codec::encode_edits(w, edits);
  std::string bytes = w.take();
  codec::Reader r(bytes);
  absl::StatusOr<std::vector<Edit>> back = codec::decode_edits(r);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), edits.size());
  EXPECT_EQ(std::get<AddEdge>((*back)[2]).tails,
            (std::vector<std::uint64_t>{1, std::uint64_t{1} << 40}));
  EXPECT_TRUE(std::signbit(std::get<AddEdge>((*back)[2]).weight));
  EXPECT_EQ(std::get<DecomposeVertex>((*back)[5]).move_edge_ids.size(), 3u);
  EXPECT_EQ(r.left(), 0u);
  // Every truncation fails cleanly.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    codec::Reader t(std::string_view(bytes.data(), n));
    EXPECT_FALSE(codec::decode_edits(t).ok()) << n;
  }
  GraphImage image{GraphSnapshot{GraphInfo{"x", 9, 2, 1}, {3, 10}, {Hyperedge{4, {10}, {3}, 2}}},
                   11, 5};
  codec::Writer wi;
  codec::encode_image(wi, image);
  codec::Reader ri(wi.out());
  EXPECT_EQ(*codec::decode_image(ri), image);
  // Known CRC-32C check value.
  EXPECT_EQ(codec::crc32c(0, "123456789", 9), 0xE3069283u);
}

}  // namespace
}  // namespace gcompute::server
