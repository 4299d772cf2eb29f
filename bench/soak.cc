// SPDX-License-Identifier: Apache-2.0
// Soak driver (bench/soak.sh starts the server and runs it): N client threads, each with its own
// channel, loop over a weighted random mix of operations against a running gcompute-server for
// a fixed time: small inline operations, stored-matrix and graph lifecycles, jobs (watched,
// and cancelled), and bad requests that must fail with one particular status code. A health
// probe calls grpc.health.v1.Health/Check every 100 ms from a child process of its own, at the
// default priority while this process (its load threads and all of its gRPC threads) runs at
// nice 10: on a machine shared with the server, the load yields the CPU as it would if it came
// from other machines, and the probe measures the server. A sampler reads the server's RSS and
// open file descriptors from /proc. Prints per-operation throughput, latency and status codes,
// writes everything as JSON, and exits 1 when any call ends with a code outside its operation's
// expected set, when the server's RSS grows by 5 % or more from the run's second tenth (its
// second minute in a 10-minute run) to its last, or when health p99 reaches 50 ms.
//
//   gcompute_soak --server 127.0.0.1:PORT [--server-pid PID] [--clients 64] [--seconds 600]
//                 [--seed S] [--out FILE.json] [--max-rss-growth-percent 5]
//                 [--max-health-p99-ms 50] [--ops NAME,...]
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gcompute/v1/service.grpc.pb.h"

namespace {

namespace v1 = gcompute::v1;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string server;
  long server_pid = 0;
  int clients = 64;
  double seconds = 600;
  std::uint64_t seed = 1;
  std::string out;
  // The bound (#11). Short smoke runs pass a larger one: their second tenth still
  // holds the warm-up (allocator arenas of new threads, pools filling).
  double max_rss_growth_percent = 5;
  // The bound on health latency. The CI smoke test shares a small machine with other
  // tests and passes a larger one.
  double max_health_p99_ms = 50;
  // Operations to run (comma-separated names); empty: all. For narrowing down a finding.
  std::string only;
};

/// What one call of an operation ended with: a gRPC code, or kDataMismatch when the call
/// succeeded but returned wrong data (always unexpected).
constexpr int kDataMismatch = 100;

std::string code_name(int code) {
  static const char* names[] = {"OK",
                                "CANCELLED",
                                "UNKNOWN",
                                "INVALID_ARGUMENT",
                                "DEADLINE_EXCEEDED",
                                "NOT_FOUND",
                                "ALREADY_EXISTS",
                                "PERMISSION_DENIED",
                                "RESOURCE_EXHAUSTED",
                                "FAILED_PRECONDITION",
                                "ABORTED",
                                "OUT_OF_RANGE",
                                "UNIMPLEMENTED",
                                "INTERNAL",
                                "UNAVAILABLE",
                                "DATA_LOSS",
                                "UNAUTHENTICATED"};
  if (code >= 0 && code <= 16) return names[code];
  if (code == kDataMismatch) return "DATA_MISMATCH";
  return "CODE_" + std::to_string(code);
}

/// The outcome of one operation: the first failing step's status, or OK.
struct Outcome {
  int code = 0;
  std::string message;
  static Outcome of(const grpc::Status& s) { return {s.error_code(), s.error_message()}; }
  static Outcome mismatch(std::string what) { return {kDataMismatch, std::move(what)}; }
};

struct OpStats {
  std::vector<double> latency_ms;
  std::map<int, std::uint64_t> codes;
  std::uint64_t unexpected = 0;
  void merge(const OpStats& o) {
    latency_ms.insert(latency_ms.end(), o.latency_ms.begin(), o.latency_ms.end());
    for (const auto& [c, n] : o.codes) codes[c] += n;
    unexpected += o.unexpected;
  }
};

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()))) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (const unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      o += buf;
    } else {
      o += static_cast<char>(ch);
    }
  }
  return o;
}

// ---- Server process probes (/proc) ------------------------------------------------------

struct ProcSample {
  double t = 0;  // seconds since the load started
  long rss_kib = -1;
  long open_fds = -1;
};

ProcSample sample_process(long pid, double t) {
  ProcSample s;
  s.t = t;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::strtol(line.c_str() + 6, nullptr, 10);
  }
  std::error_code ec;
  long fds = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && it != end; it.increment(ec)) {
    ++fds;
  }
  if (!ec) s.open_fds = fds;
  return s;
}

// ---- Request builders ---------------------------------------------------------------------

v1::Matrix random_matrix(std::mt19937_64& rng, std::int64_t rows, std::int64_t cols,
                         v1::DType dtype) {
  v1::Matrix m;
  m.set_rows(rows);
  m.set_cols(cols);
  m.set_dtype(dtype);
  std::normal_distribution<double> normal;
  const auto n = static_cast<std::size_t>(rows * cols);
  std::string data;
  if (dtype == v1::DTYPE_F64) {
    std::vector<double> v(n);
    for (double& x : v) x = normal(rng);
    data.assign(reinterpret_cast<const char*>(v.data()), n * sizeof(double));
  } else {
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(normal(rng));
    data.assign(reinterpret_cast<const char*>(v.data()), n * sizeof(float));
  }
  m.set_data(std::move(data));
  return m;
}

v1::Matrix symmetric_matrix(std::mt19937_64& rng, std::int64_t n) {
  v1::Matrix m = random_matrix(rng, n, n, v1::DTYPE_F64);
  auto* d = reinterpret_cast<double*>(m.mutable_data()->data());
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < i; ++j) d[j * n + i] = d[i * n + j];
  }
  return m;
}

v1::Matrix random_graph_dense(std::mt19937_64& rng, std::int64_t n) {
  v1::Matrix m;
  m.set_rows(n);
  m.set_cols(n);
  m.set_dtype(v1::DTYPE_F32);
  std::vector<float> w(static_cast<std::size_t>(n * n), std::numeric_limits<float>::infinity());
  std::uniform_real_distribution<float> u(0, 1);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      if (i == j) {
        w[i * n + j] = 0;
      } else if (u(rng) < 0.1f) {
        w[i * n + j] = 1 + std::floor(u(rng) * 20);
      }
    }
  }
  m.set_data(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  return m;
}

