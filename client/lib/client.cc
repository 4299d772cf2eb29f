// SPDX-License-Identifier: Apache-2.0
#include "gcompute/client/client.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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

struct Client::Impl {
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::Compute::Stub> stub;

  explicit Impl(ClientOptions o) : options(std::move(o)) {
    if (options.chunk_bytes == 0) options.chunk_bytes = 4 * kMiB;
    // A chunk plus its framing must fit in one message on both sides.
    options.chunk_bytes =
        std::max<uint64_t>(1, std::min(options.chunk_bytes, options.max_message_bytes / 2));
    grpc::ChannelArguments args;
    const int max_bytes = static_cast<int>(std::min<uint64_t>(options.max_message_bytes, INT_MAX));
    args.SetMaxReceiveMessageSize(max_bytes);
    args.SetMaxSendMessageSize(max_bytes);
    channel = grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), args);
    stub = pb::Compute::NewStub(channel);
  }

  absl::Time deadline(const CallOptions& call) const {
    return absl::Now() + call.timeout.value_or(options.default_timeout);
  }
  const ProgressCallback& progress(const CallOptions& call) const {
    return call.progress ? call.progress : options.progress;
  }

  absl::StatusOr<StoredMatrix> upload(const HostMatrix& m, int64_t ttl_seconds, absl::Time dl,
                                      const ProgressCallback& progress) {
    if (m.data.size() != m.expected_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "matrix data has ", m.data.size(), " bytes but its shape ",
          shape_string(m.batch, m.rows, m.cols, m.dtype), " needs ", m.expected_bytes()));
    }
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::UploadMatrixResponse response;
    auto writer = stub->UploadMatrix(&context, &response);
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

  absl::StatusOr<HostMatrix> download(const MatrixRef& ref, absl::Time dl,
                                      const ProgressCallback& progress) {
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::DownloadMatrixRequest request;
    request.mutable_ref()->set_id(ref.id);
    request.set_chunk_bytes(options.chunk_bytes);
    auto reader = stub->DownloadMatrix(&context, request);
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

  absl::Status remove(const MatrixRef& ref, absl::Time dl) {
    grpc::ClientContext context;
    set_deadline(context, dl);
    pb::DeleteMatrixRequest request;
    request.mutable_ref()->set_id(ref.id);
    pb::DeleteMatrixResponse response;
    return from_grpc_status(stub->DeleteMatrix(&context, request, &response));
  }

  // Turns a MatrixResult into a host matrix, downloading (and deleting) stored results.
  absl::StatusOr<HostMatrix> take(pb::MatrixResult* result, absl::Time dl,
                                  const ProgressCallback& progress, const char* what) {
    if (result->has_inline_()) return from_proto(result->mutable_inline_());
    if (result->has_stored()) {
      const MatrixRef ref{result->stored().ref().id()};
      absl::StatusOr<HostMatrix> m = download(ref, dl, progress);
      // Best effort: the result has a TTL on the server anyway.
      (void)remove(ref, absl::Now() + kCleanupTimeout);
      return m;
    }
    return absl::InternalError(absl::StrCat("server response has no ", what));
  }
};

