// SPDX-License-Identifier: Apache-2.0
// Writes the seed inputs of the fuzz targets, made by the store's own writers and the
// protobuf encoder:
//   fuzz_make_corpus CODEC_DIR LOG_DIR REQUESTS_DIR
// (tests/fuzz/corpus/fuzz_graph_codec, .../fuzz_graph_log and .../fuzz_requests).
// Deterministic; run it again when the encodings change and check the files in.
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "gcompute/v1/service.pb.h"
#include "graph_log_input.hpp"
#include "request_kinds.hpp"
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

namespace v1 = gcompute::v1;
using gcompute::fuzz::RequestKind;

/// A seed of fuzz_requests: the kind's byte, then the message.
void write_request(const std::string& dir, const std::string& name, RequestKind kind,
                   const google::protobuf::Message& message) {
  write_file(dir + "/" + name,
             std::string(1, static_cast<char>(kind)) + message.SerializeAsString());
}

/// rows x cols f32 (or batch of them), filled with 1..n.
void set_matrix(v1::Matrix* m, std::int64_t rows, std::int64_t cols, std::int64_t batch = 0,
                v1::DType dtype = v1::DTYPE_F32) {
  m->set_rows(rows);
  m->set_cols(cols);
  m->set_batch(batch);
  m->set_dtype(dtype);
  const std::int64_t n = rows * cols * (batch == 0 ? 1 : batch);
  std::string data;
  for (std::int64_t i = 0; i < n; ++i) {
    if (dtype == v1::DTYPE_F64) {
      const double x = static_cast<double>(i + 1);
      data.append(reinterpret_cast<const char*>(&x), sizeof x);
    } else {
      const float x = static_cast<float>(i + 1);
      data.append(reinterpret_cast<const char*>(&x), sizeof x);
    }
  }
  m->set_data(data);
}

