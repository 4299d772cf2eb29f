// SPDX-License-Identifier: Apache-2.0
#include "api/convert.hpp"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "api/enum_map.hpp"
#include "common/quote.hpp"
#include "gcompute/kernels/status_macros.hpp"

namespace gcompute::server {
namespace {

constexpr auto kPrecisions = enum_map<kernels::Precision, v1::Precision>(
    {{kernels::Precision::kDefault, v1::PRECISION_DEFAULT},
     {kernels::Precision::kF32, v1::PRECISION_F32},
     {kernels::Precision::kF64, v1::PRECISION_F64},
     {kernels::Precision::kTF32, v1::PRECISION_TF32},
     {kernels::Precision::kBF16, v1::PRECISION_BF16},
     {kernels::Precision::kF16, v1::PRECISION_F16}});
static_assert(kPrecisions.covers_through(kernels::Precision::kF16));

using Placement = ops::OutputOptions::Placement;
constexpr auto kPlacements = enum_map<Placement, v1::OutputOptions::Placement>(
    {{Placement::kAuto, v1::OutputOptions::PLACEMENT_AUTO},
     {Placement::kInline, v1::OutputOptions::PLACEMENT_INLINE},
     {Placement::kStored, v1::OutputOptions::PLACEMENT_STORED},
     {Placement::kSharedMemory, v1::OutputOptions::PLACEMENT_SHARED_MEMORY}});
static_assert(kPlacements.covers_through(Placement::kSharedMemory));

constexpr auto kDTypes = enum_map<DType, v1::DType>({{DType::kF32, v1::DTYPE_F32},
                                                     {DType::kF64, v1::DTYPE_F64},
                                                     {DType::kF16, v1::DTYPE_F16},
                                                     {DType::kBF16, v1::DTYPE_BF16},
                                                     {DType::kI32, v1::DTYPE_I32}});
static_assert(kDTypes.covers_through(DType::kI32));

constexpr auto kJobStates =
    enum_map<ops::JobState, v1::JobState>({{ops::JobState::kQueued, v1::JOB_STATE_QUEUED},
                                           {ops::JobState::kRunning, v1::JOB_STATE_RUNNING},
                                           {ops::JobState::kSucceeded, v1::JOB_STATE_SUCCEEDED},
                                           {ops::JobState::kFailed, v1::JOB_STATE_FAILED},
                                           {ops::JobState::kCancelled, v1::JOB_STATE_CANCELLED}});
static_assert(kJobStates.covers_through(ops::JobState::kCancelled));

constexpr auto kPriorities = enum_map<Priority, v1::JobPriority>(
    {{Priority::kNormal, v1::JOB_PRIORITY_NORMAL}, {Priority::kHigh, v1::JOB_PRIORITY_HIGH}});
static_assert(kPriorities.covers_through(Priority::kHigh));

absl::StatusOr<kernels::Precision> decode_precision(v1::Precision p) {
  if (std::optional<kernels::Precision> precision = kPrecisions.decode(p)) return *precision;
  return absl::InvalidArgumentError(
      absl::StrCat("precision = ", static_cast<int>(p), " is not a known Precision"));
}

absl::StatusOr<ops::OutputOptions> decode_output(const v1::OutputOptions& o) {
  ops::OutputOptions out;
  std::optional<Placement> placement = kPlacements.decode(o.placement());
  if (!placement) {
    return absl::InvalidArgumentError(
        absl::StrCat("output.placement = ", static_cast<int>(o.placement()),
                     " is not a known Placement (", kPlacements.wire_names(), ")"));
  }
  out.placement = *placement;
  out.ttl_seconds = o.ttl_seconds();
  const bool shared = *placement == Placement::kSharedMemory;
  if (shared != o.has_shared_memory()) {
    return absl::InvalidArgumentError(
        shared ? "output.placement = PLACEMENT_SHARED_MEMORY needs output.shared_memory (the "
                 "region and offset to write to)"
               : absl::StrCat("output.shared_memory is set but output.placement = ",
                              v1::OutputOptions::Placement_Name(o.placement()),
                              "; set PLACEMENT_SHARED_MEMORY or leave it unset"));
  }
  if (shared) {
    out.region_id = o.shared_memory().region_id();
    out.region_offset = o.shared_memory().offset();
  }
  return out;
}

absl::StatusOr<ops::MatrixInput> decode_matrix(v1::Matrix& m, const std::string& field) {
  ops::MatrixInput out;
  GC_ASSIGN_OR_RETURN(out.dtype, decode_dtype(m.dtype(), field + ".dtype"));
  out.batch = m.batch();
  out.rows = m.rows();
  out.cols = m.cols();
  out.data.swap(*m.mutable_data());
  return out;
}

absl::StatusOr<ops::OperandInput> decode_operand(v1::Operand& op, const std::string& field) {
  switch (op.source_case()) {
    case v1::Operand::kInline: {
      GC_ASSIGN_OR_RETURN(ops::MatrixInput m,
                          decode_matrix(*op.mutable_inline_(), field + ".inline"));
      return ops::OperandInput{std::move(m)};
    }
    case v1::Operand::kRef:
      return ops::OperandInput{ops::RefInput{op.ref().id(), op.ref().release()}};
    case v1::Operand::kSharedMemory: {
      const v1::SharedMemoryRef& r = op.shared_memory();
      ops::SharedMemoryInput in;
      GC_ASSIGN_OR_RETURN(in.dtype, decode_dtype(r.dtype(), field + ".shared_memory.dtype"));
      in.region_id = r.region_id();
      in.offset = r.offset();
      in.batch = r.batch();
      in.rows = r.rows();
      in.cols = r.cols();
      return ops::OperandInput{std::move(in)};
    }
    case v1::Operand::SOURCE_NOT_SET:
      break;
  }
  return ops::OperandInput{};
}

}  // namespace

absl::StatusOr<DType> decode_dtype(v1::DType dtype, const std::string& field) {
  if (std::optional<DType> d = kDTypes.decode(dtype)) return *d;
  return absl::InvalidArgumentError(absl::StrCat(
      field, " is ", v1::DType_Name(dtype).empty() ? std::to_string(dtype) : v1::DType_Name(dtype),
      "; expected ", kDTypes.wire_names()));
}

v1::DType encode_dtype(DType dtype) {
  return kDTypes.encode(dtype, v1::DTYPE_UNSPECIFIED);
}

absl::StatusOr<ops::TransposeRequest> decode(v1::TransposeRequest& request) {
  ops::TransposeRequest out;
  GC_ASSIGN_OR_RETURN(out.a, decode_operand(*request.mutable_a(), "a"));
  GC_ASSIGN_OR_RETURN(out.output, decode_output(request.output()));
  return out;
}

absl::StatusOr<ops::MatMulRequest> decode(v1::MatMulRequest& request) {
  ops::MatMulRequest out;
  GC_ASSIGN_OR_RETURN(out.a, decode_operand(*request.mutable_a(), "a"));
  GC_ASSIGN_OR_RETURN(out.b, decode_operand(*request.mutable_b(), "b"));
  GC_ASSIGN_OR_RETURN(out.c, decode_operand(*request.mutable_c(), "c"));
  GC_ASSIGN_OR_RETURN(out.precision, decode_precision(request.precision()));
  out.transpose_a = request.transpose_a();
  out.transpose_b = request.transpose_b();
  if (request.has_alpha()) out.alpha = request.alpha();
  if (request.has_beta()) out.beta = request.beta();
  GC_ASSIGN_OR_RETURN(out.output, decode_output(request.output()));
  return out;
}

absl::StatusOr<ops::SvdRequest> decode(v1::SvdRequest& request, bool batched) {
  ops::SvdRequest out;
  GC_ASSIGN_OR_RETURN(out.a, decode_operand(*request.mutable_a(), "a"));
  out.batched = batched;
  out.compute_uv = request.has_compute_uv() ? request.compute_uv() : true;
  out.full_matrices = request.full_matrices();
  switch (request.method()) {
    case v1::SVD_METHOD_AUTO:
      out.method = kernels::SvdMethod::kAuto;
      break;
    case v1::SVD_METHOD_JACOBI:
      out.method = kernels::SvdMethod::kJacobi;
      break;
    case v1::SVD_METHOD_POLAR:
      out.method = kernels::SvdMethod::kPolar;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("method = ", static_cast<int>(request.method()),
                       " is not a known SvdMethod (SVD_METHOD_AUTO, SVD_METHOD_JACOBI or "
                       "SVD_METHOD_POLAR)"));
  }
  out.tolerance = request.tolerance();
  out.max_sweeps = request.max_sweeps();
  GC_ASSIGN_OR_RETURN(out.output, decode_output(request.output()));
  return out;
}

