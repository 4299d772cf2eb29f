// SPDX-License-Identifier: Apache-2.0
// The C++ client of the gcompute service. Thread-safe (gRPC stubs are; the routing state is
// locked).
//
// Several servers (replicas): ClientOptions::target may name several servers, "a:1,b:2", or
// "dns:///NAME:PORT", which is resolved once, at construction, to every address of NAME (one
// replica each). Requests then go to the replicas in turn (round robin); a request that needs
// server-side state goes to the replica that holds it:
//   - requests naming a stored graph go to the graph's owner: rendezvous (highest random
//     weight) hashing of the graph id over the replica names, see graph_owner();
//   - requests with a MatrixRef go to the replica that created the matrix; the client keeps
//     that mapping for the matrices it created (upload_matrix, apsp_stored);
//   - the automatic uploads of one call, the call itself and its automatic downloads all use
//     one replica.
// A stateless call whose replica answers UNAVAILABLE (down, draining) is retried on the next
// replica while the deadline allows. Calls bound to one replica are not retried elsewhere.
//
// Every call runs under a deadline (ClientOptions::default_timeout unless CallOptions gives
// one) that covers the whole call, including automatic uploads and downloads. Errors are
// absl::Status values carrying the server's status code and message unchanged.
//
// Host operands of more than one chunk (ClientOptions::chunk_bytes) are uploaded automatically
// as chunked UploadMatrix streams, as are the largest others while the request would exceed
// ClientOptions::inline_limit_bytes; the operation then uses the ref and the server drops the
// upload as it reads it. Transpose, MatMul, Svd, BatchedSvd and Eigh ask for results expected to
// exceed one chunk as stored matrices (unless shared memory carries them). Results the server
// returns as stored matrices are downloaded and deleted automatically, so callers always get
// host matrices back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcompute/client/host_matrix.hpp"

namespace gcompute::client {

/// Progress of a transfer: bytes done so far out of total.
using ProgressCallback = std::function<void(uint64_t done, uint64_t total)>;

inline constexpr uint64_t kMiB = uint64_t{1} << 20;

struct ClientOptions {
  /// "HOST:PORT" (any gRPC target string); several separated by commas ("a:1,b:2"); or
  /// "dns:///NAME:PORT", resolved at construction to one replica per address of NAME.
  std::string target = "127.0.0.1:50051";
  /// Largest message sent or received; should match the server's --max-message-bytes.
  uint64_t max_message_bytes = 256 * kMiB;
  /// Deadline of each call unless CallOptions overrides it.
  absl::Duration default_timeout = absl::Minutes(10);
  /// Requests whose inline matrices exceed this many bytes upload the largest operands
  /// first. 0 selects min(max_message_bytes / 2, 64 MiB).
  uint64_t inline_limit_bytes = 0;
  /// Bytes per chunk of uploads (and requested for downloads); at most max_message_bytes / 2.
  uint64_t chunk_bytes = 4 * kMiB;
  /// Called during automatic uploads and downloads (may be empty).
  ProgressCallback progress;
  /// TLS (docs/security.md): PEM file of the CA that signed the servers' certificates
  /// (empty with tls_cert: the system's roots). Setting either turns TLS on.
  std::string tls_ca;
  /// Client certificate and key (PEM files) for servers that require mutual TLS.
  std::string tls_cert;
  std::string tls_key;
  /// The name the servers' certificates must carry, when it is not the target's host (for
  /// dns:///NAME:PORT targets it defaults to NAME).
  std::string tls_server_name;
  /// Bearer token sent with every call ("authorization: Bearer TOKEN"); empty: none.
  std::string token;
  /// Same-host zero copy: when a server runs on this host (its GetServerInfo boot id is this
  /// host's) and serves shared memory, the host operands of Transpose, MatMul, Svd, BatchedSvd
  /// and Eigh go through a POSIX shared-memory object both processes map, and so do the
  /// results; nothing crosses the socket but the request's header. false: always the wire.
  bool shared_memory = true;
  /// Calls whose host operands are smaller than this go inline even then (a copy of a few
  /// KiB costs less than using the arena).
  uint64_t shared_memory_min_bytes = 64 * 1024;
};

struct CallOptions {
  /// Overrides ClientOptions::default_timeout for this call.
  std::optional<absl::Duration> timeout;
  /// Overrides ClientOptions::progress for this call's transfers.
  ProgressCallback progress;
};

/// An operand: a host matrix (borrowed for the duration of the call) or a stored matrix.
class Operand {
 public:
  Operand(const HostMatrix& matrix) : source_(&matrix) {}  // NOLINT: implicit by design
  Operand(MatrixRef ref) : source_(std::move(ref)) {}      // NOLINT: implicit by design
  const HostMatrix* matrix() const {
    const auto* m = std::get_if<const HostMatrix*>(&source_);
    return m ? *m : nullptr;
  }
  const MatrixRef* ref() const { return std::get_if<MatrixRef>(&source_); }