/// Valid and nearly valid requests of every kind (the fuzzer finds the rest).
void write_requests(const std::string& dir) {
  using namespace gcompute::fuzz;  // NOLINT: the kinds
  v1::TransposeRequest transpose;
  set_matrix(transpose.mutable_a()->mutable_inline_(), 2, 3);
  write_request(dir, "transpose", kTranspose, transpose);
  transpose.mutable_a()->mutable_inline_()->set_cols(4);  // data for 2x3
  transpose.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
  write_request(dir, "transpose-short-data", kTranspose, transpose);

  v1::MatMulRequest matmul;
  set_matrix(matmul.mutable_a()->mutable_inline_(), 2, 3);
  set_matrix(matmul.mutable_b()->mutable_inline_(), 3, 2);
  set_matrix(matmul.mutable_c()->mutable_inline_(), 2, 2);
  matmul.set_alpha(2);
  matmul.set_beta(1);
  write_request(dir, "matmul", kMatMul, matmul);
  matmul.set_transpose_b(true);  // 2x3 times 2x3
  matmul.mutable_a()->mutable_ref()->set_id("m-0123456789abcdef0123456789abcdef");
  write_request(dir, "matmul-ref-transposed", kMatMul, matmul);

  v1::SvdRequest svd;
  set_matrix(svd.mutable_a()->mutable_inline_(), 3, 2, 0, v1::DTYPE_F64);
  svd.set_full_matrices(true);
  svd.set_tolerance(1e-12);
  svd.set_max_sweeps(30);
  write_request(dir, "svd", kSvd, svd);
  svd.set_method(v1::SVD_METHOD_POLAR);
  svd.set_compute_uv(false);
  write_request(dir, "svd-polar", kSvd, svd);
  v1::SvdRequest batched;
  set_matrix(batched.mutable_a()->mutable_inline_(), 2, 2, 3);
  write_request(dir, "batched-svd", kBatchedSvd, batched);
  batched.mutable_a()->mutable_inline_()->set_batch(std::int64_t{1} << 40);
  batched.mutable_a()->mutable_inline_()->set_rows(0);
  write_request(dir, "batched-svd-empty-huge", kBatchedSvd, batched);

  v1::EighRequest eigh;
  set_matrix(eigh.mutable_a()->mutable_inline_(), 2, 2);
  eigh.set_symmetry_tolerance(10);
  write_request(dir, "eigh", kEigh, eigh);
  eigh.set_compute_vectors(false);
  eigh.set_symmetry_tolerance(0);
  write_request(dir, "eigh-asymmetric", kEigh, eigh);

  v1::ApspRequest dense;
  set_matrix(dense.mutable_dense(), 3, 3);
  dense.set_next_hop(true);
  write_request(dir, "apsp-dense", kApsp, dense);
  v1::ApspRequest edges;
  v1::EdgeList* list = edges.mutable_edges();
  list->set_num_vertices(4);
  for (auto [s, d, w] : {std::tuple{0, 1, 2.0}, {1, 2, 3.0}, {2, 3, -1.0}}) {
    list->add_src(s);
    list->add_dst(d);
    list->add_weight(w);
  }
  list->set_dtype(v1::DTYPE_I32);
  write_request(dir, "apsp-edges-i32", kApsp, edges);
  list->set_num_vertices(20000);
  write_request(dir, "apsp-edges-too-many-vertices", kApsp, edges);
  v1::ApspRequest stored;
  stored.set_graph_id("g");
  write_request(dir, "apsp-graph", kApsp, stored);

  v1::ShortestPathRequest path;
  *path.mutable_graph() = edges;
  path.mutable_graph()->mutable_edges()->set_num_vertices(4);
  path.set_source(0);
  path.set_target(3);
  write_request(dir, "shortest-path-edges", kShortestPath, path);
  v1::ShortestPathRequest from_stored;
  from_stored.mutable_stored()->mutable_distances()->set_id("m-0");
  from_stored.mutable_stored()->mutable_next_hop()->set_id("m-1");
  from_stored.set_target(5);
  write_request(dir, "shortest-path-stored", kShortestPath, from_stored);

  v1::SsspRequest sssp;
  *sssp.mutable_edges() = path.graph().edges();
  sssp.mutable_edges()->set_dtype(v1::DTYPE_F32);
  sssp.set_source(1);
  write_request(dir, "sssp-edges", kSssp, sssp);
  sssp.set_graph_id("g");
  sssp.set_source(7);
  write_request(dir, "sssp-graph", kSssp, sssp);

  v1::UploadMatrixRequest::Header header;
  header.mutable_shape()->set_rows(16);
  header.mutable_shape()->set_cols(16);
  header.mutable_shape()->set_dtype(v1::DTYPE_F64);
  header.set_ttl_seconds(60);
  write_request(dir, "upload-header", kUploadHeader, header);
  header.mutable_shape()->set_rows(0);
  write_request(dir, "upload-header-empty", kUploadHeader, header);

  v1::DownloadMatrixRequest download;
  download.mutable_ref()->set_id("m-0123456789abcdef0123456789abcdef");
  download.set_chunk_bytes(1024);
  write_request(dir, "download", kDownloadMatrix, download);
  v1::DeleteMatrixRequest delete_matrix;
  delete_matrix.mutable_ref()->set_id(std::string("m-\0\x1b[2J", 7));
  write_request(dir, "delete-matrix", kDeleteMatrix, delete_matrix);

  v1::CreateGraphRequest create;
  create.set_graph_id("h");
  create.set_num_vertices(3);
  v1::Hyperedge* e = create.add_edges();
  e->add_tails(0);
  e->add_tails(1);
  e->add_heads(2);
  e->set_weight(1.5);
  write_request(dir, "create-graph", kCreateGraph, create);
  create.set_graph_id("g");  // taken
  write_request(dir, "create-graph-taken", kCreateGraph, create);

  v1::GetGraphRequest get;
  get.set_graph_id("g");
  get.set_page_size(2);
  write_request(dir, "get-graph", kGetGraph, get);
  get.set_page_token("1.3");
  write_request(dir, "get-graph-page", kGetGraph, get);
  write_request(dir, "list-graphs", kListGraphs, v1::ListGraphsRequest());
  v1::DeleteGraphRequest delete_graph;
  delete_graph.set_graph_id("g");
  write_request(dir, "delete-graph", kDeleteGraph, delete_graph);

  v1::ApplyEditsRequest apply;
  apply.set_graph_id("g");
  apply.set_expected_version(1);
  apply.add_edits()->mutable_add_vertex();
  v1::Edit::AddEdge* add = apply.add_edits()->mutable_add_edge();
  add->add_tails(4);
  add->add_heads(0);
  add->set_weight(2);
  apply.add_edits()->mutable_set_weight()->set_edge_id(1);
  apply.add_edits()->mutable_decompose_vertex()->set_vertex_id(2);
  apply.add_edits()->mutable_delete_edge()->set_edge_id(0);
  apply.add_edits()->mutable_delete_vertex()->set_vertex_id(1);
  write_request(dir, "apply-edits", kApplyEdits, apply);

  v1::SubmitJobRequest job;
  *job.mutable_transpose() = transpose;
  job.set_client_job_key("k1");
  job.set_ttl_seconds(600);
  job.set_priority(v1::JOB_PRIORITY_HIGH);
  write_request(dir, "submit-transpose", kSubmitJob, job);
  v1::SubmitJobRequest apsp_job;
  *apsp_job.mutable_apsp() = stored;
  write_request(dir, "submit-apsp-graph", kSubmitJob, apsp_job);
  v1::SubmitJobRequest svd_job;
  *svd_job.mutable_batched_svd() = batched;
  svd_job.set_ttl_seconds(-1);
  write_request(dir, "submit-batched-svd", kSubmitJob, svd_job);

  v1::GetJobRequest get_job;
  get_job.set_job_id("j-0123456789abcdef0123456789abcdef");
  write_request(dir, "get-job", kGetJob, get_job);
  v1::WatchJobRequest watch;
  watch.set_job_id("j-1");
  write_request(dir, "watch-job", kWatchJob, watch);
  v1::CancelJobRequest cancel;
  cancel.set_job_id(std::string(100, 'j'));
  write_request(dir, "cancel-job", kCancelJob, cancel);
  v1::ListJobsRequest list_jobs;
  list_jobs.set_page_size(10);
  list_jobs.set_page_token("7");
  write_request(dir, "list-jobs", kListJobs, list_jobs);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s CODEC_DIR LOG_DIR REQUESTS_DIR\n", argv[0]);
    return 2;
  }
  const std::string codec_dir = argv[1], log_dir = argv[2], requests_dir = argv[3];
  fs::create_directories(codec_dir);
  fs::create_directories(log_dir);
  fs::create_directories(requests_dir);
  write_requests(requests_dir);

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
  std::printf("seeds written to %s, %s and %s\n", codec_dir.c_str(), log_dir.c_str(),
              requests_dir.c_str());
  return 0;
}