absl::StatusOr<ops::EighRequest> decode(v1::EighRequest& request) {
  ops::EighRequest out;
  GC_ASSIGN_OR_RETURN(out.a, decode_operand(*request.mutable_a(), "a"));
  out.compute_vectors = request.has_compute_vectors() ? request.compute_vectors() : true;
  out.symmetry_tolerance = request.symmetry_tolerance();
  GC_ASSIGN_OR_RETURN(out.output, decode_output(request.output()));
  return out;
}

namespace {

/// An edge list; `field` names it in messages ("edges"). Unspecified dtype means f32.
absl::StatusOr<ops::EdgeListInput> decode_edges(const v1::EdgeList& e, const std::string& field) {
  ops::EdgeListInput edges;
  edges.num_vertices = e.num_vertices();
  const v1::DType dt = e.dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_F32 : e.dtype();
  GC_ASSIGN_OR_RETURN(edges.dtype, decode_dtype(dt, field + ".dtype"));
  edges.src.assign(e.src().begin(), e.src().end());
  edges.dst.assign(e.dst().begin(), e.dst().end());
  edges.weight.assign(e.weight().begin(), e.weight().end());
  return edges;
}

}  // namespace

absl::StatusOr<ops::ApspRequest> decode(v1::ApspRequest& request, const std::string& prefix) {
  ops::ApspRequest out;
  out.field_prefix = prefix;
  switch (request.graph_case()) {
    case v1::ApspRequest::kDense: {
      GC_ASSIGN_OR_RETURN(ops::MatrixInput m,
                          decode_matrix(*request.mutable_dense(), prefix + "dense"));
      out.graph = std::move(m);
      break;
    }
    case v1::ApspRequest::kDenseRef:
      out.graph = ops::RefInput{request.dense_ref().id(), request.dense_ref().release()};
      break;
    case v1::ApspRequest::kEdges: {
      GC_ASSIGN_OR_RETURN(out.graph, decode_edges(request.edges(), prefix + "edges"));
      break;
    }
    case v1::ApspRequest::kGraphId:
      out.graph = ops::GraphIdInput{request.graph_id()};
      break;
    case v1::ApspRequest::GRAPH_NOT_SET:
      break;
  }
  out.next_hop = request.next_hop();
  GC_ASSIGN_OR_RETURN(out.output, decode_output(request.output()));
  return out;
}

