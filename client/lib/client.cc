// SPDX-License-Identifier: Apache-2.0
#include "gcompute/client/client.hpp"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/byte_buffer.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gcompute/client/grpc_status.hpp"
#include "gcompute/v1/service.grpc.pb.h"

namespace gcompute::client {
namespace {

namespace pb = ::gcompute::v1;

// Deleting temporary server matrices must not fail just because the call's own deadline
// has passed; the server's TTL is the backstop if this one runs out too.
constexpr absl::Duration kCleanupTimeout = absl::Seconds(30);

std::string shape_string(int64_t batch, int64_t rows, int64_t cols, DType dtype) {
  return absl::StrCat(batch, "x", rows, "x", cols, " ", dtype_name(dtype));
}

void set_deadline(grpc::ClientContext& context, absl::Time deadline) {
  context.set_deadline(absl::ToChronoTime(deadline));
}

void to_proto(const HostMatrix& m, pb::Matrix* out) {
  out->set_batch(m.batch);
  out->set_rows(m.rows);
  out->set_cols(m.cols);
  out->set_dtype(static_cast<pb::DType>(m.dtype));
  out->set_data(m.data);
}

absl::StatusOr<HostMatrix> from_proto(pb::Matrix* m) {
  HostMatrix out;
  out.batch = m->batch() == 0 ? 1 : m->batch();
  out.rows = m->rows();
  out.cols = m->cols();
  out.dtype = static_cast<DType>(m->dtype());
  if (out.batch < 0 || out.rows < 0 || out.cols < 0 || dtype_size(out.dtype) == 0) {
    return absl::InternalError(
        absl::StrCat("server returned an invalid matrix: ",
                     shape_string(out.batch, out.rows, out.cols, out.dtype)));
  }
  if (m->data().size() != out.expected_bytes()) {
    return absl::InternalError(absl::StrCat("server returned ", m->data().size(), " bytes for a ",
                                            shape_string(out.batch, out.rows, out.cols, out.dtype),
                                            " matrix; expected ", out.expected_bytes()));
  }
  out.data = std::move(*m->mutable_data());
  return out;
}

StoredMatrix from_proto(const pb::StoredMatrix& s) {
  StoredMatrix out;
  out.ref.id = s.ref().id();
  out.batch = s.shape().batch() == 0 ? 1 : s.shape().batch();
  out.rows = s.shape().rows();
  out.cols = s.shape().cols();
  out.dtype = static_cast<DType>(s.shape().dtype());
  out.expires_at_unix_ms = s.expires_at_unix_ms();
  out.size_bytes = s.size_bytes();
  return out;
}

ExecutionStats from_proto(const pb::ExecutionStats& s) {
  return ExecutionStats{s.queue_seconds(), s.h2d_seconds(),   s.compute_seconds(),
                        s.d2h_seconds(),   s.total_seconds(), s.device()};
}

GraphInfo from_proto(const pb::GraphInfo& g) {
  return GraphInfo{g.graph_id(), g.version(), g.num_vertices(), g.num_edges()};
}

void to_proto(const EdgeList& e, pb::EdgeList* out) {
  out->set_num_vertices(e.num_vertices);
  out->mutable_src()->Add(e.src.begin(), e.src.end());
  out->mutable_dst()->Add(e.dst.begin(), e.dst.end());
  out->mutable_weight()->Add(e.weight.begin(), e.weight.end());
  out->set_dtype(static_cast<pb::DType>(e.dtype));
}

void to_proto(const Hyperedge& e, pb::Hyperedge* out) {
  out->mutable_tails()->Add(e.tails.begin(), e.tails.end());
  out->mutable_heads()->Add(e.heads.begin(), e.heads.end());
  out->set_weight(e.weight);
}

struct EditToProto {
  pb::Edit* out;
  void operator()(const AddVertex&) const { out->mutable_add_vertex(); }
  void operator()(const DeleteVertex& e) const {
    out->mutable_delete_vertex()->set_vertex_id(e.vertex_id);
  }
  void operator()(const AddEdge& e) const {
    auto* a = out->mutable_add_edge();
    a->mutable_tails()->Add(e.tails.begin(), e.tails.end());
    a->mutable_heads()->Add(e.heads.begin(), e.heads.end());
    a->set_weight(e.weight);
  }
  void operator()(const DeleteEdge& e) const { out->mutable_delete_edge()->set_edge_id(e.edge_id); }
  void operator()(const SetWeight& e) const {
    auto* s = out->mutable_set_weight();
    s->set_edge_id(e.edge_id);
    s->set_weight(e.weight);
  }
  void operator()(const DecomposeVertex& e) const {
    auto* d = out->mutable_decompose_vertex();
    d->set_vertex_id(e.vertex_id);
    d->mutable_move_edge_ids()->Add(e.move_edge_ids.begin(), e.move_edge_ids.end());
    d->set_joining_weight(e.joining_weight);
  }
};

}  // namespace

absl::Status from_grpc_status(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
      return 8;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kUnspecified:
      break;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
    case DType::kUnspecified:
      break;
  }
  return "unspecified";
}