/// A call context with a deadline `seconds` from now.
std::unique_ptr<grpc::ClientContext> context(double seconds) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6)));
  return ctx;
}

constexpr double kCallSeconds = 60;  // generous: 64 clients share 2 CPU workers

/// One unary call over the generic stub with raw request bytes (for unparsable requests and
/// health checks, which have no generated stub here).
grpc::Status raw_unary(grpc::GenericStub& stub, const std::string& method,
                       const std::string& request, double deadline_seconds, std::string* reply) {
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer reply_buffer;
  auto ctx = context(deadline_seconds);
  std::promise<grpc::Status> done;
  stub.UnaryCall(ctx.get(), method, grpc::StubOptions(), &request_buffer, &reply_buffer,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status status = done.get_future().get();
  if (status.ok() && reply != nullptr) {
    std::vector<grpc::Slice> slices;
    (void)reply_buffer.Dump(&slices);
    reply->clear();
    for (const grpc::Slice& s : slices) {
      reply->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

// ---- The health probe ---------------------------------------------------------------------

/// grpc.health.v1.Health/Check every 100 ms from a forked child. Fork before this process
/// starts gRPC (a forked gRPC is unusable), then lower this process's priority: threads
/// created afterwards inherit it, the child keeps the default one.
class HealthProbe {
 public:
  struct Sample {
    double ms;
    std::int32_t code;
    std::int32_t serving;  // the reply was HealthCheckResponse{status: SERVING}
  };

  /// Starts the child; nullopt (with a message) when a pipe or the fork fails.
  static std::optional<HealthProbe> start(const std::string& server) {
    int stop[2], results[2];
    if (::pipe(stop) != 0 || ::pipe(results) != 0) {
      std::perror("pipe");
      return std::nullopt;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      return std::nullopt;
    }
    if (pid == 0) {
      ::close(stop[1]);
      ::close(results[0]);
      probe_until_stopped(server, stop[0], results[1]);
      ::_exit(0);
    }
    ::close(stop[0]);
    ::close(results[1]);
    return HealthProbe(pid, stop[1], results[0]);
  }

  HealthProbe(HealthProbe&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        stop_fd_(std::exchange(other.stop_fd_, -1)),
        results_fd_(std::exchange(other.results_fd_, -1)) {}
  HealthProbe& operator=(HealthProbe&&) = delete;
  ~HealthProbe() { (void)finish(); }

  /// Reads the child's samples as they come (the pipe must not fill up in a long run).
  void collect_in_background() {
    reader_ = std::thread([this] {
      Sample s;
      while (read_full(results_fd_, &s, sizeof s)) samples_.push_back(s);
    });
  }

  /// Stops the child after its current probe and returns every sample it took.
  std::vector<Sample> finish() {
    if (stop_fd_ >= 0) ::close(std::exchange(stop_fd_, -1));  // the child sees end-of-file
    if (reader_.joinable()) reader_.join();
    if (results_fd_ >= 0) ::close(std::exchange(results_fd_, -1));
    if (pid_ > 0) ::waitpid(std::exchange(pid_, -1), nullptr, 0);
    return std::move(samples_);
  }

 private:
  HealthProbe(pid_t pid, int stop_fd, int results_fd)
      : pid_(pid), stop_fd_(stop_fd), results_fd_(results_fd) {}

  static bool read_full(int fd, void* data, std::size_t size) {
    auto* p = static_cast<char*>(data);
    while (size > 0) {
      const ssize_t n = ::read(fd, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }

  static void probe_until_stopped(const std::string& server, int stop_fd, int results_fd) {
    auto channel = grpc::CreateChannel(server, grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    auto next = Clock::now();
    for (;;) {
      const auto t0 = Clock::now();
      std::string reply;
      const grpc::Status status = raw_unary(stub, "/grpc.health.v1.Health/Check", "", 5, &reply);
      // HealthCheckResponse { status = 1 (SERVING) }: bytes 08 01.
      const Sample sample{std::chrono::duration<double, std::milli>(Clock::now() - t0).count(),
                          status.error_code(), reply == std::string("\x08\x01", 2)};
      // Smaller than PIPE_BUF: written whole.
      if (::write(results_fd, &sample, sizeof sample) != sizeof sample) return;
      next += std::chrono::milliseconds(100);
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now());
      pollfd stop{stop_fd, POLLIN, 0};
      int ready;
      do {
        ready = ::poll(&stop, 1, static_cast<int>(std::max<std::int64_t>(0, wait.count())));
      } while (ready < 0 && errno == EINTR);
      if (ready != 0) return;  // end-of-file: the parent is done (or gone)
    }
  }

  pid_t pid_;
  int stop_fd_;
  int results_fd_;
  std::thread reader_;
  std::vector<Sample> samples_;
};

// ---- The operation mix --------------------------------------------------------------------

struct Limits {
  std::uint64_t max_matrix_elements = 0;
};

class Client {
 public:
  Client(const std::string& target, std::uint64_t seed, int index, const Limits& limits)
      : rng_(seed),
        // Graph ids and job keys unique to this process and client: a run against a server
        // that an earlier, interrupted run left graphs on does not meet them.
        name_prefix_("soak-" + std::to_string(::getpid()) + "-" + std::to_string(index) + "-"),
        limits_(limits) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    // A connection per client, as separate client processes would have (channels with equal
    // arguments otherwise share one from the global subchannel pool).
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::Compute::NewStub(channel_);
    generic_ = std::make_unique<grpc::GenericStub>(channel_);
  }

  Outcome transpose() {
    v1::TransposeRequest req;
    *req.mutable_a()->mutable_inline_() =
        random_matrix(rng_, size(16, 96), size(16, 96), v1::DTYPE_F32);
    v1::TransposeResponse resp;
    if (Outcome o = call(&v1::Compute::Stub::Transpose, req, &resp); o.code != 0) return o;
    if (!is_transpose(req.a().inline_(), resp.at().inline_(), sizeof(float))) {
      return Outcome::mismatch("Transpose: the result is not the operand transposed");
    }
    return {};
  }

  Outcome matmul() {
    const std::int64_t m = size(8, 64), k = size(8, 64), n = size(8, 64);
    v1::MatMulRequest req;
    *req.mutable_a()->mutable_inline_() = random_matrix(rng_, m, k, v1::DTYPE_F32);
    *req.mutable_b()->mutable_inline_() = random_matrix(rng_, k, n, v1::DTYPE_F32);
    v1::MatMulResponse resp;
    if (Outcome o = call(&v1::Compute::Stub::MatMul, req, &resp); o.code != 0) return o;
    const v1::Matrix& c = resp.c().inline_();
    if (c.rows() != m || c.cols() != n || c.data().size() != static_cast<std::size_t>(m * n * 4)) {
      return Outcome::mismatch("MatMul: result of the wrong shape");
    }
    return {};
  }

  Outcome svd() {
    return decomposition(
        &v1::Compute::Stub::Svd, random_matrix(rng_, size(8, 48), size(8, 48), v1::DTYPE_F64),
        [](const v1::SvdResponse& r) { return r.u().has_inline_(); }, "Svd: no U");
  }

  Outcome eigh() {
    return decomposition(
        &v1::Compute::Stub::Eigh, symmetric_matrix(rng_, size(4, 48)),
        [](const v1::EighResponse& r) { return r.v().has_inline_(); }, "Eigh: no V");
  }

  Outcome apsp() {
    v1::ApspRequest req;
    *req.mutable_dense() = random_graph_dense(rng_, size(8, 64));
    req.set_next_hop(true);
    v1::ApspResponse resp;
    if (Outcome o = call(&v1::Compute::Stub::Apsp, req, &resp); o.code != 0) return o;
    if (resp.distances().inline_().rows() != req.dense().rows()) {
      return Outcome::mismatch("Apsp: distances of the wrong shape");
    }
    return {};
  }

  /// UploadMatrix (chunks out of order) -> Transpose of the ref into a stored result ->
  /// DownloadMatrix of the result, checked -> DeleteMatrix of both.
  Outcome matrix_lifecycle() {
    const v1::Matrix m = random_matrix(rng_, size(64, 256), size(64, 256), v1::DTYPE_F64);
    std::string uploaded;
    {
      v1::UploadMatrixResponse resp;
      auto ctx = context(kCallSeconds);
      auto writer = stub_->UploadMatrix(ctx.get(), &resp);
      v1::UploadMatrixRequest header;
      auto* shape = header.mutable_header()->mutable_shape();
      shape->set_rows(m.rows());
      shape->set_cols(m.cols());
      shape->set_dtype(m.dtype());
      header.mutable_header()->set_ttl_seconds(120);
      writer->Write(header);
      const std::size_t chunk = 64 << 10;
      std::vector<std::size_t> offsets;
      for (std::size_t off = 0; off < m.data().size(); off += chunk) offsets.push_back(off);
      std::shuffle(offsets.begin(), offsets.end(), rng_);
      for (const std::size_t off : offsets) {
        v1::UploadMatrixRequest part;
        part.mutable_chunk()->set_offset(off);
        part.mutable_chunk()->set_data(m.data().substr(off, chunk));
        if (!writer->Write(part)) break;
      }
      writer->WritesDone();
      const grpc::Status s = writer->Finish();
      if (!s.ok()) return Outcome::of(s);
      uploaded = resp.matrix().ref().id();
    }
    Outcome outcome;
    std::string transposed;
    {
      v1::TransposeRequest req;
      req.mutable_a()->mutable_ref()->set_id(uploaded);
      req.mutable_output()->set_placement(v1::OutputOptions::PLACEMENT_STORED);
      req.mutable_output()->set_ttl_seconds(120);
      v1::TransposeResponse resp;
      outcome = call(&v1::Compute::Stub::Transpose, req, &resp);
      if (outcome.code == 0) transposed = resp.at().stored().ref().id();
    }
    if (outcome.code == 0) {
      v1::DownloadMatrixRequest req;
      req.mutable_ref()->set_id(transposed);
      req.set_chunk_bytes(48 << 10);
      auto ctx = context(kCallSeconds);
      auto reader = stub_->DownloadMatrix(ctx.get(), req);
      v1::DownloadMatrixResponse part;
      v1::Matrix got;
      while (reader->Read(&part)) {
        if (part.has_header()) {
          got.set_rows(part.header().shape().rows());
          got.set_cols(part.header().shape().cols());
        } else if (part.chunk().offset() != got.data().size()) {
          outcome = Outcome::mismatch("DownloadMatrix: chunks out of order");
        } else {
          got.mutable_data()->append(part.chunk().data());
        }
      }
      const grpc::Status s = reader->Finish();
      if (!s.ok()) {
        outcome = Outcome::of(s);
      } else if (outcome.code == 0 && !is_transpose(m, got, sizeof(double))) {
        outcome = Outcome::mismatch("DownloadMatrix: the stored transpose differs");
      }
    }
    for (const std::string& id : {uploaded, transposed}) {
      if (id.empty()) continue;
      v1::DeleteMatrixRequest req;
      req.mutable_ref()->set_id(id);
      Outcome deleted = call(&v1::Compute::Stub::DeleteMatrix, req);
      if (outcome.code == 0) outcome = deleted;
    }
    return outcome;
  }

  /// CreateGraph -> ApplyEdits -> Apsp on the graph (twice: computed, then cached) ->
  /// GetGraph in pages -> DeleteGraph.
  Outcome graph_lifecycle() {
    const std::string id = name_prefix_ + std::to_string(++graphs_);
    const std::uint64_t n = static_cast<std::uint64_t>(size(8, 40));
    v1::CreateGraphRequest create;
    create.set_graph_id(id);
    create.set_num_vertices(n);
    std::uniform_int_distribution<std::uint64_t> vertex(0, n - 1);
    const std::uint64_t edges = 3 * n;
    for (std::uint64_t e = 0; e < edges; ++e) {
      auto* h = create.add_edges();
      h->add_tails(vertex(rng_));
      h->add_heads(vertex(rng_));
      h->set_weight(1 + static_cast<double>(vertex(rng_)));
    }
    if (Outcome o = call(&v1::Compute::Stub::CreateGraph, create); o.code != 0) return o;
    Outcome outcome = [&]() -> Outcome {
      auto graph_apsp = [&]() -> Outcome {
        v1::ApspRequest req;
        req.set_graph_id(id);
        v1::ApspResponse resp;
        if (Outcome o = call(&v1::Compute::Stub::Apsp, req, &resp); o.code != 0) return o;
        if (resp.distances().inline_().rows() != static_cast<std::int64_t>(n + 1)) {
          return Outcome::mismatch("Apsp on a graph: distances of the wrong shape");
        }
        return {};
      };
      {
        v1::ApplyEditsRequest req;
        req.set_graph_id(id);
        req.set_expected_version(1);
        req.add_edits()->mutable_add_vertex();
        auto* add = req.add_edits()->mutable_add_edge();
        add->add_tails(0);
        add->add_heads(n);  // the vertex just added
        add->set_weight(2.5);
        auto* set = req.add_edits()->mutable_set_weight();
        set->set_edge_id(0);
        set->set_weight(0.5);
        req.add_edits()->mutable_delete_edge()->set_edge_id(1);
        v1::ApplyEditsResponse resp;
        if (Outcome o = call(&v1::Compute::Stub::ApplyEdits, req, &resp); o.code != 0) return o;
        if (resp.version() != 2) return Outcome::mismatch("ApplyEdits: version is not 2");
      }
      if (Outcome o = graph_apsp(); o.code != 0) return o;
      if (Outcome o = graph_apsp(); o.code != 0) return o;
      std::uint64_t vertices = 0, edges_seen = 0;
      std::string token;
      do {
        v1::GetGraphRequest req;
        req.set_graph_id(id);
        req.set_page_size(16);
        req.set_page_token(token);
        v1::GetGraphResponse resp;
        if (Outcome o = call(&v1::Compute::Stub::GetGraph, req, &resp); o.code != 0) return o;
        vertices += static_cast<std::uint64_t>(resp.vertices_size());
        edges_seen += static_cast<std::uint64_t>(resp.edges_size());
        token = resp.next_page_token();
      } while (!token.empty());
      if (vertices != n + 1 || edges_seen != edges) {
        return Outcome::mismatch("GetGraph: " + std::to_string(vertices) + " vertices and " +
                                 std::to_string(edges_seen) + " edges, expected " +
                                 std::to_string(n + 1) + " and " + std::to_string(edges));
      }
      return {};
    }();
    v1::DeleteGraphRequest req;
    req.set_graph_id(id);
    Outcome deleted = call(&v1::Compute::Stub::DeleteGraph, req);
    if (outcome.code == 0) outcome = deleted;
    return outcome;
  }

  /// SubmitJob (an SVD) -> WatchJob to a final state -> GetJob with the result.
  Outcome job() {
    v1::SubmitJobRequest req;
    *req.mutable_svd()->mutable_a()->mutable_inline_() =
        random_matrix(rng_, size(8, 48), size(8, 48), v1::DTYPE_F64);
    req.set_client_job_key(name_prefix_ + std::to_string(++jobs_));
    req.set_ttl_seconds(5);  // short, so that finished jobs do not pile up over the run
    std::string job_id;
    if (Outcome o = submit(req, &job_id); o.code != 0) return o;
    v1::Job last;
    if (Outcome o = watch(job_id, &last); o.code != 0) return o;
    if (last.state() == v1::JOB_STATE_FAILED) return {last.error_code(), last.error_message()};
    v1::GetJobRequest get;
    get.set_job_id(job_id);
    v1::Job job;
    if (Outcome o = call(&v1::Compute::Stub::GetJob, get, &job); o.code != 0) return o;
    if (job.state() != v1::JOB_STATE_SUCCEEDED || !job.result().has_svd()) {
      return Outcome::mismatch("GetJob: state " + v1::JobState_Name(job.state()) +
                               " without an SVD result");
    }
    return {};
  }

  /// SubmitJob (a MatMul of a few milliseconds) -> CancelJob at once -> WatchJob to a final
  /// state: CANCELLED, or OK when the job finished before the cancel reached it.
  Outcome job_cancel() {
    v1::SubmitJobRequest req;
    const std::int64_t n = size(192, 320);
    *req.mutable_matmul()->mutable_a()->mutable_inline_() =
        random_matrix(rng_, n, n, v1::DTYPE_F64);
    *req.mutable_matmul()->mutable_b()->mutable_inline_() =
        random_matrix(rng_, n, n, v1::DTYPE_F64);
    req.set_ttl_seconds(5);
    std::string job_id;
    if (Outcome o = submit(req, &job_id); o.code != 0) return o;
    v1::CancelJobRequest cancel;
    cancel.set_job_id(job_id);
    v1::CancelJobResponse cancelled;
    if (Outcome o = call(&v1::Compute::Stub::CancelJob, cancel, &cancelled); o.code != 0) return o;
    v1::Job last;
    if (Outcome o = watch(job_id, &last); o.code != 0) return o;
    switch (last.state()) {
      case v1::JOB_STATE_CANCELLED:
        return {grpc::StatusCode::CANCELLED, last.error_message()};
      case v1::JOB_STATE_SUCCEEDED:
        return {};
      default:
        return {last.error_code(),
                "job ended " + v1::JobState_Name(last.state()) + ": " + last.error_message()};
    }
  }

  Outcome bad_shape() {
    switch (pick(3)) {
      case 0: {  // inner dimensions differ
        v1::MatMulRequest req;
        *req.mutable_a()->mutable_inline_() = random_matrix(rng_, 3, 4, v1::DTYPE_F32);
        *req.mutable_b()->mutable_inline_() = random_matrix(rng_, 5, 2, v1::DTYPE_F32);
        return call(&v1::Compute::Stub::MatMul, req);
      }
      case 1: {  // data shorter than the shape says
        v1::TransposeRequest req;
        *req.mutable_a()->mutable_inline_() = random_matrix(rng_, 7, 9, v1::DTYPE_F32);
        req.mutable_a()->mutable_inline_()->mutable_data()->resize(7 * 9 * 4 - 4);
        return call(&v1::Compute::Stub::Transpose, req);
      }
      default: {  // Eigh of a non-square matrix
        v1::EighRequest req;
        *req.mutable_a()->mutable_inline_() = random_matrix(rng_, 6, 5, v1::DTYPE_F64);
        return call(&v1::Compute::Stub::Eigh, req);
      }
    }
  }

  Outcome not_found() {
    switch (pick(4)) {
      case 0: {
        v1::TransposeRequest req;
        req.mutable_a()->mutable_ref()->set_id("soak-no-such-matrix");
        return call(&v1::Compute::Stub::Transpose, req);
      }
      case 1: {
        v1::GetGraphRequest req;
        req.set_graph_id("soak-no-such-graph");
        return call(&v1::Compute::Stub::GetGraph, req);
      }
      case 2: {
        v1::GetJobRequest req;
        req.set_job_id("j-" + std::string(32, '0'));
        return call(&v1::Compute::Stub::GetJob, req);
      }
      default: {
        v1::ApplyEditsRequest req;
        req.set_graph_id("soak-no-such-graph");
        req.add_edits()->mutable_add_vertex();
        return call(&v1::Compute::Stub::ApplyEdits, req);
      }
    }
  }

  /// A matrix one row over --max-matrix-elements, as read from GetServerInfo (no data needed:
  /// the shape is refused first).
  Outcome over_limit() {
    v1::TransposeRequest req;
    auto* m = req.mutable_a()->mutable_inline_();
    m->set_rows(static_cast<std::int64_t>(limits_.max_matrix_elements / 2 + 1));
    m->set_cols(2);
    m->set_dtype(v1::DTYPE_F32);
    return call(&v1::Compute::Stub::Transpose, req);
  }

  /// An SVD of a 256 x 256 f64 matrix (512 KiB to send, milliseconds to tens of milliseconds of
  /// work) with a 2 ms deadline. The request is built once per client: its data does not
  /// matter.
  Outcome deadline() {
    if (!long_svd_) {
      long_svd_.emplace();
      *long_svd_->mutable_a()->mutable_inline_() = random_matrix(rng_, 256, 256, v1::DTYPE_F64);
    }
    v1::SvdResponse resp;
    auto ctx = context(0.002);
    return Outcome::of(stub_->Svd(ctx.get(), *long_svd_, &resp));
  }

  /// Bytes that do not parse as an SvdRequest: field 1 with wire type 7, or a length-delimited
  /// field that claims more bytes than follow.
  Outcome unparsable() {
    const std::string bytes =
        pick(2) == 0 ? std::string("\x0f", 1) : std::string("\x0a\x64\x01\x02", 4);
    return Outcome::of(
        raw_unary(*generic_, "/gcompute.v1.Compute/Svd", bytes, kCallSeconds, nullptr));
  }

 private:
  std::int64_t size(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  static bool is_transpose(const v1::Matrix& a, const v1::Matrix& at, std::size_t elem) {
    if (at.rows() != a.cols() || at.cols() != a.rows() || at.data().size() != a.data().size()) {
      return false;
    }
    const auto rows = static_cast<std::size_t>(a.rows()), cols = static_cast<std::size_t>(a.cols());
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        if (std::memcmp(a.data().data() + (i * cols + j) * elem,
                        at.data().data() + (j * rows + i) * elem, elem) != 0) {
          return false;
        }
      }
    }
    return true;
  }

  /// A unary call of `method` under the per-call deadline; `resp` may be left out where the
  /// response is not checked.
  template <typename Request, typename Response>
  Outcome call(grpc::Status (v1::Compute::Stub::*method)(grpc::ClientContext*, const Request&,
                                                         Response*),
               const Request& req, Response* resp = nullptr) {
    Response unchecked;
    auto ctx = context(kCallSeconds);
    return Outcome::of((stub_.get()->*method)(ctx.get(), req, resp != nullptr ? resp : &unchecked));
  }

  /// `method` on `a`, sent inline: the response must say it converged and carry its factor
  /// inline (`has_factor`), else a mismatch (`missing`).
  template <typename Request, typename Response, typename HasFactor>
  Outcome decomposition(grpc::Status (v1::Compute::Stub::*method)(grpc::ClientContext*,
                                                                  const Request&, Response*),
                        v1::Matrix a, HasFactor has_factor, const char* missing) {
    Request req;
    *req.mutable_a()->mutable_inline_() = std::move(a);
    Response resp;
    if (Outcome o = call(method, req, &resp); o.code != 0) return o;
    if (!resp.converged() || !has_factor(resp)) return Outcome::mismatch(missing);
    return {};
  }

  Outcome submit(const v1::SubmitJobRequest& req, std::string* job_id) {
    v1::SubmitJobResponse resp;
    if (Outcome o = call(&v1::Compute::Stub::SubmitJob, req, &resp); o.code != 0) return o;
    *job_id = resp.job_id();
    return {};
  }

  Outcome watch(const std::string& job_id, v1::Job* last) {
    v1::WatchJobRequest req;
    req.set_job_id(job_id);
    auto ctx = context(kCallSeconds);
    auto reader = stub_->WatchJob(ctx.get(), req);
    v1::Job job;
    while (reader->Read(&job)) *last = job;
    const grpc::Status s = reader->Finish();
    if (!s.ok()) return Outcome::of(s);
    const auto state = last->state();
    if (state != v1::JOB_STATE_SUCCEEDED && state != v1::JOB_STATE_FAILED &&
        state != v1::JOB_STATE_CANCELLED) {
      return Outcome::mismatch("WatchJob ended with the job " + v1::JobState_Name(state));
    }
    return {};
  }

  std::mt19937_64 rng_;
  std::string name_prefix_;
  Limits limits_;
  std::uint64_t graphs_ = 0;
  std::uint64_t jobs_ = 0;
  std::optional<v1::SvdRequest> long_svd_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Compute::Stub> stub_;
  std::unique_ptr<grpc::GenericStub> generic_;
};

struct Operation {
  const char* name;
  int weight;
  std::set<int> expected;
  Outcome (Client::*run)();
};

const std::vector<Operation>& operations() {
  using C = grpc::StatusCode;
  static const std::vector<Operation> ops = {
      {"transpose", 10, {C::OK}, &Client::transpose},
      {"matmul", 10, {C::OK}, &Client::matmul},
      {"svd", 6, {C::OK}, &Client::svd},
      {"eigh", 6, {C::OK}, &Client::eigh},
      {"apsp", 6, {C::OK}, &Client::apsp},
      {"matrix_lifecycle", 8, {C::OK}, &Client::matrix_lifecycle},
      {"graph_lifecycle", 6, {C::OK}, &Client::graph_lifecycle},
      {"job", 5, {C::OK}, &Client::job},
      {"job_cancel", 2, {C::OK, C::CANCELLED}, &Client::job_cancel},
      {"bad_shape", 3, {C::INVALID_ARGUMENT}, &Client::bad_shape},
      {"not_found", 3, {C::NOT_FOUND}, &Client::not_found},
      {"over_limit", 2, {C::RESOURCE_EXHAUSTED}, &Client::over_limit},
      {"deadline", 2, {C::DEADLINE_EXCEEDED}, &Client::deadline},
      {"unparsable", 2, {C::INVALID_ARGUMENT}, &Client::unparsable},
  };
  return ops;
}

// ---- Shared state -------------------------------------------------------------------------

struct Unexpected {
  std::string op;
  int code;
  std::string message;
};

class Recorder {
 public:
  void unexpected(const std::string& op, const Outcome& o) {
    std::lock_guard lock(mu_);
    if (first_.size() < 10) first_.push_back({op, o.code, o.message});
  }
  std::vector<Unexpected> first() const {
    std::lock_guard lock(mu_);
    return first_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Unexpected> first_;
};

bool parse_args(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--server") {
      o.server = value();
    } else if (a == "--server-pid") {
      o.server_pid = std::strtol(value(), nullptr, 10);
    } else if (a == "--clients") {
      o.clients = std::atoi(value());
    } else if (a == "--seconds") {
      o.seconds = std::atof(value());
    } else if (a == "--seed") {
      o.seed = std::strtoull(value(), nullptr, 10);
    } else if (a == "--out") {
      o.out = value();
    } else if (a == "--max-rss-growth-percent") {
      o.max_rss_growth_percent = std::atof(value());
    } else if (a == "--ops") {
      o.only = value();
    } else if (a == "--max-health-p99-ms") {
      o.max_health_p99_ms = std::atof(value());
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return false;
    }
  }
  if (o.server.empty() || o.clients < 1 || !(o.seconds > 0)) {
    std::fprintf(stderr,
                 "usage: gcompute_soak --server HOST:PORT [--server-pid PID] [--clients N >= 1] "
                 "[--seconds S > 0] [--seed S] [--out FILE.json] [--max-rss-growth-percent 5] "
                 "[--max-health-p99-ms 50] [--ops NAME,...]\n");
    return false;
  }
  return true;
}

double mean_rss_mib(const std::vector<ProcSample>& samples, double from, double to) {
  double sum = 0;
  int n = 0;
  for (const ProcSample& s : samples) {
    if (s.t >= from && s.t <= to && s.rss_kib >= 0) {
      sum += static_cast<double>(s.rss_kib) / 1024.0;
      ++n;
    }
  }
  return n == 0 ? std::nan("") : sum / n;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_args(argc, argv, opt)) return 2;
  if (opt.server_pid > 0 && sample_process(opt.server_pid, 0).rss_kib < 0) {
    std::fprintf(stderr, "cannot read /proc/%ld/status\n", opt.server_pid);
    return 2;
  }
  std::optional<HealthProbe> health = HealthProbe::start(opt.server);
  if (!health) return 2;
  // This thread's nice value (Linux: per thread), inherited by every thread it starts from
  // here on, gRPC's included.
  (void)::setpriority(PRIO_PROCESS, 0, 10);
  health->collect_in_background();

  // The server's limits, for the over-limit request.
  Limits limits;
  {
    auto stub =
        v1::Compute::NewStub(grpc::CreateChannel(opt.server, grpc::InsecureChannelCredentials()));
    v1::GetServerInfoResponse info;
    auto ctx = context(10);
    const grpc::Status s = stub->GetServerInfo(ctx.get(), {}, &info);
    if (!s.ok()) {
      std::fprintf(stderr, "GetServerInfo on %s: %s\n", opt.server.c_str(),
                   s.error_message().c_str());
      return 2;
    }
    limits.max_matrix_elements = info.limits().max_matrix_elements();
    std::printf("soak: %s (backend %s, %u workers), %d clients, %.0f s, seed %llu\n",
                opt.server.c_str(), info.backend().c_str(), info.limits().workers(), opt.clients,
                opt.seconds, static_cast<unsigned long long>(opt.seed));
  }

  const auto& ops = operations();
  std::vector<int> weights;
  std::set<std::string> only;
  for (std::stringstream names(opt.only); names.good();) {
    std::string name;
    std::getline(names, name, ',');
    if (!name.empty()) only.insert(name);
  }
  std::set<std::string> unknown = only;
  for (const Operation& op : ops) {
    weights.push_back(only.empty() || only.count(op.name) > 0 ? op.weight : 0);
    unknown.erase(op.name);
  }
  if (!unknown.empty()) {
    std::fprintf(stderr, "--ops: unknown operation %s\n", unknown.begin()->c_str());
    return 2;
  }

  // The RSS windows: the run's second and last tenths (its second and last minutes in a
  // 10-minute run), sampled a few times each.
  const double window = std::min(60.0, opt.seconds / 10);
  const double sample_every = std::clamp(window / 3, 0.5, 10.0);

  std::atomic<bool> stop{false};
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  auto sleep_unless_stopped = [&](double seconds) {
    std::unique_lock lock(stop_mu);
    return !stop_cv.wait_for(lock, std::chrono::duration<double>(seconds),
                             [&] { return stop.load(); });
  };

  const auto start = Clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };

  std::vector<ProcSample> proc_samples;
  std::thread sampler;
  if (opt.server_pid > 0) {
    proc_samples.push_back(sample_process(opt.server_pid, 0));
    sampler = std::thread([&] {
      while (sleep_unless_stopped(sample_every)) {
        proc_samples.push_back(sample_process(opt.server_pid, since_start()));
      }
    });
  }

  Recorder recorder;
  std::vector<std::vector<OpStats>> per_client(opt.clients, std::vector<OpStats>(ops.size()));
  const auto end = start + std::chrono::duration<double>(opt.seconds);
  std::vector<std::thread> clients;
  for (int c = 0; c < opt.clients; ++c) {
    clients.emplace_back([&, c] {
      Client client(opt.server, opt.seed * 1000003 + static_cast<std::uint64_t>(c), c, limits);
      std::mt19937_64 rng(opt.seed * 7919 + static_cast<std::uint64_t>(c));
      std::discrete_distribution<int> choose(weights.begin(), weights.end());
      while (Clock::now() < end) {
        const int k = choose(rng);
        const Operation& op = ops[static_cast<std::size_t>(k)];
        const auto t0 = Clock::now();
        const Outcome outcome = (client.*op.run)();
        OpStats& st = per_client[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)];
        st.latency_ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        ++st.codes[outcome.code];
        if (op.expected.count(outcome.code) == 0) {
          ++st.unexpected;
          recorder.unexpected(op.name, outcome);
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  const double elapsed = since_start();
  {
    std::lock_guard lock(stop_mu);
    stop = true;
  }
  stop_cv.notify_all();
  std::vector<double> health_ms;
  std::map<int, std::uint64_t> health_codes;
  std::uint64_t health_not_serving = 0;
  for (const HealthProbe::Sample& h : health->finish()) {
    health_ms.push_back(h.ms);
    ++health_codes[h.code];
    if (h.code == 0 && !h.serving) ++health_not_serving;
  }
  if (sampler.joinable()) sampler.join();
  if (opt.server_pid > 0) {
    // The clients' channels are gone; give the server a moment to close their connections so
    // that the last open-descriptor count compares with the first (taken before any client).
    std::this_thread::sleep_for(std::chrono::seconds(1));
    proc_samples.push_back(sample_process(opt.server_pid, elapsed));
  }

  // ---- Summary ----
  std::vector<OpStats> totals(ops.size());
  for (const auto& pc : per_client) {
    for (std::size_t k = 0; k < ops.size(); ++k) totals[k].merge(pc[k]);
  }
  std::uint64_t total_ops = 0, total_unexpected = 0;
  for (auto& t : totals) {
    std::sort(t.latency_ms.begin(), t.latency_ms.end());
    total_ops += t.latency_ms.size();
    total_unexpected += t.unexpected;
  }
  std::sort(health_ms.begin(), health_ms.end());
  const double health_p50 = percentile(health_ms, 0.50), health_p99 = percentile(health_ms, 0.99);
  const double health_max = health_ms.empty() ? 0 : health_ms.back();
  std::uint64_t health_failed = health_not_serving;
  for (const auto& [code, n] : health_codes) {
    if (code != 0) health_failed += n;
  }

  const bool have_proc = opt.server_pid > 0 && !proc_samples.empty();
  const double rss_start = have_proc ? static_cast<double>(proc_samples.front().rss_kib) / 1024 : 0;
  const double rss_end = have_proc ? static_cast<double>(proc_samples.back().rss_kib) / 1024 : 0;
  double rss_after_first = std::nan("");
  for (const ProcSample& s : proc_samples) {
    if (s.t >= window) {
      rss_after_first = static_cast<double>(s.rss_kib) / 1024;
      break;
    }
  }
  const double rss_second = mean_rss_mib(proc_samples, window, 2 * window);
  const double rss_last = mean_rss_mib(proc_samples, elapsed - window, elapsed);
  const double rss_growth = 100 * (rss_last - rss_second) / rss_second;
  const long fds_start = have_proc ? proc_samples.front().open_fds : -1;
  const long fds_end = have_proc ? proc_samples.back().open_fds : -1;

  std::vector<std::string> failures;
  if (total_unexpected > 0) {
    failures.push_back(std::to_string(total_unexpected) + " calls ended with an unexpected code");
  }
  if (health_failed > 0) {
    failures.push_back(std::to_string(health_failed) + " health checks failed or not SERVING");
  }
  if (!(health_p99 < opt.max_health_p99_ms)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "health p99 %.1f ms >= %g ms", health_p99,
                  opt.max_health_p99_ms);
    failures.push_back(buf);
  }
  if (have_proc && !(rss_growth < opt.max_rss_growth_percent)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "RSS grew %.2f %% (>= %g %%) from %.1f to %.1f MiB", rss_growth,
                  opt.max_rss_growth_percent, rss_second, rss_last);
    failures.push_back(buf);
  }

  // JSON.
  if (!opt.out.empty()) {
    std::ostringstream j;
    j << "{\n  \"server\": \"" << json_escape(opt.server) << "\",\n  \"clients\": " << opt.clients
      << ",\n  \"seconds\": " << elapsed << ",\n  \"seed\": " << opt.seed
      << ",\n  \"total_ops\": " << total_ops
      << ",\n  \"ops_per_second\": " << static_cast<double>(total_ops) / elapsed
      << ",\n  \"operations\": {";
    for (std::size_t k = 0; k < ops.size(); ++k) {
      auto& t = totals[k];
      j << (k ? "," : "") << "\n    \"" << ops[k].name << "\": {\"count\": " << t.latency_ms.size()
        << ", \"ops_per_second\": " << static_cast<double>(t.latency_ms.size()) / elapsed
        << ", \"p50_ms\": " << percentile(t.latency_ms, 0.5)
        << ", \"p99_ms\": " << percentile(t.latency_ms, 0.99)
        << ", \"max_ms\": " << (t.latency_ms.empty() ? 0 : t.latency_ms.back())
        << ", \"unexpected\": " << t.unexpected << ", \"expected_codes\": [";
      bool first = true;
      for (const int c : ops[k].expected) {
        j << (first ? "" : ", ") << "\"" << code_name(c) << "\"";
        first = false;
      }
      j << "], \"codes\": {";
      first = true;
      for (const auto& [c, n] : t.codes) {
        j << (first ? "" : ", ") << "\"" << code_name(c) << "\": " << n;
        first = false;
      }
      j << "}}";
    }
    j << "\n  },\n  \"unexpected_first\": [";
    const auto first_unexpected = recorder.first();
    for (std::size_t i = 0; i < first_unexpected.size(); ++i) {
      const auto& u = first_unexpected[i];
      j << (i ? "," : "") << "\n    {\"op\": \"" << u.op << "\", \"code\": \"" << code_name(u.code)
        << "\", \"message\": \"" << json_escape(u.message) << "\"}";
    }
    j << "],\n  \"health\": {\"count\": " << health_ms.size() << ", \"p50_ms\": " << health_p50
      << ", \"p99_ms\": " << health_p99 << ", \"max_ms\": " << health_max
      << ", \"failed\": " << health_failed << "},\n  \"process\": ";
    if (have_proc) {
      auto num = [](double v) {
        return std::isfinite(v) ? std::to_string(v) : std::string("null");
      };
      j << "{\"pid\": " << opt.server_pid << ", \"window_seconds\": " << window
        << ", \"rss_mib_start\": " << num(rss_start)
        << ", \"rss_mib_after_first_window\": " << num(rss_after_first)
        << ", \"rss_mib_end\": " << num(rss_end)
        << ", \"rss_mib_second_window_mean\": " << num(rss_second)
        << ", \"rss_mib_last_window_mean\": " << num(rss_last)
        << ", \"rss_growth_percent\": " << num(rss_growth) << ", \"open_fds_start\": " << fds_start
        << ", \"open_fds_end\": " << fds_end << ", \"samples\": [";
      for (std::size_t i = 0; i < proc_samples.size(); ++i) {
        j << (i ? ", " : "") << "[" << proc_samples[i].t << ", " << proc_samples[i].rss_kib << ", "
          << proc_samples[i].open_fds << "]";
      }
      j << "]}";
    } else {
      j << "null";
    }
    j << ",\n  \"failures\": [";
    for (std::size_t i = 0; i < failures.size(); ++i) {
      j << (i ? ", " : "") << "\"" << json_escape(failures[i]) << "\"";
    }
    j << "],\n  \"passed\": " << (failures.empty() ? "true" : "false") << "\n}\n";
    std::ofstream(opt.out) << j.str();
  }

  // Table last.
  const auto first_unexpected = recorder.first();
  if (!first_unexpected.empty()) {
    std::printf("\nFirst unexpected outcomes:\n");
    for (const auto& u : first_unexpected) {
      std::printf("  %s: %s: %s\n", u.op.c_str(), code_name(u.code).c_str(), u.message.c_str());
    }
  }
  std::printf(
      "\n| operation | count | ops/s | p50 ms | p99 ms | codes (expected) | unexpected |\n");
  std::printf("|---|---:|---:|---:|---:|---|---:|\n");
  for (std::size_t k = 0; k < ops.size(); ++k) {
    auto& t = totals[k];
    std::string codes;
    for (const auto& [c, n] : t.codes) {
      if (!codes.empty()) codes += ", ";
      codes += code_name(c) + " " + std::to_string(n);
    }
    std::string expected;
    for (const int c : ops[k].expected) expected += (expected.empty() ? "" : "/") + code_name(c);
    std::printf("| %s | %zu | %.1f | %.2f | %.2f | %s (%s) | %llu |\n", ops[k].name,
                t.latency_ms.size(), static_cast<double>(t.latency_ms.size()) / elapsed,
                percentile(t.latency_ms, 0.5), percentile(t.latency_ms, 0.99), codes.c_str(),
                expected.c_str(), static_cast<unsigned long long>(t.unexpected));
  }
  std::printf("| **all** | %llu | %.1f | | | | %llu |\n",
              static_cast<unsigned long long>(total_ops), static_cast<double>(total_ops) / elapsed,
              static_cast<unsigned long long>(total_unexpected));
  std::printf("\nhealth: %zu checks, p50 %.2f ms, p99 %.2f ms, max %.2f ms, %llu failed\n",
              health_ms.size(), health_p50, health_p99, health_max,
              static_cast<unsigned long long>(health_failed));
  if (have_proc) {
    std::printf(
        "server RSS: start %.1f MiB, after %.0f s %.1f MiB, end %.1f MiB; mean over [%.0f, %.0f] s "
        "%.1f MiB, over the last %.0f s %.1f MiB: growth %.2f %%\n",
        rss_start, window, rss_after_first, rss_end, window, 2 * window, rss_second, window,
        rss_last, rss_growth);
    std::printf("server open fds: start %ld, end %ld\n", fds_start, fds_end);
  } else {
    std::printf("server RSS and open fds: not measured (no --server-pid)\n");
  }
  if (failures.empty()) {
    std::printf("soak: PASS\n");
    return 0;
  }
  for (const std::string& f : failures) std::printf("soak: FAIL: %s\n", f.c_str());
  return 1;
}