absl::StatusOr<ops::ShortestPathRequest> decode(v1::ShortestPathRequest& request) {
  ops::ShortestPathRequest out;
  out.source = request.source();
  out.target = request.target();
  switch (request.from_case()) {
    case v1::ShortestPathRequest::kStored:
      out.from =
          ops::StoredApspInput{request.stored().distances().id(), request.stored().next_hop().id()};
      break;
    case v1::ShortestPathRequest::kGraph: {
      GC_ASSIGN_OR_RETURN(ops::ApspRequest graph, decode(*request.mutable_graph(), "graph."));
      out.from = std::move(graph);
      break;
    }
    case v1::ShortestPathRequest::FROM_NOT_SET:
      break;
  }
  return out;
}

absl::StatusOr<ops::SsspRequest> decode(v1::SsspRequest& request) {
  ops::SsspRequest out;
  out.source = request.source();
  switch (request.graph_case()) {
    case v1::SsspRequest::kEdges: {
      GC_ASSIGN_OR_RETURN(out.graph, decode_edges(request.edges(), "edges"));
      break;
    }
    case v1::SsspRequest::kGraphId:
      out.graph = ops::GraphIdInput{request.graph_id()};
      break;
    case v1::SsspRequest::GRAPH_NOT_SET:
      break;
  }
  GC_ASSIGN_OR_RETURN(out.output, decode_output(request.output()));
  return out;
}