uint64_t effective_inline_limit(const ClientOptions& options) {
  if (options.inline_limit_bytes != 0) return options.inline_limit_bytes;
  return std::min<uint64_t>(options.max_message_bytes / 2, 64 * kMiB);
}

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t rendezvous_score(const std::string& replica, const std::string& graph_id) {
  // FNV-1a alone is a poor rendezvous score: ids that differ only in their last bytes
  // change only the low bits of the product, so one replica would win them all. The
  // MurmurHash3 fmix64 finaliser spreads every input bit over the whole word.
  uint64_t h = fnv1a64(absl::StrCat(replica, "|", graph_id));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

std::size_t graph_owner(const std::vector<std::string>& replicas, const std::string& graph_id) {
  std::size_t best = 0;
  uint64_t best_score = 0;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    const uint64_t score = rendezvous_score(replicas[i], graph_id);
    if (i == 0 || score > best_score || (score == best_score && replicas[i] < replicas[best])) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

absl::StatusOr<std::vector<std::string>> expand_target(const std::string& target) {
  static constexpr char kDns[] = "dns:";
  if (target.rfind(kDns, 0) == 0 && target.find(',') == std::string::npos) {
    // dns:///NAME:PORT or dns://AUTHORITY/NAME:PORT (the authority is ignored: the system
    // resolver answers).
    std::string rest = target.substr(std::strlen(kDns));
    if (rest.rfind("//", 0) == 0) {
      const std::size_t slash = rest.find('/', 2);
      if (slash == std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("target '", target, "': expected dns:///NAME:PORT"));
      }
      rest = rest.substr(slash + 1);
    }
    std::string host;
    std::string port;
    if (!rest.empty() && rest[0] == '[') {
      const std::size_t close = rest.find(']');
      if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
        return absl::InvalidArgumentError(absl::StrCat("target '", target, "': bad [IPv6]:PORT"));
      }
      host = rest.substr(1, close - 1);
      port = rest.substr(close + 2);
    } else {
      const std::size_t colon = rest.rfind(':');
      if (colon == std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("target '", target, "' has no port (dns:///NAME:PORT)"));
      }
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
    }
    if (host.empty() || port.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("target '", target, "': empty name or port"));
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot resolve '", host, "': ", gai_strerror(rc)));
    }
    std::set<std::string> names;
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      if (a->ai_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
        names.insert(absl::StrCat(text, ":", port));
      } else if (a->ai_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
        names.insert(absl::StrCat("[", text, "]:", port));
      }
    }
    freeaddrinfo(found);
    if (names.empty()) {
      return absl::UnavailableError(absl::StrCat("'", host, "' resolved to no addresses"));
    }
    return std::vector<std::string>(names.begin(), names.end());
  }
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(target, ',')) {
    const std::string name(absl::StripAsciiWhitespace(part));
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("target '", target, "' has an empty entry"));
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", target, "' names '", name, "' twice"));
    }
    out.push_back(name);
  }
  return out;
}

namespace {

// The health service is not part of our proto: its two messages are encoded by hand.
// HealthCheckRequest{string service = 1}; HealthCheckResponse{ServingStatus status = 1}.
std::string encode_health_request(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);
  uint64_t n = service.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  return out + service;
}

absl::StatusOr<int> decode_health_status(const std::string& bytes) {
  int status = 0;
  std::size_t i = 0;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; i < bytes.size() && shift < 64; shift += 7) {
      const auto c = static_cast<unsigned char>(bytes[i++]);
      v |= uint64_t{c & 0x7fu} << shift;
      if ((c & 0x80) == 0) return true;
    }
    return false;
  };
  while (i < bytes.size()) {
    uint64_t tag = 0;
    uint64_t value = 0;
    if (!varint(tag)) break;
    if ((tag & 7) == 0) {
      if (!varint(value)) break;
      if ((tag >> 3) == 1) status = static_cast<int>(value);
    } else if ((tag & 7) == 2) {
      if (!varint(value) || value > bytes.size() - i) break;
      i += value;
    } else {
      return absl::InternalError("undecodable HealthCheckResponse");
    }
  }
  return status;
}

}  // namespace

struct Client::Impl {
  // One server: its channel and stub.
  struct Replica {
    std::string name;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pb::Compute::Stub> stub;
  };
  // Which replica created a stored matrix, until it expires or is deleted.
  struct Owned {
    std::size_t replica;
    int64_t expires_at_unix_ms;
  };

  ClientOptions options;
  std::vector<std::string> names;
  std::vector<Replica> replicas;
  absl::Status init_error;  // a target that did not expand: every call returns it
  std::atomic<std::size_t> next{0};
  mutable std::mutex owners_mu;
  std::unordered_map<std::string, Owned> owners;

  explicit Impl(ClientOptions o) : options(std::move(o)) {
    if (options.chunk_bytes == 0) options.chunk_bytes = 4 * kMiB;
    // A chunk plus its framing must fit in one message on both sides.
    options.chunk_bytes =
        std::max<uint64_t>(1, std::min(options.chunk_bytes, options.max_message_bytes / 2));
    grpc::ChannelArguments args;
    const int max_bytes = static_cast<int>(std::min<uint64_t>(options.max_message_bytes, INT_MAX));
    args.SetMaxReceiveMessageSize(max_bytes);
    args.SetMaxSendMessageSize(max_bytes);
    absl::StatusOr<std::vector<std::string>> expanded = expand_target(options.target);
    if (expanded.ok()) {
      names = *std::move(expanded);
    } else {
      init_error = expanded.status();
      names = {options.target};
    }
    // Many short-lived clients (CLI invocations) would all start at replica 0: start each
    // client's round robin at a random replica instead.
    next.store(static_cast<std::size_t>(std::random_device{}()), std::memory_order_relaxed);
    for (const std::string& name : names) {
      Replica r;
      r.name = name;
      r.channel = grpc::CreateCustomChannel(name, grpc::InsecureChannelCredentials(), args);
      r.stub = pb::Compute::NewStub(r.channel);
      replicas.push_back(std::move(r));
    }
  }