 private:
  std::variant<const HostMatrix*, MatrixRef> source_;
};

enum class Precision : int { kDefault = 0, kF32 = 1, kF64 = 2, kTF32 = 3, kBF16 = 4, kF16 = 5 };

struct MatMulOptions {
  bool transpose_a = false;
  bool transpose_b = false;
  Precision precision = Precision::kDefault;
  std::optional<double> alpha;  ///< server default 1
  std::optional<double> beta;   ///< server default 0; non-zero needs c
  std::optional<Operand> c;
};

/// How the server computes an SVD (proto SvdMethod; docs/api.md).
enum class SvdMethod { kAuto, kJacobi, kPolar };

struct SvdOptions {
  SvdMethod method = SvdMethod::kAuto;
  bool compute_uv = true;
  bool full_matrices = false;
  double tolerance = 0;    ///< 0: the server's default
  int32_t max_sweeps = 0;  ///< 0: the server's default (60)
};

struct MatrixResultWithStats {
  HostMatrix matrix;
  ExecutionStats stats;
};

struct SvdResult {
  HostMatrix s;                  ///< 1 x p (batch x 1 x p for batched_svd)
  std::optional<HostMatrix> u;   ///< when compute_uv
  std::optional<HostMatrix> vt;  ///< when compute_uv
  int32_t sweeps = 0;
  bool converged = false;
  ExecutionStats stats;
};

struct EighOptions {
  bool compute_vectors = true;
  double symmetry_tolerance = 0;  ///< 0: the server's default (n * machine epsilon)
};

struct EighResult {
  HostMatrix w;                 ///< 1 x n eigenvalues, ascending (batch x 1 x n)
  std::optional<HostMatrix> v;  ///< n x n, eigenvectors as columns; when compute_vectors
  bool converged = false;
  ExecutionStats stats;
};

/// The graph of an APSP or shortest-path request.
struct ApspGraph {
  /// A dense n x n weight matrix (f32, +inf = no edge; or i32, 2147483647 = no edge),
  /// borrowed or stored; an edge list; or the id of a stored graph.
  std::variant<Operand, EdgeList, std::string> source;
  static ApspGraph dense(Operand weights) { return ApspGraph{std::move(weights)}; }
  static ApspGraph edges(EdgeList list) { return ApspGraph{std::move(list)}; }
  static ApspGraph graph_id(std::string id) { return ApspGraph{std::move(id)}; }
};

struct ApspResult {
  HostMatrix distances;
  std::optional<HostMatrix> next_hop;
  ExecutionStats stats;
};

/// APSP results kept on the server, for later shortest_path calls.
struct StoredApsp {
  StoredMatrix distances;
  StoredMatrix next_hop;
};

struct PathResult {
  bool reachable = false;
  double length = 0;
  std::vector<int64_t> vertices;  ///< source ... target, 0-based; empty when unreachable
  ExecutionStats stats;
};

/// The graph of an Sssp request: an edge list (f32 weights) or the id of a stored graph.
struct SsspGraph {
  std::variant<EdgeList, std::string> source;
  static SsspGraph edges(EdgeList list) { return SsspGraph{std::move(list)}; }
  static SsspGraph graph_id(std::string id) { return SsspGraph{std::move(id)}; }
};

/// Shortest paths from one source to every vertex.
struct SsspResult {
  HostMatrix distances;  ///< 1 x n f32; +inf where unreachable
  HostMatrix parents;    ///< 1 x n i32: the row before row i on a shortest path; -1: unreachable
  /// Row i is vertex vertex_ids[i] (a stored graph whose vertices are not 0..n-1); empty: row
  /// i is vertex i.
  std::vector<int64_t> vertex_ids;
  int64_t reachable = 0;  ///< rows with a finite distance, the source's included
  ExecutionStats stats;