absl::StatusOr<ops::UploadHeader> decode(const v1::UploadMatrixRequest::Header& header) {
  ops::UploadHeader out;
  GC_ASSIGN_OR_RETURN(out.dtype, decode_dtype(header.shape().dtype(), "header.shape.dtype"));
  out.batch = header.shape().batch();
  out.rows = header.shape().rows();
  out.cols = header.shape().cols();
  out.ttl_seconds = header.ttl_seconds();
  return out;
}

absl::StatusOr<std::vector<Edit>> decode_edits(const v1::ApplyEditsRequest& request) {
  std::vector<Edit> edits;
  edits.reserve(request.edits_size());
  for (int i = 0; i < request.edits_size(); ++i) {
    const v1::Edit& e = request.edits(i);
    switch (e.op_case()) {
      case v1::Edit::kAddVertex:
        edits.push_back(AddVertex{});
        break;
      case v1::Edit::kDeleteVertex:
        edits.push_back(DeleteVertex{e.delete_vertex().vertex_id()});
        break;
      case v1::Edit::kAddEdge: {
        const auto& a = e.add_edge();
        edits.push_back(AddEdge{{a.tails().begin(), a.tails().end()},
                                {a.heads().begin(), a.heads().end()},
                                a.weight()});
        break;
      }
      case v1::Edit::kDeleteEdge:
        edits.push_back(DeleteEdge{e.delete_edge().edge_id()});
        break;
      case v1::Edit::kSetWeight:
        edits.push_back(SetWeight{e.set_weight().edge_id(), e.set_weight().weight()});
        break;
      case v1::Edit::kDecomposeVertex: {
        const auto& d = e.decompose_vertex();
        edits.push_back(DecomposeVertex{d.vertex_id(),
                                        {d.move_edge_ids().begin(), d.move_edge_ids().end()},
                                        d.joining_weight()});
        break;
      }
      case v1::Edit::OP_NOT_SET:
        return absl::InvalidArgumentError(absl::StrCat("edits[", i, "] has no operation set"));
    }
  }
  return edits;
}

namespace {

/// A job's operation, decoded as its unary call's request.
absl::StatusOr<ops::OpRequest> decode_op(v1::SubmitJobRequest& request) {
  switch (request.op_case()) {
    case v1::SubmitJobRequest::kTranspose:
      return decode(*request.mutable_transpose());
    case v1::SubmitJobRequest::kMatmul:
      return decode(*request.mutable_matmul());
    case v1::SubmitJobRequest::kSvd:
      return decode(*request.mutable_svd(), false);
    case v1::SubmitJobRequest::kBatchedSvd:
      return decode(*request.mutable_batched_svd(), true);
    case v1::SubmitJobRequest::kApsp:
      return decode(*request.mutable_apsp(), std::string());
    case v1::SubmitJobRequest::kShortestPath:
      return decode(*request.mutable_shortest_path());
    case v1::SubmitJobRequest::kEigh:
      return decode(*request.mutable_eigh());
    case v1::SubmitJobRequest::kSssp:
      return decode(*request.mutable_sssp());
    case v1::SubmitJobRequest::OP_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "op is not set: give one of transpose, matmul, svd, batched_svd, eigh, apsp, "
      "shortest_path, sssp");
}

}  // namespace