  absl::Time deadline(const CallOptions& call) const {
    return absl::Now() + call.timeout.value_or(options.default_timeout);
  }
  const ProgressCallback& progress(const CallOptions& call) const {
    return call.progress ? call.progress : options.progress;
  }

  std::size_t pick() { return next.fetch_add(1, std::memory_order_relaxed) % replicas.size(); }

  void remember(const std::string& id, std::size_t replica, int64_t expires_at_unix_ms) {
    if (replicas.size() == 1) return;
    std::lock_guard<std::mutex> lock(owners_mu);
    // Forget expired matrices now and then so a long-lived client does not grow without end.
    if (owners.size() >= 4096 && owners.size() % 1024 == 0) {
      const int64_t now_ms = absl::ToUnixMillis(absl::Now());
      for (auto it = owners.begin(); it != owners.end();) {
        it = it->second.expires_at_unix_ms != 0 && it->second.expires_at_unix_ms < now_ms
                 ? owners.erase(it)
                 : std::next(it);
      }
    }
    owners[id] = Owned{replica, expires_at_unix_ms};
  }
  void forget(const std::string& id) {
    std::lock_guard<std::mutex> lock(owners_mu);
    owners.erase(id);
  }
  std::optional<std::size_t> owner_of(const std::string& id) const {
    if (replicas.size() == 1) return 0;
    std::lock_guard<std::mutex> lock(owners_mu);
    auto it = owners.find(id);
    if (it == owners.end()) return std::nullopt;
    return it->second.replica;
  }

  // Where one call goes: a fixed replica (state lives there) or any (balanced, with failover).
  struct Route {
    std::optional<std::size_t> fixed;
  };

  // The route of a call whose stored-matrix operands are `refs` (may be empty).
  absl::StatusOr<Route> route_refs(const std::vector<const MatrixRef*>& refs) {
    Route route;
    bool unknown = false;
    for (const MatrixRef* ref : refs) {
      const std::optional<std::size_t> owner = owner_of(ref->id);
      if (!owner) {
        unknown = true;
        continue;
      }
      if (route.fixed && *route.fixed != *owner) {
        return absl::InvalidArgumentError(
            absl::StrCat("the stored operands of one call live on different servers (",
                         replicas[*route.fixed].name, " and ", replicas[*owner].name,
                         "): download one and pass it inline, or upload both through one server"));
      }
      route.fixed = owner;
    }
    // A ref this client did not create: it may be on any replica; one is chosen in turn
    // (NOT_FOUND if it is elsewhere), never retried as if the call were stateless.
    if (!route.fixed && unknown) route.fixed = pick();
    return route;
  }

  // Runs `fn(replica)` on the route: a fixed replica once, or replicas in turn from the next
  // round-robin one while they answer UNAVAILABLE and the deadline has not passed.
  template <typename Fn>
  auto run(const Route& route, absl::Time dl, Fn&& fn) -> decltype(fn(replicas[0], 0)) {
    if (!init_error.ok()) return init_error;
    if (route.fixed) return fn(replicas[*route.fixed], *route.fixed);
    const std::size_t n = replicas.size();
    const std::size_t first = pick();
    for (std::size_t i = 0;; ++i) {
      const std::size_t index = (first + i) % n;
      auto result = fn(replicas[index], index);
      if (i + 1 >= n || absl::Now() >= dl) return result;
      const absl::Status* status = status_of(result);
      if (status->code() != absl::StatusCode::kUnavailable) return result;
    }
  }
  static const absl::Status* status_of(const absl::Status& s) { return &s; }
  template <typename T>
  static const absl::Status* status_of(const absl::StatusOr<T>& s) {
    return &s.status();
  }