  /// The vertices from the source to vertex `v` (ids where vertex_ids is set), empty when v is
  /// unreachable; NOT_FOUND when v is not a vertex of the graph.
  absl::StatusOr<std::vector<int64_t>> path_to(int64_t v) const;
};

// ---- jobs (docs/jobs.md) -------------------------------------------------------------------

enum class JobPriority : int { kNormal = 0, kHigh = 1 };

/// What a SubmitJob carries besides the operation.
struct JobOptions {
  JobPriority priority = JobPriority::kNormal;
  /// A submit with the key of a live job of the same tenant returns that job; empty: none.
  std::string client_job_key;
  int64_t ttl_seconds = 0;  ///< how long the finished job stays; 0: the server's default
};

/// A job as GetJob reports it.
struct JobInfo {
  std::string job_id;
  std::string method;  ///< "Apsp", "Svd", ...
  std::string state;   ///< "QUEUED", "RUNNING", "SUCCEEDED", "FAILED" or "CANCELLED"
  JobPriority priority = JobPriority::kNormal;
  std::string client_job_key;
  double fraction = 0;  ///< progress, 0..1
  std::string phase;    ///< "queued", "running", "finished"
  std::string detail;   ///< e.g. "round 12 of 128"
  int64_t created_unix_ms = 0;
  int64_t started_unix_ms = 0;   ///< 0 until it runs
  int64_t finished_unix_ms = 0;  ///< 0 until final
  int64_t expires_unix_ms = 0;   ///< 0 until final
  absl::Status error;            ///< FAILED or CANCELLED: the operation's status
  bool final() const { return finished_unix_ms != 0; }
};

/// The results of a SUCCEEDED job: the member of its method is set.
struct JobResults {
  std::string method;
  std::optional<MatrixResultWithStats> matrix;  ///< Transpose, MatMul
  std::optional<SvdResult> svd;                 ///< Svd, BatchedSvd
  std::optional<EighResult> eigh;
  std::optional<ApspResult> apsp;
  std::optional<PathResult> path;  ///< ShortestPath
  std::optional<SsspResult> sssp;
};

/// Default min(max_message_bytes / 2, 64 MiB) when options.inline_limit_bytes is 0.
uint64_t effective_inline_limit(const ClientOptions& options);

/// FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211) of the bytes.
uint64_t fnv1a64(const std::string& bytes);

/// The rendezvous score of a replica for a graph id: fmix64(fnv1a64(replica + "|" + graph_id)),
/// where fmix64 is MurmurHash3's 64-bit finaliser (h ^= h >> 33; h *= 0xff51afd7ed558ccd;
/// h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53; h ^= h >> 33).
uint64_t rendezvous_score(const std::string& replica, const std::string& graph_id);

/// The replica that owns `graph_id` among `replicas` (names as written in the target, or
/// "IP:PORT" / "[IPv6]:PORT" for resolved dns:/// targets): the index with the highest
/// rendezvous_score; on a tie the smaller name wins. Rendezvous hashing: removing a replica
/// moves only the graphs it owned. 0 when there is one replica.
std::size_t graph_owner(const std::vector<std::string>& replicas, const std::string& graph_id);

/// The replica names a target expands to: a comma-separated list as written (trimmed, empty
/// entries are an error), or for "dns:///NAME:PORT" every address NAME resolves to, sorted,
/// as "IP:PORT" or "[IPv6]:PORT". Any other target is one replica.
absl::StatusOr<std::vector<std::string>> expand_target(const std::string& target);

/// The state grpc.health.v1.Health/Check reported.
enum class HealthState : int { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;

  const ClientOptions& options() const;

  absl::StatusOr<MatrixResultWithStats> transpose(const Operand& a, const CallOptions& call = {});
  absl::StatusOr<MatrixResultWithStats> matmul(const Operand& a, const Operand& b,
                                               const MatMulOptions& options = {},
                                               const CallOptions& call = {});
  absl::StatusOr<SvdResult> svd(const Operand& a, const SvdOptions& options = {},
                                const CallOptions& call = {});
  absl::StatusOr<SvdResult> batched_svd(const Operand& a, const SvdOptions& options = {},
                                        const CallOptions& call = {});
  /// Eigendecomposition of a symmetric matrix (or a batch of them).
  absl::StatusOr<EighResult> eigh(const Operand& a, const EighOptions& options = {},
                                  const CallOptions& call = {});
  absl::StatusOr<ApspResult> apsp(const ApspGraph& graph, bool next_hop = false,
                                  const CallOptions& call = {});
  /// APSP with both results stored on the server (ttl_seconds 0: the server's default).
  absl::StatusOr<StoredApsp> apsp_stored(const ApspGraph& graph, int64_t ttl_seconds = 0,
                                         const CallOptions& call = {});
  absl::StatusOr<PathResult> shortest_path(const ApspGraph& graph, int64_t source, int64_t target,
                                           const CallOptions& call = {});
  absl::StatusOr<PathResult> shortest_path(const StoredApsp& stored, int64_t source, int64_t target,
                                           const CallOptions& call = {});
  /// Shortest paths from `source` (an index for an edge list, a vertex id for a stored graph)
  /// to every vertex, without APSP; results inline, or stored where they do not fit.
  absl::StatusOr<SsspResult> sssp(const SsspGraph& graph, int64_t source,
                                  const CallOptions& call = {});