absl::StatusOr<JobSubmission> decode(v1::SubmitJobRequest& request) {
  JobSubmission out;
  std::optional<Priority> priority = kPriorities.decode(request.priority());
  if (!priority) {
    return absl::InvalidArgumentError(
        absl::StrCat("priority = ", static_cast<int>(request.priority()),
                     " is not a known JobPriority (", kPriorities.wire_names(), ")"));
  }
  out.options.priority = *priority;
  out.options.client_job_key = request.client_job_key();
  out.options.ttl_seconds = request.ttl_seconds();
  GC_ASSIGN_OR_RETURN(out.op, decode_op(request));
  return out;
}

std::vector<Hyperedge> decode_edges(const v1::CreateGraphRequest& request) {
  std::vector<Hyperedge> edges;
  edges.reserve(request.edges_size());
  for (const auto& e : request.edges()) {
    edges.push_back(Hyperedge{
        0, {e.tails().begin(), e.tails().end()}, {e.heads().begin(), e.heads().end()}, e.weight()});
  }
  return edges;
}

absl::StatusOr<std::uint64_t> decode_page_token(const std::string& token,
                                                const GraphSnapshot& graph) {
  if (token.empty()) return 0;
  const std::vector<std::string> parts = absl::StrSplit(token, '.');
  std::uint64_t version = 0, index = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &version) ||
      !absl::SimpleAtoi(parts[1], &index) || index >= graph.vertices.size() + graph.edges.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_token ", quote_id(token), " is not a next_page_token of this graph's pages"));
  }
  if (version != graph.info.version) {
    return absl::AbortedError(absl::StrCat(
        "graph ", quote_id(graph.info.graph_id), " changed since the first page (version ", version,
        ", now ", graph.info.version, "); read it again from the first page"));
  }
  return index;
}

void encode(ops::ResultMatrix result, v1::MatrixResult* out) {
  if (auto* stored = std::get_if<StoredMatrixInfo>(&result)) {
    return encode_stored(*stored, out->mutable_stored());
  }
  if (auto* shared = std::get_if<ops::SharedMemoryResult>(&result)) {
    v1::SharedMemoryRef* r = out->mutable_shared_memory();
    r->set_region_id(shared->region_id);
    r->set_offset(shared->offset);
    r->set_rows(shared->desc.rows);
    r->set_cols(shared->desc.cols);
    r->set_dtype(encode_dtype(shared->desc.dtype));
    r->set_batch(shared->desc.batch);
    return;
  }
  Matrix& m = std::get<Matrix>(result);
  v1::Matrix* mat = out->mutable_inline_();
  mat->set_rows(m.desc.rows);
  mat->set_cols(m.desc.cols);
  mat->set_dtype(encode_dtype(m.desc.dtype));
  mat->set_batch(m.desc.batch);
  if (m.data.use_count() == 1) {
    mat->mutable_data()->swap(*m.data);
  } else {
    *mat->mutable_data() = *m.data;
  }
}

void encode_stored(const StoredMatrixInfo& info, v1::StoredMatrix* out) {
  out->mutable_ref()->set_id(info.id);
  v1::MatrixShape* shape = out->mutable_shape();
  shape->set_rows(info.desc.rows);
  shape->set_cols(info.desc.cols);
  shape->set_dtype(encode_dtype(info.desc.dtype));
  shape->set_batch(info.desc.batch);
  out->set_expires_at_unix_ms(absl::ToUnixMillis(info.expires_at));
  out->set_size_bytes(info.desc.bytes());
}

void encode_stats(const JobContext& job, double total_seconds, v1::ExecutionStats* out) {
  out->set_queue_seconds(job.times.queue_seconds);
  out->set_h2d_seconds(job.times.h2d_seconds);
  out->set_compute_seconds(job.times.compute_seconds);
  out->set_d2h_seconds(job.times.d2h_seconds);
  out->set_total_seconds(total_seconds);
  out->set_device(job.device);
}