  absl::StatusOr<StoredMatrix> upload(Replica& r, const HostMatrix& m, int64_t ttl_seconds,
                                      absl::Time dl, const ProgressCallback& progress) {
    if (m.data.size() != m.expected_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "matrix data has ", m.data.size(), " bytes but its shape ",
          shape_string(m.batch, m.rows, m.cols, m.dtype), " needs ", m.expected_bytes()));
    }
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::UploadMatrixResponse response;
    auto writer = r.stub->UploadMatrix(&context, &response);
    pb::UploadMatrixRequest header;
    auto* shape = header.mutable_header()->mutable_shape();
    shape->set_batch(m.batch);
    shape->set_rows(m.rows);
    shape->set_cols(m.cols);
    shape->set_dtype(static_cast<pb::DType>(m.dtype));
    header.mutable_header()->set_ttl_seconds(ttl_seconds);
    bool ok = writer->Write(header);
    const uint64_t total = m.data.size();
    if (progress) progress(0, total);
    for (uint64_t offset = 0; ok && offset < total; offset += options.chunk_bytes) {
      const uint64_t n = std::min<uint64_t>(options.chunk_bytes, total - offset);
      pb::UploadMatrixRequest chunk;
      chunk.mutable_chunk()->set_offset(offset);
      chunk.mutable_chunk()->set_data(m.data.data() + offset, n);
      ok = writer->Write(chunk);
      if (ok && progress) progress(offset + n, total);
    }
    if (ok) writer->WritesDone();
    absl::Status status = from_grpc_status(writer->Finish());
    if (!status.ok()) return status;
    if (!ok) return absl::UnavailableError("upload stream closed before all chunks were sent");
    return from_proto(response.matrix());
  }

  absl::StatusOr<HostMatrix> download(Replica& r, const MatrixRef& ref, absl::Time dl,
                                      const ProgressCallback& progress) {
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::DownloadMatrixRequest request;
    request.mutable_ref()->set_id(ref.id);
    request.set_chunk_bytes(options.chunk_bytes);
    auto reader = r.stub->DownloadMatrix(&context, request);
    pb::DownloadMatrixResponse part;
    HostMatrix out;
    bool have_header = false;
    uint64_t received = 0;
    absl::Status protocol_error;
    while (reader->Read(&part)) {
      if (part.has_header()) {
        if (have_header) {
          protocol_error = absl::InternalError("download stream sent a second header");
          break;
        }
        const StoredMatrix s = from_proto(part.header());
        out.batch = s.batch;
        out.rows = s.rows;
        out.cols = s.cols;
        out.dtype = s.dtype;
        if (out.batch < 0 || out.rows < 0 || out.cols < 0 || dtype_size(out.dtype) == 0) {
          protocol_error = absl::InternalError(
              absl::StrCat("download header describes an invalid matrix: ",
                           shape_string(out.batch, out.rows, out.cols, out.dtype)));
          break;
        }
        out.data.resize(out.expected_bytes());
        have_header = true;
        if (progress) progress(0, out.data.size());
      } else if (part.has_chunk()) {
        const auto& chunk = part.chunk();
        if (!have_header || chunk.offset() != received ||
            chunk.data().size() > out.data.size() - received) {
          protocol_error = absl::InternalError(
              absl::StrCat("download chunk at offset ", chunk.offset(), " of ", chunk.data().size(),
                           " bytes does not follow byte ", received, " of ", out.data.size()));
          break;
        }
        std::memcpy(out.data.data() + received, chunk.data().data(), chunk.data().size());
        received += chunk.data().size();
        if (progress) progress(received, out.data.size());
      }
    }
    if (!protocol_error.ok()) {
      context.TryCancel();
      reader->Finish();
      return protocol_error;
    }
    absl::Status status = from_grpc_status(reader->Finish());
    if (!status.ok()) return status;
    if (!have_header) return absl::InternalError("download stream ended without a header");
    if (received != out.data.size()) {
      return absl::InternalError(absl::StrCat("download stream ended after ", received, " of ",
                                              out.data.size(), " bytes"));
    }
    return out;
  }

  absl::Status remove(Replica& r, const MatrixRef& ref, absl::Time dl) {
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::DeleteMatrixRequest request;
    request.mutable_ref()->set_id(ref.id);
    pb::DeleteMatrixResponse response;
    return from_grpc_status(r.stub->DeleteMatrix(&context, request, &response));
  }

  // Turns a MatrixResult into a host matrix, downloading (and deleting) stored results.
  absl::StatusOr<HostMatrix> take(Replica& r, pb::MatrixResult* result, absl::Time dl,
                                  const ProgressCallback& progress, const char* what) {
    if (result->has_inline_()) return from_proto(result->mutable_inline_());
    if (result->has_stored()) {
      const MatrixRef ref{result->stored().ref().id()};
      absl::StatusOr<HostMatrix> m = download(r, ref, dl, progress);
      // Best effort: the result has a TTL on the server anyway.
      (void)remove(r, ref, absl::Now() + kCleanupTimeout);
      return m;
    }
    return absl::InternalError(absl::StrCat("server response has no ", what));
  }
};

