// SPDX-License-Identifier: Apache-2.0
// Writes the seed inputs of the graph fuzz targets, made by the store's own writers:
//   fuzz_make_corpus CODEC_DIR LOG_DIR
// (tests/fuzz/corpus/fuzz_graph_codec and .../fuzz_graph_log). Deterministic; run it again
// when the encodings change and check the files in.
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graph_log_input.hpp"
#include "store/graphs/graph_codec.hpp"
#include "store/graphs/graph_store.hpp"
#include "store/graphs/graph_wal.hpp"

namespace {

namespace fs = std::filesystem;
using namespace gcompute::server;  // NOLINT: a small tool

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(s.message()).c_str());
    std::exit(1);
  }
}

/// Runs `scenario` on a store with a WAL in a fresh directory; returns the directory's files.
template <typename Scenario>
gcompute::fuzz::DataDir record(Scenario scenario) {
  std::string tmpl = fs::temp_directory_path().string() + "/gc-corpus-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) std::exit(1);
  {
    GraphWalOptions o;
    o.dir = tmpl;
    o.fsync = FsyncPolicy::kNever;
    o.snapshot_after_bytes = 0;
    auto wal = GraphWal::open(o);
    check(wal.status(), "open");
    GraphStore::Options so;
    so.journal = wal->get();
    GraphStore store(so);
    check((*wal)->recover(store), "recover");
    scenario(store, **wal);
    (*wal)->stop();
  }
  gcompute::fuzz::DataDir dir;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(tmpl)) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) {
    const std::string name = p.filename().string();
    if (name.rfind("snap-", 0) == 0) dir.snapshot = read_file(p);
    if (name.rfind("wal-", 0) == 0 && fs::file_size(p) > 0) dir.segments.push_back(read_file(p));
  }
  if (dir.segments.empty()) dir.segments.emplace_back();
  fs::remove_all(tmpl);
  return dir;
}

std::vector<Edit> every_edit() {
  return {AddVertex{},
          AddEdge{{0, 1}, {2}, 1.5},
          SetWeight{0, -2.25},
          AddVertex{},
          DecomposeVertex{3, {}, 0.5},
          DeleteEdge{0},
          AddEdge{{2}, {0}, 4},
          DeleteVertex{1}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CODEC_DIR LOG_DIR\n", argv[0]);
    return 2;
  }
  const std::string codec_dir = argv[1], log_dir = argv[2];
  fs::create_directories(codec_dir);
  fs::create_directories(log_dir);

  // Codec: the selector byte (0 edits, 1 image, 2 edge body), then the encoding.
  codec::Writer edits;
  codec::encode_edits(edits, every_edit());
  write_file(codec_dir + "/edits", std::string(1, '\0') + edits.out());
  GraphImage image{GraphSnapshot{GraphInfo{"g-1", 7, 3, 2},
                                 {0, 2, 9},
                                 {Hyperedge{1, {0, 2}, {9}, 0.5}, Hyperedge{4, {9}, {0}, -1}}},
                   10, 5};
  codec::Writer img;
  codec::encode_image(img, image);
  write_file(codec_dir + "/image", std::string(1, '\1') + img.out());
  codec::Writer edge;
  codec::encode_edge_body(edge, Hyperedge{0, {1, 2, 3}, {4}, 2.5});
  write_file(codec_dir + "/edge", std::string(1, '\2') + edge.out());

  // Log: data directories written by GraphWal.
  auto batches = [](GraphStore& store) {
    check(store.create("g", 3, {Hyperedge{0, {0}, {1}, 1}}).status(), "create");
    check(store.apply("g", std::nullopt, every_edit()).status(), "apply");
    std::vector<Edit> more{AddVertex{}, AddEdge{{4}, {0}, 3}};
    check(store.apply("g", 2, more).status(), "apply");
  };
  write_file(log_dir + "/log",
             gcompute::fuzz::pack(record([&](GraphStore& s, GraphWal&) { batches(s); })));
  write_file(log_dir + "/snapshot-then-log",
             gcompute::fuzz::pack(record([&](GraphStore& s, GraphWal& wal) {
               batches(s);
               check(s.create("h", 2, {}).status(), "create");
               check(wal.snapshot(), "snapshot");
               std::vector<Edit> e{AddEdge{{0}, {1}, 7}};
               check(s.apply("h", std::nullopt, e).status(), "apply");
               check(s.remove("g"), "remove");
             })));
  write_file(log_dir + "/create-delete-recreate",
             gcompute::fuzz::pack(record([&](GraphStore& s, GraphWal&) {
               check(s.create("a", 1, {}).status(), "create");
               check(s.remove("a"), "remove");
               check(s.create("a", 2, {Hyperedge{0, {1}, {0}, -3}}).status(), "create");
             })));
  // Two segments: a snapshot rotates the log; the old segment is what a crash before the
  // clean-up leaves.
  gcompute::fuzz::DataDir two = record([&](GraphStore& s, GraphWal&) { batches(s); });
  gcompute::fuzz::DataDir after = record([&](GraphStore& s, GraphWal& wal) {
    batches(s);
    check(wal.snapshot(), "snapshot");
    std::vector<Edit> e{AddVertex{}};
    check(s.apply("g", std::nullopt, e).status(), "apply");
  });
  after.segments.insert(after.segments.begin(), two.segments.front());
  write_file(log_dir + "/leftover-segment", gcompute::fuzz::pack(after));
  // A torn tail: the last record cut short.
  gcompute::fuzz::DataDir torn = record([&](GraphStore& s, GraphWal&) { batches(s); });
  torn.segments.back().resize(torn.segments.back().size() - 5);
  write_file(log_dir + "/torn-tail", gcompute::fuzz::pack(torn));
  std::printf("seeds written to %s and %s\n", codec_dir.c_str(), log_dir.c_str());
  return 0;
}