void encode(ops::TransposeResult r, const JobContext& job, double seconds,
            v1::TransposeResponse* out) {
  encode(std::move(r.at), out->mutable_at());
  encode_stats(job, seconds, out->mutable_stats());
}

void encode(ops::MatMulResult r, const JobContext& job, double seconds, v1::MatMulResponse* out) {
  encode(std::move(r.c), out->mutable_c());
  encode_stats(job, seconds, out->mutable_stats());
}

void encode(ops::SvdResult r, const JobContext& job, double seconds, v1::SvdResponse* out) {
  encode(std::move(r.s), out->mutable_s());
  if (r.u) encode(*std::move(r.u), out->mutable_u());
  if (r.vt) encode(*std::move(r.vt), out->mutable_vt());
  out->set_sweeps(r.sweeps);
  out->set_converged(r.converged);
  encode_stats(job, seconds, out->mutable_stats());
}

void encode(ops::EighResult r, const JobContext& job, double seconds, v1::EighResponse* out) {
  encode(std::move(r.w), out->mutable_w());
  if (r.v) encode(*std::move(r.v), out->mutable_v());
  out->set_converged(r.converged);
  encode_stats(job, seconds, out->mutable_stats());
}

void encode(ops::ApspResult r, const JobContext& job, double seconds, v1::ApspResponse* out) {
  encode(std::move(r.distances), out->mutable_distances());
  if (r.next_hop) encode(*std::move(r.next_hop), out->mutable_next_hop());
  encode_stats(job, seconds, out->mutable_stats());
}

void encode(ops::ShortestPathResult r, const JobContext& job, double seconds,
            v1::ShortestPathResponse* out) {
  out->set_reachable(r.reachable);
  if (r.reachable) out->set_length(r.length);
  out->mutable_vertices()->Assign(r.vertices.begin(), r.vertices.end());
  encode_stats(job, seconds, out->mutable_stats());
}

void encode(ops::SsspResult r, const JobContext& job, double seconds, v1::SsspResponse* out) {
  encode(std::move(r.distances), out->mutable_distances());
  encode(std::move(r.parents), out->mutable_parents());
  out->mutable_vertex_ids()->Assign(r.vertex_ids.begin(), r.vertex_ids.end());
  out->set_reachable(r.reachable);
  encode_stats(job, seconds, out->mutable_stats());
}

v1::JobState encode_job_state(ops::JobState s) {
  return kJobStates.encode(s, v1::JOB_STATE_UNSPECIFIED);
}

std::optional<ops::JobState> decode_job_state(v1::JobState s) {
  return kJobStates.decode(s);
}

namespace {

std::int64_t unix_ms_or_zero(absl::Time t) {
  return t == absl::InfinitePast() || t == absl::InfiniteFuture() ? 0 : absl::ToUnixMillis(t);
}

}  // namespace