namespace {

// Places the operands of one request: inline, or, when the inline bytes would exceed the
// limit, uploaded (largest first) and referenced. Uploaded matrices are deleted on
// destruction.
class Stager {
 public:
  Stager(Client::Impl& impl, absl::Time deadline, const ProgressCallback& progress)
      : impl_(impl), deadline_(deadline), progress_(progress) {}
  ~Stager() {
    const absl::Time cleanup = absl::Now() + kCleanupTimeout;
    for (const MatrixRef& ref : uploaded_) (void)impl_.remove(ref, cleanup);
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
        absl::StatusOr<StoredMatrix> stored = impl_.upload(m, 0, deadline_, progress_);
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

}  // namespace

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const ClientOptions& Client::options() const {
  return impl_->options;
}

absl::StatusOr<MatrixResultWithStats> Client::transpose(const Operand& a, const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  Stager stager(*impl_, dl, impl_->progress(call));
  pb::TransposeRequest request;
  add_operand(stager, a, request.mutable_a());
  if (absl::Status s = stager.place(); !s.ok()) return s;
  grpc::ClientContext context;
  set_deadline(context, dl);
  pb::TransposeResponse response;
  if (absl::Status s = from_grpc_status(impl_->stub->Transpose(&context, request, &response));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<HostMatrix> at =
      impl_->take(response.mutable_at(), dl, impl_->progress(call), "at");
  if (!at.ok()) return at.status();
  return MatrixResultWithStats{*std::move(at), from_proto(response.stats())};
}

absl::StatusOr<MatrixResultWithStats> Client::matmul(const Operand& a, const Operand& b,
                                                     const MatMulOptions& options,
                                                     const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  Stager stager(*impl_, dl, impl_->progress(call));
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
  if (absl::Status s = from_grpc_status(impl_->stub->MatMul(&context, request, &response));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<HostMatrix> c = impl_->take(response.mutable_c(), dl, impl_->progress(call), "c");
  if (!c.ok()) return c.status();
  return MatrixResultWithStats{*std::move(c), from_proto(response.stats())};
}

namespace {

absl::StatusOr<SvdResult> run_svd(Client::Impl& impl, bool batched, const Operand& a,
                                  const SvdOptions& options, const CallOptions& call) {
  const absl::Time dl = impl.deadline(call);
  const ProgressCallback& progress = impl.progress(call);
  Stager stager(impl, dl, progress);
  pb::SvdRequest request;
  add_operand(stager, a, request.mutable_a());
  to_proto(options, &request);
  if (absl::Status s = stager.place(); !s.ok()) return s;
  grpc::ClientContext context;
  set_deadline(context, dl);
  pb::SvdResponse response;
  const grpc::Status status = batched ? impl.stub->BatchedSvd(&context, request, &response)
                                      : impl.stub->Svd(&context, request, &response);
  if (absl::Status s = from_grpc_status(status); !s.ok()) return s;
  SvdResult out;
  absl::StatusOr<HostMatrix> s = impl.take(response.mutable_s(), dl, progress, "s");
  if (!s.ok()) return s.status();
  out.s = *std::move(s);
  if (options.compute_uv) {
    absl::StatusOr<HostMatrix> u = impl.take(response.mutable_u(), dl, progress, "u");
    if (!u.ok()) return u.status();
    absl::StatusOr<HostMatrix> vt = impl.take(response.mutable_vt(), dl, progress, "vt");
    if (!vt.ok()) return vt.status();
    out.u = *std::move(u);
    out.vt = *std::move(vt);
  }
  out.sweeps = response.sweeps();
  out.converged = response.converged();
  out.stats = from_proto(response.stats());
  return out;
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
  Stager stager(*impl_, dl, progress);
  pb::ApspRequest request;
  add_graph(stager, graph, &request);
  request.set_next_hop(next_hop);
  if (absl::Status s = stager.place(); !s.ok()) return s;
  grpc::ClientContext context;
  set_deadline(context, dl);
  pb::ApspResponse response;
  if (absl::Status s = from_grpc_status(impl_->stub->Apsp(&context, request, &response)); !s.ok()) {
    return s;
  }
  ApspResult out;
  absl::StatusOr<HostMatrix> d =
      impl_->take(response.mutable_distances(), dl, progress, "distances");
  if (!d.ok()) return d.status();
  out.distances = *std::move(d);
  if (next_hop) {
    absl::StatusOr<HostMatrix> n =
        impl_->take(response.mutable_next_hop(), dl, progress, "next_hop");
    if (!n.ok()) return n.status();
    out.next_hop = *std::move(n);
  }
  out.stats = from_proto(response.stats());
  return out;
}

absl::StatusOr<StoredApsp> Client::apsp_stored(const ApspGraph& graph, int64_t ttl_seconds,
                                               const CallOptions& call) {
  const absl::Time dl = impl_->deadline(call);
  Stager stager(*impl_, dl, impl_->progress(call));
  pb::ApspRequest request;
  add_graph(stager, graph, &request);
  request.set_next_hop(true);
  request.mutable_output()->set_placement(pb::OutputOptions::PLACEMENT_STORED);
  request.mutable_output()->set_ttl_seconds(ttl_seconds);
  if (absl::Status s = stager.place(); !s.ok()) return s;
  grpc::ClientContext context;
  set_deadline(context, dl);
  pb::ApspResponse response;
  if (absl::Status s = from_grpc_status(impl_->stub->Apsp(&context, request, &response)); !s.ok()) {
    return s;
  }
  if (!response.distances().has_stored() || !response.next_hop().has_stored()) {
    return absl::InternalError("server returned APSP results inline despite PLACEMENT_STORED");
  }
  return StoredApsp{from_proto(response.distances().stored()),
                    from_proto(response.next_hop().stored())};
}

namespace {

absl::StatusOr<PathResult> finish_path(Client::Impl& impl, pb::ShortestPathRequest& request,
                                       absl::Time dl) {
  grpc::ClientContext context;
  set_deadline(context, dl);
  pb::ShortestPathResponse response;
  if (absl::Status s = from_grpc_status(impl.stub->ShortestPath(&context, request, &response));
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
  Stager stager(*impl_, dl, impl_->progress(call));
  pb::ShortestPathRequest request;
  add_graph(stager, graph, request.mutable_graph());
  request.set_source(source);
  request.set_target(target);
  if (absl::Status s = stager.place(); !s.ok()) return s;
  return finish_path(*impl_, request, dl);
}

absl::StatusOr<PathResult> Client::shortest_path(const StoredApsp& stored, int64_t source,
                                                 int64_t target, const CallOptions& call) {
  pb::ShortestPathRequest request;
  request.mutable_stored()->mutable_distances()->set_id(stored.distances.ref.id);
  request.mutable_stored()->mutable_next_hop()->set_id(stored.next_hop.ref.id);
  request.set_source(source);
  request.set_target(target);
  return finish_path(*impl_, request, impl_->deadline(call));
}

absl::StatusOr<StoredMatrix> Client::upload_matrix(const HostMatrix& matrix, int64_t ttl_seconds,
                                                   const CallOptions& call) {
  return impl_->upload(matrix, ttl_seconds, impl_->deadline(call), impl_->progress(call));
}

absl::StatusOr<HostMatrix> Client::download_matrix(const MatrixRef& ref, const CallOptions& call) {
  return impl_->download(ref, impl_->deadline(call), impl_->progress(call));
}

absl::Status Client::delete_matrix(const MatrixRef& ref, const CallOptions& call) {
  return impl_->remove(ref, impl_->deadline(call));
}

absl::StatusOr<GraphInfo> Client::create_graph(const std::string& graph_id, uint64_t num_vertices,
                                               const std::vector<Hyperedge>& edges,
                                               const CallOptions& call) {
  pb::CreateGraphRequest request;
  request.set_graph_id(graph_id);
  request.set_num_vertices(num_vertices);
  request.mutable_edges()->Reserve(static_cast<int>(edges.size()));
  for (const Hyperedge& e : edges) to_proto(e, request.add_edges());
  grpc::ClientContext context;
  set_deadline(context, impl_->deadline(call));
  pb::CreateGraphResponse response;
  if (absl::Status s = from_grpc_status(impl_->stub->CreateGraph(&context, request, &response));
      !s.ok()) {
    return s;
  }
  return from_proto(response.info());
}

absl::StatusOr<GraphSnapshot> Client::get_graph(const std::string& graph_id,
                                                const CallOptions& call) {
  pb::GetGraphRequest request;
  request.set_graph_id(graph_id);
  grpc::ClientContext context;
  set_deadline(context, impl_->deadline(call));
  pb::GetGraphResponse response;
  if (absl::Status s = from_grpc_status(impl_->stub->GetGraph(&context, request, &response));
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
}

absl::StatusOr<std::vector<GraphInfo>> Client::list_graphs(const CallOptions& call) {
  grpc::ClientContext context;
  set_deadline(context, impl_->deadline(call));
  pb::ListGraphsResponse response;
  if (absl::Status s =
          from_grpc_status(impl_->stub->ListGraphs(&context, pb::ListGraphsRequest(), &response));
      !s.ok()) {
    return s;
  }
  std::vector<GraphInfo> out;
  for (const pb::GraphInfo& g : response.graphs()) out.push_back(from_proto(g));
  return out;
}

absl::Status Client::delete_graph(const std::string& graph_id, const CallOptions& call) {
  pb::DeleteGraphRequest request;
  request.set_graph_id(graph_id);
  grpc::ClientContext context;
  set_deadline(context, impl_->deadline(call));
  pb::DeleteGraphResponse response;
  return from_grpc_status(impl_->stub->DeleteGraph(&context, request, &response));
}

absl::StatusOr<ApplyEditsResult> Client::apply_edits(const std::string& graph_id,
                                                     const std::vector<GraphEdit>& edits,
                                                     std::optional<uint64_t> expected_version,
                                                     const CallOptions& call) {
  pb::ApplyEditsRequest request;
  request.set_graph_id(graph_id);
  if (expected_version) request.set_expected_version(*expected_version);
  for (const GraphEdit& edit : edits) std::visit(EditToProto{request.add_edits()}, edit);
  grpc::ClientContext context;
  set_deadline(context, impl_->deadline(call));
  pb::ApplyEditsResponse response;
  if (absl::Status s = from_grpc_status(impl_->stub->ApplyEdits(&context, request, &response));
      !s.ok()) {
    return s;
  }
  ApplyEditsResult out;
  out.version = response.version();
  for (const pb::EditResult& r : response.results()) {
    out.results.push_back(EditResult{
        r.vertex_id(), r.edge_id(), {r.deleted_edge_ids().begin(), r.deleted_edge_ids().end()}});
  }
  return out;
}

absl::StatusOr<ServerInfo> Client::server_info(const CallOptions& call) {
  grpc::ClientContext context;
  set_deadline(context, impl_->deadline(call));
  pb::GetServerInfoResponse response;
  if (absl::Status s = from_grpc_status(
          impl_->stub->GetServerInfo(&context, pb::GetServerInfoRequest(), &response));
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

}  // namespace gcompute::client