namespace {

using Replica = Client::Impl::Replica;
using Route = Client::Impl::Route;

// Places the operands of one request on one replica: inline, or, when the inline bytes would
// exceed the limit, uploaded (largest first) and referenced. Uploaded matrices are deleted on
// destruction.
class Stager {
 public:
  Stager(Client::Impl& impl, Replica& replica, absl::Time deadline,
         const ProgressCallback& progress)
      : impl_(impl), replica_(replica), deadline_(deadline), progress_(progress) {}
  ~Stager() {
    const absl::Time cleanup = absl::Now() + kCleanupTimeout;
    for (const MatrixRef& ref : uploaded_) (void)impl_.remove(replica_, ref, cleanup);
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // Registers an operand. Exactly one of `as_matrix`/`as_ref` may be used: for an Operand
  // field pass both from the oneof; for ApspRequest pass dense and dense_ref.
  void add(const Operand& operand, std::function<pb::Matrix*()> as_matrix,
           std::function<pb::MatrixRef*()> as_ref) {
    slots_.push_back(Slot{&operand, std::move(as_matrix), std::move(as_ref)});
  }

  absl::Status place() {
    uint64_t inline_bytes = 0;
    std::vector<Slot*> host;
    for (Slot& s : slots_) {
      if (const MatrixRef* ref = s.operand->ref()) {
        s.as_ref()->set_id(ref->id);
      } else {
        inline_bytes += s.operand->matrix()->data.size();
        host.push_back(&s);
      }
    }
    std::sort(host.begin(), host.end(), [](const Slot* a, const Slot* b) {
      return a->operand->matrix()->data.size() > b->operand->matrix()->data.size();
    });
    const uint64_t limit = effective_inline_limit(impl_.options);
    for (Slot* s : host) {
      const HostMatrix& m = *s->operand->matrix();
      if (inline_bytes > limit) {
        absl::StatusOr<StoredMatrix> stored = impl_.upload(replica_, m, 0, deadline_, progress_);
        if (!stored.ok()) return stored.status();
        uploaded_.push_back(stored->ref);
        s->as_ref()->set_id(stored->ref.id);
        inline_bytes -= m.data.size();
      } else {
        to_proto(m, s->as_matrix());
      }
    }
    return absl::OkStatus();
  }

 private:
  struct Slot {
    const Operand* operand;
    std::function<pb::Matrix*()> as_matrix;
    std::function<pb::MatrixRef*()> as_ref;
  };
  Client::Impl& impl_;
  Replica& replica_;
  absl::Time deadline_;
  const ProgressCallback& progress_;
  std::vector<Slot> slots_;
  std::vector<MatrixRef> uploaded_;
};

void add_operand(Stager& stager, const Operand& operand, pb::Operand* field) {
  stager.add(
      operand, [field] { return field->mutable_inline_(); },
      [field] { return field->mutable_ref(); });
}

void add_graph(Stager& stager, const ApspGraph& graph, pb::ApspRequest* request) {
  if (const auto* dense = std::get_if<Operand>(&graph.source)) {
    stager.add(
        *dense, [request] { return request->mutable_dense(); },
        [request] { return request->mutable_dense_ref(); });
  } else if (const auto* edges = std::get_if<EdgeList>(&graph.source)) {
    to_proto(*edges, request->mutable_edges());
  } else {
    request->set_graph_id(std::get<std::string>(graph.source));
  }
}

void to_proto(const SvdOptions& o, pb::SvdRequest* request) {
  request->set_compute_uv(o.compute_uv);
  request->set_full_matrices(o.full_matrices);
  request->set_tolerance(o.tolerance);
  request->set_max_sweeps(o.max_sweeps);
}

void collect_ref(const Operand& operand, std::vector<const MatrixRef*>& refs) {
  if (const MatrixRef* ref = operand.ref()) refs.push_back(ref);
}

// The route of a call on `graph`: its owner for a stored graph id, else by its dense ref.
absl::StatusOr<Route> route_graph(Client::Impl& impl, const ApspGraph& graph) {
  if (const auto* id = std::get_if<std::string>(&graph.source)) {
    return Route{graph_owner(impl.names, *id)};
  }
  std::vector<const MatrixRef*> refs;
  if (const auto* dense = std::get_if<Operand>(&graph.source)) collect_ref(*dense, refs);
  return impl.route_refs(refs);
}

}  // namespace

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const ClientOptions& Client::options() const {
  return impl_->options;
}

const std::vector<std::string>& Client::replicas() const {
  return impl_->names;
}

std::size_t Client::replica_for_graph(const std::string& graph_id) const {
  return graph_owner(impl_->names, graph_id);
}

std::optional<std::size_t> Client::replica_for_matrix(const MatrixRef& ref) const {
  return impl_->owner_of(ref.id);
}

absl::StatusOr<MatrixResultWithStats> Client::transpose(const Operand& a, const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  std::vector<const MatrixRef*> refs;
  collect_ref(a, refs);
  absl::StatusOr<Route> route = impl_->route_refs(refs);
  if (!route.ok()) return route.status();
  return impl_->run(
      *route, dl, [&](Replica& r, std::size_t) -> absl::StatusOr<MatrixResultWithStats> {
        Stager stager(*impl_, r, dl, impl_->progress(call));
        pb::TransposeRequest request;
        add_operand(stager, a, request.mutable_a());
        if (absl::Status s = stager.place(); !s.ok()) return s;
        grpc::ClientContext context;
        set_deadline(context, dl);
        pb::TransposeResponse response;
        if (absl::Status s = from_grpc_status(r.stub->Transpose(&context, request, &response));
            !s.ok()) {
          return s;
        }
        absl::StatusOr<HostMatrix> at =
            impl_->take(r, response.mutable_at(), dl, impl_->progress(call), "at");
        if (!at.ok()) return at.status();
        return MatrixResultWithStats{*std::move(at), from_proto(response.stats())};
      });
}

absl::StatusOr<MatrixResultWithStats> Client::matmul(const Operand& a, const Operand& b,
                                                     const MatMulOptions& options,
                                                     const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  std::vector<const MatrixRef*> refs;
  collect_ref(a, refs);
  collect_ref(b, refs);
  if (options.c) collect_ref(*options.c, refs);
  absl::StatusOr<Route> route = impl_->route_refs(refs);
  if (!route.ok()) return route.status();
  return impl_->run(
      *route, dl, [&](Replica& r, std::size_t) -> absl::StatusOr<MatrixResultWithStats> {
        Stager stager(*impl_, r, dl, impl_->progress(call));
        pb::MatMulRequest request;
        add_operand(stager, a, request.mutable_a());
        add_operand(stager, b, request.mutable_b());
        if (options.c) add_operand(stager, *options.c, request.mutable_c());
        request.set_transpose_a(options.transpose_a);
        request.set_transpose_b(options.transpose_b);
        request.set_precision(static_cast<pb::Precision>(options.precision));
        if (options.alpha) request.set_alpha(*options.alpha);
        if (options.beta) request.set_beta(*options.beta);
        if (absl::Status s = stager.place(); !s.ok()) return s;
        grpc::ClientContext context;
        set_deadline(context, dl);
        pb::MatMulResponse response;
        if (absl::Status s = from_grpc_status(r.stub->MatMul(&context, request, &response));
            !s.ok()) {
          return s;
        }
        absl::StatusOr<HostMatrix> c =
            impl_->take(r, response.mutable_c(), dl, impl_->progress(call), "c");
        if (!c.ok()) return c.status();
        return MatrixResultWithStats{*std::move(c), from_proto(response.stats())};
      });
}

namespace {

absl::StatusOr<SvdResult> run_svd(Client::Impl& impl, bool batched, const Operand& a,
                                  const SvdOptions& options, const CallOptions& call) {
  const absl::Time dl = impl.deadline(call);
  const ProgressCallback& progress = impl.progress(call);
  std::vector<const MatrixRef*> refs;
  collect_ref(a, refs);
  absl::StatusOr<Route> route = impl.route_refs(refs);
  if (!route.ok()) return route.status();
  return impl.run(*route, dl, [&](Replica& r, std::size_t) -> absl::StatusOr<SvdResult> {
    Stager stager(impl, r, dl, progress);
    pb::SvdRequest request;
    add_operand(stager, a, request.mutable_a());
    to_proto(options, &request);
    if (absl::Status s = stager.place(); !s.ok()) return s;
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::SvdResponse response;
    const grpc::Status status = batched ? r.stub->BatchedSvd(&context, request, &response)
                                        : r.stub->Svd(&context, request, &response);
    if (absl::Status s = from_grpc_status(status); !s.ok()) return s;
    SvdResult out;
    absl::StatusOr<HostMatrix> s = impl.take(r, response.mutable_s(), dl, progress, "s");
    if (!s.ok()) return s.status();
    out.s = *std::move(s);
    if (options.compute_uv) {
      absl::StatusOr<HostMatrix> u = impl.take(r, response.mutable_u(), dl, progress, "u");
      if (!u.ok()) return u.status();
      absl::StatusOr<HostMatrix> vt = impl.take(r, response.mutable_vt(), dl, progress, "vt");
      if (!vt.ok()) return vt.status();
      out.u = *std::move(u);
      out.vt = *std::move(vt);
    }
    out.sweeps = response.sweeps();
    out.converged = response.converged();
    out.stats = from_proto(response.stats());
    return out;
  });
}

}  // namespace

absl::StatusOr<SvdResult> Client::svd(const Operand& a, const SvdOptions& options,
                                      const CallOptions& call) {
  return run_svd(*impl_, false, a, options, call);
}

absl::StatusOr<SvdResult> Client::batched_svd(const Operand& a, const SvdOptions& options,
                                              const CallOptions& call) {
  return run_svd(*impl_, true, a, options, call);
}

absl::StatusOr<ApspResult> Client::apsp(const ApspGraph& graph, bool next_hop,
                                        const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  const ProgressCallback& progress = impl_->progress(call);
  absl::StatusOr<Route> route = route_graph(*impl_, graph);
  if (!route.ok()) return route.status();
  return impl_->run(*route, dl, [&](Replica& r, std::size_t) -> absl::StatusOr<ApspResult> {
    Stager stager(*impl_, r, dl, progress);
    pb::ApspRequest request;
    add_graph(stager, graph, &request);
    request.set_next_hop(next_hop);
    if (absl::Status s = stager.place(); !s.ok()) return s;
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::ApspResponse response;
    if (absl::Status s = from_grpc_status(r.stub->Apsp(&context, request, &response)); !s.ok()) {
      return s;
    }
    ApspResult out;
    absl::StatusOr<HostMatrix> d =
        impl_->take(r, response.mutable_distances(), dl, progress, "distances");
    if (!d.ok()) return d.status();
    out.distances = *std::move(d);
    if (next_hop) {
      absl::StatusOr<HostMatrix> n =
          impl_->take(r, response.mutable_next_hop(), dl, progress, "next_hop");
      if (!n.ok()) return n.status();
      out.next_hop = *std::move(n);
    }
    out.stats = from_proto(response.stats());
    return out;
  });
}

absl::StatusOr<StoredApsp> Client::apsp_stored(const ApspGraph& graph, int64_t ttl_seconds,
                                               const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  absl::StatusOr<Route> route = route_graph(*impl_, graph);
  if (!route.ok()) return route.status();
  return impl_->run(*route, dl, [&](Replica& r, std::size_t index) -> absl::StatusOr<StoredApsp> {
    Stager stager(*impl_, r, dl, impl_->progress(call));
    pb::ApspRequest request;
    add_graph(stager, graph, &request);
    request.set_next_hop(true);
    request.mutable_output()->set_placement(pb::OutputOptions::PLACEMENT_STORED);
    request.mutable_output()->set_ttl_seconds(ttl_seconds);
    if (absl::Status s = stager.place(); !s.ok()) return s;
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::ApspResponse response;
    if (absl::Status s = from_grpc_status(r.stub->Apsp(&context, request, &response)); !s.ok()) {
      return s;
    }
    if (!response.distances().has_stored() || !response.next_hop().has_stored()) {
      return absl::InternalError("server returned APSP results inline despite PLACEMENT_STORED");
    }
    StoredApsp out{from_proto(response.distances().stored()),
                   from_proto(response.next_hop().stored())};
    impl_->remember(out.distances.ref.id, index, out.distances.expires_at_unix_ms);
    impl_->remember(out.next_hop.ref.id, index, out.next_hop.expires_at_unix_ms);
    return out;
  });
}

namespace {

absl::StatusOr<PathResult> finish_path(Replica& r, pb::ShortestPathRequest& request,
                                       absl::Time dl) {
  grpc::ClientContext context;
  set_deadline(context, dl);
  pb::ShortestPathResponse response;
  if (absl::Status s = from_grpc_status(r.stub->ShortestPath(&context, request, &response));
      !s.ok()) {
    return s;
  }
  PathResult out;
  out.reachable = response.reachable();
  out.length = response.length();
  out.vertices.assign(response.vertices().begin(), response.vertices().end());
  out.stats = from_proto(response.stats());
  return out;
}

}  // namespace

absl::StatusOr<PathResult> Client::shortest_path(const ApspGraph& graph, int64_t source,
                                                 int64_t target, const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  absl::StatusOr<Route> route = route_graph(*impl_, graph);
  if (!route.ok()) return route.status();
  return impl_->run(*route, dl, [&](Replica& r, std::size_t) -> absl::StatusOr<PathResult> {
    Stager stager(*impl_, r, dl, impl_->progress(call));
    pb::ShortestPathRequest request;
    add_graph(stager, graph, request.mutable_graph());
    request.set_source(source);
    request.set_target(target);
    if (absl::Status s = stager.place(); !s.ok()) return s;
    return finish_path(r, request, dl);
  });
}

absl::StatusOr<PathResult> Client::shortest_path(const StoredApsp& stored, int64_t source,
                                                 int64_t target, const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  absl::StatusOr<Route> route = impl_->route_refs({&stored.distances.ref, &stored.next_hop.ref});
  if (!route.ok()) return route.status();
  return impl_->run(*route, dl, [&](Replica& r, std::size_t) -> absl::StatusOr<PathResult> {
    pb::ShortestPathRequest request;
    request.mutable_stored()->mutable_distances()->set_id(stored.distances.ref.id);
    request.mutable_stored()->mutable_next_hop()->set_id(stored.next_hop.ref.id);
    request.set_source(source);
    request.set_target(target);
    return finish_path(r, request, dl);
  });
}

absl::StatusOr<StoredMatrix> Client::upload_matrix(const HostMatrix& matrix, int64_t ttl_seconds,
                                                   const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  return impl_->run(Route{}, dl,
                    [&](Replica& r, std::size_t index) -> absl::StatusOr<StoredMatrix> {
                      absl::StatusOr<StoredMatrix> stored =
                          impl_->upload(r, matrix, ttl_seconds, dl, impl_->progress(call));
                      if (stored.ok())
                        impl_->remember(stored->ref.id, index, stored->expires_at_unix_ms);
                      return stored;
                    });
}

absl::StatusOr<HostMatrix> Client::download_matrix(const MatrixRef& ref, const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  absl::StatusOr<Route> route = impl_->route_refs({&ref});
  if (!route.ok()) return route.status();
  return impl_->run(*route, dl, [&](Replica& r, std::size_t) {
    return impl_->download(r, ref, dl, impl_->progress(call));
  });
}

absl::Status Client::delete_matrix(const MatrixRef& ref, const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  absl::StatusOr<Route> route = impl_->route_refs({&ref});
  if (!route.ok()) return route.status();
  absl::Status s =
      impl_->run(*route, dl, [&](Replica& r, std::size_t) { return impl_->remove(r, ref, dl); });
  if (s.ok() || s.code() == absl::StatusCode::kNotFound) impl_->forget(ref.id);
  return s;
}

absl::StatusOr<GraphInfo> Client::create_graph(const std::string& graph_id, uint64_t num_vertices,
                                               const std::vector<Hyperedge>& edges,
                                               const CallOptions& call) {
  std::string id = graph_id;
  if (id.empty() && impl_->replicas.size() > 1) {
    // The owner follows from the id, so the client names the graph (the server's format).
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    char buf[32];
    std::snprintf(buf, sizeof buf, "g-%016llx", static_cast<unsigned long long>(rng()));
    id = buf;
  }
  pb::CreateGraphRequest request;
  request.set_graph_id(id);
  request.set_num_vertices(num_vertices);
  request.mutable_edges()->Reserve(static_cast<int>(edges.size()));
  for (const Hyperedge& e : edges) to_proto(e, request.add_edges());
  const absl::Time dl = impl_->deadline(call);
  return impl_->run(
      Route{graph_owner(impl_->names, id)}, dl,
      [&](Replica& r, std::size_t) -> absl::StatusOr<GraphInfo> {
        grpc::ClientContext context;
        set_deadline(context, dl);
        pb::CreateGraphResponse response;
        if (absl::Status s = from_grpc_status(r.stub->CreateGraph(&context, request, &response));
            !s.ok()) {
          return s;
        }
        return from_proto(response.info());
      });
}

absl::StatusOr<GraphSnapshot> Client::get_graph(const std::string& graph_id,
                                                const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  return impl_->run(
      Route{graph_owner(impl_->names, graph_id)}, dl,
      [&](Replica& r, std::size_t) -> absl::StatusOr<GraphSnapshot> {
        pb::GetGraphRequest request;
        request.set_graph_id(graph_id);
        grpc::ClientContext context;
        set_deadline(context, dl);
        pb::GetGraphResponse response;
        if (absl::Status s = from_grpc_status(r.stub->GetGraph(&context, request, &response));
            !s.ok()) {
          return s;
        }
        GraphSnapshot out;
        out.info = from_proto(response.info());
        out.vertices.assign(response.vertices().begin(), response.vertices().end());
        out.edges.reserve(response.edges_size());
        for (const pb::Hyperedge& e : response.edges()) {
          out.edges.push_back(Hyperedge{e.id(),
                                        {e.tails().begin(), e.tails().end()},
                                        {e.heads().begin(), e.heads().end()},
                                        e.weight()});
        }
        return out;
      });
}

absl::StatusOr<std::vector<GraphInfo>> Client::list_graphs(const CallOptions& call) {
  if (!impl_->init_error.ok()) return impl_->init_error;
  const absl::Time dl = impl_->deadline(call);
  std::vector<GraphInfo> out;
  for (Replica& r : impl_->replicas) {
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::ListGraphsResponse response;
    if (absl::Status s =
            from_grpc_status(r.stub->ListGraphs(&context, pb::ListGraphsRequest(), &response));
        !s.ok()) {
      if (impl_->replicas.size() == 1) return s;
      return absl::Status(s.code(), absl::StrCat(r.name, ": ", s.message()));
    }
    for (const pb::GraphInfo& g : response.graphs()) out.push_back(from_proto(g));
  }
  std::sort(out.begin(), out.end(),
            [](const GraphInfo& a, const GraphInfo& b) { return a.graph_id < b.graph_id; });
  return out;
}

absl::Status Client::delete_graph(const std::string& graph_id, const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  return impl_->run(Route{graph_owner(impl_->names, graph_id)}, dl, [&](Replica& r, std::size_t) {
    pb::DeleteGraphRequest request;
    request.set_graph_id(graph_id);
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::DeleteGraphResponse response;
    return from_grpc_status(r.stub->DeleteGraph(&context, request, &response));
  });
}

absl::StatusOr<ApplyEditsResult> Client::apply_edits(const std::string& graph_id,
                                                     const std::vector<GraphEdit>& edits,
                                                     std::optional<uint64_t> expected_version,
                                                     const CallOptions& call) {
  pb::ApplyEditsRequest request;
  request.set_graph_id(graph_id);
  if (expected_version) request.set_expected_version(*expected_version);
  for (const GraphEdit& edit : edits) std::visit(EditToProto{request.add_edits()}, edit);
  const absl::Time dl = impl_->deadline(call);
  return impl_->run(
      Route{graph_owner(impl_->names, graph_id)}, dl,
      [&](Replica& r, std::size_t) -> absl::StatusOr<ApplyEditsResult> {
        grpc::ClientContext context;
        set_deadline(context, dl);
        pb::ApplyEditsResponse response;
        if (absl::Status s = from_grpc_status(r.stub->ApplyEdits(&context, request, &response));
            !s.ok()) {
          return s;
        }
        ApplyEditsResult out;
        out.version = response.version();
        for (const pb::EditResult& e : response.results()) {
          out.results.push_back(
              EditResult{e.vertex_id(),
                         e.edge_id(),
                         {e.deleted_edge_ids().begin(), e.deleted_edge_ids().end()}});
        }
        return out;
      });
}

namespace {

absl::StatusOr<ServerInfo> fetch_info(Replica& r, absl::Time dl) {
  grpc::ClientContext context;
  set_deadline(context, dl);
  pb::GetServerInfoResponse response;
  if (absl::Status s =
          from_grpc_status(r.stub->GetServerInfo(&context, pb::GetServerInfoRequest(), &response));
      !s.ok()) {
    return s;
  }
  ServerInfo out;
  out.version = response.version();
  out.backend = response.backend();
  out.backend_note = response.backend_note();
  for (const pb::Device& d : response.devices()) {
    out.devices.push_back(
        DeviceInfo{d.index(), d.name(), d.memory_bytes(), d.compute_capability()});
  }
  const pb::Limits& l = response.limits();
  out.limits = ServerLimits{l.max_message_bytes(),         l.max_matrix_elements(), l.queue_depth(),
                            l.stored_matrix_quota_bytes(), l.default_ttl_seconds(), l.workers()};
  return out;
}

}  // namespace

absl::StatusOr<ServerInfo> Client::server_info(const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  return impl_->run(Route{}, dl, [&](Replica& r, std::size_t) { return fetch_info(r, dl); });
}

absl::StatusOr<ServerInfo> Client::server_info_at(std::size_t replica, const CallOptions& call) {
  if (replica >= impl_->replicas.size()) {
    return absl::OutOfRangeError(absl::StrCat("replica ", replica, " of ", impl_->replicas.size()));
  }
  const absl::Time dl = impl_->deadline(call);
  return impl_->run(Route{replica}, dl, [&](Replica& r, std::size_t) { return fetch_info(r, dl); });
}

absl::StatusOr<HealthState> Client::health_at(std::size_t replica, const std::string& service,
                                              const CallOptions& call) {
  if (!impl_->init_error.ok()) return impl_->init_error;
  if (replica >= impl_->replicas.size()) {
    return absl::OutOfRangeError(absl::StrCat("replica ", replica, " of ", impl_->replicas.size()));
  }
  Replica& r = impl_->replicas[replica];
  grpc::ClientContext context;
  set_deadline(context, impl_->deadline(call));
  const std::string request_bytes = encode_health_request(service);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  const grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                         grpc::internal::RpcMethod::NORMAL_RPC);
  const grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      r.channel.get(), method, &context, request, &response);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return HealthState::kServiceUnknown;
  if (!status.ok()) return from_grpc_status(status);
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::InternalError("unreadable health response");
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  absl::StatusOr<int> state = decode_health_status(bytes);
  if (!state.ok()) return state.status();
  if (*state < 0 || *state > 3) return HealthState::kUnknown;
  return static_cast<HealthState>(*state);
}

}  // namespace gcompute::client