void encode(const ops::JobView& job, v1::Job* out) {
  out->set_job_id(job.id);
  out->set_method(job.method);
  out->set_state(encode_job_state(job.state));
  out->set_priority(job.priority == Priority::kHigh ? v1::JOB_PRIORITY_HIGH
                                                    : v1::JOB_PRIORITY_NORMAL);
  out->set_client_job_key(job.client_job_key);
  v1::JobProgress* p = out->mutable_progress();
  p->set_fraction(job.progress.fraction);
  p->set_phase(job.progress.phase);
  p->set_detail(job.progress.detail);
  out->set_created_unix_ms(absl::ToUnixMillis(job.created));
  out->set_started_unix_ms(unix_ms_or_zero(job.started));
  out->set_finished_unix_ms(unix_ms_or_zero(job.finished));
  out->set_expires_unix_ms(unix_ms_or_zero(job.expires));
  if (!job.status.ok()) {
    out->set_error_code(static_cast<int>(job.status.code()));  // absl and gRPC codes agree
    out->set_error_message(std::string(job.status.message()));
  }
  if (job.result == nullptr && job.restored_result != nullptr) {
    // Kept across a restart as the journal encoded it (api/job_journal.hpp).
    out->mutable_result()->ParseFromString(*job.restored_result);
    return;
  }
  if (job.result == nullptr || job.context == nullptr) return;
  // The job keeps its result for later reads: encode a copy (inline bytes are copied).
  v1::JobResult* r = out->mutable_result();
  std::visit(
      [&](const auto& result) {
        using T = std::decay_t<decltype(result)>;
        if constexpr (std::is_same_v<T, ops::TransposeResult>) {
          encode(result, *job.context, job.seconds, r->mutable_transpose());
        } else if constexpr (std::is_same_v<T, ops::MatMulResult>) {
          encode(result, *job.context, job.seconds, r->mutable_matmul());
        } else if constexpr (std::is_same_v<T, ops::SvdResult>) {
          encode(result, *job.context, job.seconds, r->mutable_svd());
        } else if constexpr (std::is_same_v<T, ops::EighResult>) {
          encode(result, *job.context, job.seconds, r->mutable_eigh());
        } else if constexpr (std::is_same_v<T, ops::ApspResult>) {
          encode(result, *job.context, job.seconds, r->mutable_apsp());
        } else if constexpr (std::is_same_v<T, ops::ShortestPathResult>) {
          encode(result, *job.context, job.seconds, r->mutable_shortest_path());
        } else {
          static_assert(std::is_same_v<T, ops::SsspResult>);
          encode(result, *job.context, job.seconds, r->mutable_sssp());
        }
      },
      *job.result);
}

void encode(const GraphInfo& info, v1::GraphInfo* out) {
  out->set_graph_id(info.graph_id);
  out->set_version(info.version);
  out->set_num_vertices(info.num_vertices);
  out->set_num_edges(info.num_edges);
}

std::uint64_t encode_page(const GraphSnapshot& graph, std::uint64_t first, std::uint64_t page_size,
                          std::uint64_t max_bytes, v1::GetGraphResponse* out) {
  encode(graph.info, out->mutable_info());
  const std::uint64_t nv = graph.vertices.size();
  const std::uint64_t total = nv + graph.edges.size();
  const std::uint64_t count_limit = page_size == 0 ? total : page_size;
  // Upper bounds of the encoded sizes: a varint is at most 10 bytes.
  constexpr std::uint64_t kVarint = 10;
  std::uint64_t bytes = 0, i = first;
  for (; i < total && i - first < count_limit; ++i) {
    const std::uint64_t size =
        i < nv
            ? kVarint
            : 4 * kVarint + 9 +
                  kVarint * (graph.edges[i - nv].tails.size() + graph.edges[i - nv].heads.size());
    if (i > first && bytes + size > max_bytes) break;
    bytes += size;
    if (i < nv) {
      out->add_vertices(graph.vertices[i]);
      continue;
    }
    const Hyperedge& e = graph.edges[i - nv];
    v1::Hyperedge* edge = out->add_edges();
    edge->set_id(e.id);
    edge->mutable_tails()->Assign(e.tails.begin(), e.tails.end());
    edge->mutable_heads()->Assign(e.heads.begin(), e.heads.end());
    edge->set_weight(e.weight);
  }
  return i;
}

void encode(const ApplyResult& result, v1::ApplyEditsResponse* out) {
  out->set_version(result.version);
  for (const EditResult& r : result.results) {
    v1::EditResult* e = out->add_results();
    e->set_vertex_id(r.vertex_id);
    e->set_edge_id(r.edge_id);
    e->mutable_deleted_edge_ids()->Assign(r.deleted_edge_ids.begin(), r.deleted_edge_ids.end());
  }
}

}  // namespace gcompute::server