  /// Uploads in chunks of ClientOptions::chunk_bytes.
  absl::StatusOr<StoredMatrix> upload_matrix(const HostMatrix& matrix, int64_t ttl_seconds = 0,
                                             const CallOptions& call = {});
  absl::StatusOr<HostMatrix> download_matrix(const MatrixRef& ref, const CallOptions& call = {});
  /// Downloads into `out`, keeping its buffer when it has the matrix's size already: repeated
  /// downloads of one shape then cost one copy of the bytes and no fresh pages. On an error
  /// `out`'s shape and bytes are unspecified.
  absl::Status download_matrix_into(const MatrixRef& ref, HostMatrix& out,
                                    const CallOptions& call = {});
  absl::Status delete_matrix(const MatrixRef& ref, const CallOptions& call = {});

  /// graph_id empty: the server picks one (with several replicas the client picks a random
  /// "g-" + 16 hex digits id instead, so that it knows the owner). Edge ids are ignored.
  absl::StatusOr<GraphInfo> create_graph(const std::string& graph_id, uint64_t num_vertices,
                                         const std::vector<Hyperedge>& edges,
                                         const CallOptions& call = {});
  absl::StatusOr<GraphSnapshot> get_graph(const std::string& graph_id,
                                          const CallOptions& call = {});
  /// Every replica's graphs, merged and sorted by id; fails if any replica fails.
  absl::StatusOr<std::vector<GraphInfo>> list_graphs(const CallOptions& call = {});
  absl::Status delete_graph(const std::string& graph_id, const CallOptions& call = {});
  absl::StatusOr<ApplyEditsResult> apply_edits(const std::string& graph_id,
                                               const std::vector<GraphEdit>& edits,
                                               std::optional<uint64_t> expected_version = {},
                                               const CallOptions& call = {});

  /// The info of one replica (round robin).
  // Jobs: submit returns the job id. A job lives on the replica that accepted it; the other
  // calls find it there (asking each replica in turn for an id this client did not submit).
  absl::StatusOr<std::string> submit_transpose(const Operand& a, const JobOptions& job = {},
                                               const CallOptions& call = {});
  absl::StatusOr<std::string> submit_matmul(const Operand& a, const Operand& b,
                                            const MatMulOptions& options,
                                            const JobOptions& job = {},
                                            const CallOptions& call = {});
  /// batched: BatchedSvd (a batch of matrices), else Svd.
  absl::StatusOr<std::string> submit_svd(const Operand& a, const SvdOptions& options, bool batched,
                                         const JobOptions& job = {}, const CallOptions& call = {});
  absl::StatusOr<std::string> submit_apsp(const ApspGraph& graph, bool next_hop,
                                          const JobOptions& job = {}, const CallOptions& call = {});
  absl::StatusOr<std::string> submit_shortest_path(const ApspGraph& graph, int64_t source,
                                                   int64_t target, const JobOptions& job = {},
                                                   const CallOptions& call = {});
  absl::StatusOr<std::string> submit_sssp(const SsspGraph& graph, int64_t source,
                                          const JobOptions& job = {}, const CallOptions& call = {});
  absl::StatusOr<JobInfo> get_job(const std::string& job_id, const CallOptions& call = {});
  absl::StatusOr<JobInfo> cancel_job(const std::string& job_id, const CallOptions& call = {});
  /// Every job of the caller on every replica (all pages), oldest first per replica.
  absl::StatusOr<std::vector<JobInfo>> list_jobs(const CallOptions& call = {});
  /// Calls `on_update` with the job now and after each change until it is final; returns the
  /// final state.
  absl::StatusOr<JobInfo> watch_job(const std::string& job_id,
                                    const std::function<void(const JobInfo&)>& on_update,
                                    const CallOptions& call = {});
  /// The results of a finished job (stored ones downloaded); FAILED_PRECONDITION while it is
  /// not final, its own error when it FAILED or was CANCELLED.
  absl::StatusOr<JobResults> job_results(const std::string& job_id, const CallOptions& call = {});

  absl::StatusOr<ServerInfo> server_info(const CallOptions& call = {});
  /// The info of replica `replica` (an index into replicas()).
  absl::StatusOr<ServerInfo> server_info_at(std::size_t replica, const CallOptions& call = {});

  /// grpc.health.v1.Health/Check of replica `replica` for `service` ("" = the whole server).
  absl::StatusOr<HealthState> health_at(std::size_t replica, const std::string& service = "",
                                        const CallOptions& call = {});

  /// The replica names (see expand_target); one entry for a single server.
  const std::vector<std::string>& replicas() const;
  /// The replica that graph requests for `graph_id` go to.
  std::size_t replica_for_graph(const std::string& graph_id) const;
  /// The replica that created a stored matrix, if this client knows it.
  std::optional<std::size_t> replica_for_matrix(const MatrixRef& ref) const;

  /// Opaque implementation (replicas, channels, stubs); defined in client/lib/client_impl.hpp.
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gcompute::client
