// SPDX-License-Identifier: Apache-2.0
// Compute operations: Transpose, MatMul, Svd, BatchedSvd, Apsp, ShortestPath, GetServerInfo.
#include "api/compute_service.hpp"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "api/apsp_input.hpp"
#include "api/convert.hpp"
#include "engine/cpu_backend.hpp"

namespace gcompute::server {
namespace {

// The request is owned by gRPC and not shared; moving its bytes out avoids copying
// matrices of up to the max message size.
template <typename Request>
Request* mutable_request(const Request* r) {
  return const_cast<Request*>(r);
}

absl::StatusOr<kernels::Precision> decode_precision(v1::Precision p) {
  switch (p) {
    case v1::PRECISION_DEFAULT:
      return kernels::Precision::kDefault;
    case v1::PRECISION_F32:
      return kernels::Precision::kF32;
    case v1::PRECISION_F64:
      return kernels::Precision::kF64;
    case v1::PRECISION_TF32:
      return kernels::Precision::kTF32;
    case v1::PRECISION_BF16:
      return kernels::Precision::kBF16;
    case v1::PRECISION_F16:
      return kernels::Precision::kF16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("precision = ", static_cast<int>(p), " is not a known Precision"));
  }
}

absl::Status check_finite(const Matrix& m, const std::string& field) {
  const std::int64_t i = first_non_finite(m);
  if (i < 0) return absl::OkStatus();
  const std::int64_t per = m.desc.rows * m.desc.cols;
  const std::int64_t b = i / per, r = (i % per) / m.desc.cols, c = i % m.desc.cols;
  return absl::FailedPreconditionError(absl::StrCat(
      field, " has a non-finite value at ", m.desc.batch > 1 ? absl::StrCat("batch ", b, ", ") : "",
      "row ", r, ", column ", c, "; this operation needs finite input"));
}

}  // namespace

grpc::ServerUnaryReactor* ComputeService::Transpose(grpc::CallbackServerContext* ctx,
                                                    const v1::TransposeRequest* request,
                                                    v1::TransposeResponse* response) {
  auto* call = new UnaryCall(svc_, "Transpose", ctx, *request, response);
  if (auto st = call->check_accepting(); !st.ok()) return call->complete(st), call;
  auto a = take_operand(mutable_request(request)->mutable_a(), "a", svc_.matrices, svc_.limits);
  if (!a.ok()) return call->complete(a.status()), call;
  call->run_on_engine(
      [this, call, request, response, a = *std::move(a)](Backend& backend, JobContext& job) {
        job.results_stay_on_server =
            results_stay_on_server(request->output(), a.desc.bytes(), svc_.limits);
        auto at = backend.transpose(a, job);
        if (!at.ok()) return at.status();
        ResultPlacer placer(request->output(), svc_.matrices, svc_.limits, backend);
        if (auto st = placer.place(*std::move(at), "at", response->mutable_at()); !st.ok())
          return st;
        encode_stats(job, call->elapsed_seconds(), response->mutable_stats());
        return absl::OkStatus();
      });
  return call;
}

grpc::ServerUnaryReactor* ComputeService::MatMul(grpc::CallbackServerContext* ctx,
                                                 const v1::MatMulRequest* request,
                                                 v1::MatMulResponse* response) {
  auto* call = new UnaryCall(svc_, "MatMul", ctx, *request, response);
  if (auto st = call->check_accepting(); !st.ok()) return call->complete(st), call;
  auto* req = mutable_request(request);
  auto a = take_operand(req->mutable_a(), "a", svc_.matrices, svc_.limits);
  if (!a.ok()) return call->complete(a.status()), call;
  auto b = take_operand(req->mutable_b(), "b", svc_.matrices, svc_.limits);
  if (!b.ok()) return call->complete(b.status()), call;
  auto precision = decode_precision(request->precision());
  if (!precision.ok()) return call->complete(precision.status()), call;

  const MatrixDesc& da = a->desc;
  const MatrixDesc& db = b->desc;
  if (da.dtype != db.dtype) {
    return call->complete(absl::InvalidArgumentError(
               absl::StrCat("A is ", describe(da), " but B is ", describe(db), ": dtypes differ"))),
           call;
  }
  kernels::MatmulShape shape;
  shape.transpose_a = request->transpose_a();
  shape.transpose_b = request->transpose_b();
  shape.m = shape.transpose_a ? da.cols : da.rows;
  shape.k = shape.transpose_a ? da.rows : da.cols;
  const std::int64_t kb = shape.transpose_b ? db.cols : db.rows;
  shape.n = shape.transpose_b ? db.rows : db.cols;
  if (shape.k != kb) {
    return call->complete(absl::InvalidArgumentError(absl::StrCat(
               "A is ", describe(da), " but B is ", describe(db), ": op(A) has ", shape.k,
               " columns, op(B) has ", kb, " rows (transpose_a=", shape.transpose_a,
               ", transpose_b=", shape.transpose_b, ")"))),
           call;
  }
  shape.a_batch = da.batch;
  shape.b_batch = db.batch;
  shape.batch = std::max(da.batch, db.batch);
  shape.dtype = da.dtype;
  shape.precision = *precision;
  shape.alpha = request->has_alpha() ? request->alpha() : 1.0;
  shape.beta = request->has_beta() ? request->beta() : 0.0;
  if (auto st = kernels::validate(shape); !st.ok()) return call->complete(st), call;
  const MatrixDesc out_desc = matmul_output(shape);
  if (out_desc.elements() > svc_.limits.max_matrix_elements) {
    return call->complete(absl::ResourceExhaustedError(
               absl::StrCat("result C would be ", describe(out_desc), ": more than ",
                            svc_.limits.max_matrix_elements, " elements (--max-matrix-elements)"))),
           call;
  }
  std::optional<Matrix> c;
  if (shape.beta != 0.0) {
    auto cm = take_operand(req->mutable_c(), "c", svc_.matrices, svc_.limits);
    if (!cm.ok()) {
      return call->complete(absl::Status(
                 cm.status().code(),
                 absl::StrCat(cm.status().message(), " (needed because beta = ", shape.beta, ")"))),
             call;
    }
    if (cm->desc.dtype != out_desc.dtype || cm->desc.rows != out_desc.rows ||
        cm->desc.cols != out_desc.cols || cm->desc.batch != out_desc.batch) {
      return call->complete(absl::InvalidArgumentError(absl::StrCat(
                 "C is ", describe(cm->desc), " but the result is ", describe(out_desc)))),
             call;
    }
    c = *std::move(cm);
  }
  call->run_on_engine([this, call, request, response, a = *std::move(a), b = *std::move(b),
                       c = std::move(c), shape](Backend& backend, JobContext& job) {
    job.results_stay_on_server =
        results_stay_on_server(request->output(), matmul_output(shape).bytes(), svc_.limits);
    auto out = backend.matmul(a, b, c ? &*c : nullptr, shape, job);
    if (!out.ok()) return out.status();
    ResultPlacer placer(request->output(), svc_.matrices, svc_.limits, backend);
    if (auto st = placer.place(*std::move(out), "c", response->mutable_c()); !st.ok()) return st;
    encode_stats(job, call->elapsed_seconds(), response->mutable_stats());
    return absl::OkStatus();
  });
  return call;
}

grpc::ServerUnaryReactor* ComputeService::Svd(grpc::CallbackServerContext* ctx,
                                              const v1::SvdRequest* request,
                                              v1::SvdResponse* response) {
  return svd_common("Svd", false, ctx, request, response);
}

grpc::ServerUnaryReactor* ComputeService::BatchedSvd(grpc::CallbackServerContext* ctx,
                                                     const v1::SvdRequest* request,
                                                     v1::SvdResponse* response) {
  return svd_common("BatchedSvd", true, ctx, request, response);
}

grpc::ServerUnaryReactor* ComputeService::svd_common(const char* method, bool batched,
                                                     grpc::CallbackServerContext* ctx,
                                                     const v1::SvdRequest* request,
                                                     v1::SvdResponse* response) {
  auto* call = new UnaryCall(svc_, method, ctx, *request, response);
  if (auto st = call->check_accepting(); !st.ok()) return call->complete(st), call;
  auto a = take_operand(mutable_request(request)->mutable_a(), "a", svc_.matrices, svc_.limits);
  if (!a.ok()) return call->complete(a.status()), call;
  if (!batched && a->desc.batch != 1) {
    return call->complete(absl::InvalidArgumentError(absl::StrCat(
               "a is a batch of ", a->desc.batch, " matrices; Svd takes one, use BatchedSvd"))),
           call;
  }
  kernels::SvdShape shape;
  shape.batch = a->desc.batch;
  shape.m = a->desc.rows;
  shape.n = a->desc.cols;
  shape.dtype = a->desc.dtype;
  shape.compute_uv = request->has_compute_uv() ? request->compute_uv() : true;
  shape.full_matrices = request->full_matrices();
  shape.tolerance = request->tolerance();
  shape.max_sweeps = request->max_sweeps();
  if (auto st = kernels::validate(shape); !st.ok()) {
    return call->complete(absl::InvalidArgumentError(
               absl::StrCat(st.message(), " (a is ", describe(a->desc), ")"))),
           call;
  }
  const SvdOutputDescs outs = svd_outputs(shape);
  for (const MatrixDesc* d : {&outs.u, &outs.vt}) {
    if (shape.compute_uv && d->elements() > svc_.limits.max_matrix_elements) {
      return call->complete(absl::ResourceExhaustedError(absl::StrCat(
                 "SVD factor would be ", describe(*d), ": more than ",
                 svc_.limits.max_matrix_elements, " elements (--max-matrix-elements)"))),
             call;
    }
  }
  call->run_on_engine([this, call, request, response, a = *std::move(a), shape](
                          Backend& backend, JobContext& job) mutable {
    if (auto st = backend.ensure_on_host(a); !st.ok()) return st;
    if (auto st = check_finite(a, "a"); !st.ok()) return st;
    const SvdOutputDescs descs = svd_outputs(shape);
    const std::uint64_t out_bytes =
        descs.s.bytes() + (shape.compute_uv ? descs.u.bytes() + descs.vt.bytes() : 0);
    job.results_stay_on_server = results_stay_on_server(request->output(), out_bytes, svc_.limits);
    auto out = backend.svd(a, shape, job);
    if (!out.ok()) return out.status();
    ResultPlacer placer(request->output(), svc_.matrices, svc_.limits, backend);
    if (auto st = placer.place(std::move(out->s), "s", response->mutable_s()); !st.ok()) return st;
    if (out->u) {
      if (auto st = placer.place(*std::move(out->u), "u", response->mutable_u()); !st.ok())
        return st;
      if (auto st = placer.place(*std::move(out->vt), "vt", response->mutable_vt()); !st.ok())
        return st;
    }
    response->set_sweeps(out->info.sweeps);
    response->set_converged(out->info.converged);
    encode_stats(job, call->elapsed_seconds(), response->mutable_stats());
    return absl::OkStatus();
  });
  return call;
}

grpc::ServerUnaryReactor* ComputeService::Apsp(grpc::CallbackServerContext* ctx,
                                               const v1::ApspRequest* request,
                                               v1::ApspResponse* response) {
  auto* call = new UnaryCall(svc_, "Apsp", ctx, *request, response);
  if (auto st = call->check_accepting(); !st.ok()) return call->complete(st), call;
  auto source = take_apsp_source(mutable_request(request), "", svc_);
  if (!source.ok()) return call->complete(source.status()), call;
  call->run_on_engine([this, call, request, response, source = *std::move(source)](
                          Backend& backend, JobContext& job) mutable {
    // n is only known after densifying, so AUTO copies results back; STORED keeps them.
    job.results_stay_on_server =
        request->output().placement() == v1::OutputOptions::PLACEMENT_STORED;
    auto result = run_apsp(std::move(source), request->next_hop(), svc_, backend, job);
    if (!result.ok()) return result.status();
    ResultPlacer placer(request->output(), svc_.matrices, svc_.limits, backend);
    if (auto st = placer.place(std::move(result->out.distances), "distances",
                               response->mutable_distances());
        !st.ok()) {
      return st;
    }
    if (result->out.next_hop) {
      if (auto st = placer.place(*std::move(result->out.next_hop), "next_hop",
                                 response->mutable_next_hop());
          !st.ok()) {
        return st;
      }
    }
    encode_stats(job, call->elapsed_seconds(), response->mutable_stats());
    return absl::OkStatus();
  });
  return call;
}

grpc::ServerUnaryReactor* ComputeService::ShortestPath(grpc::CallbackServerContext* ctx,
                                                       const v1::ShortestPathRequest* request,
                                                       v1::ShortestPathResponse* response) {
  auto* call = new UnaryCall(svc_, "ShortestPath", ctx, *request, response);
  if (auto st = call->check_accepting(); !st.ok()) return call->complete(st), call;
  const std::int64_t s = request->source(), t = request->target();
  if (request->from_case() == v1::ShortestPathRequest::kStored) {
    // Answered from matrices an earlier Apsp call stored: no recomputation.
    auto dist = svc_.matrices.get(request->stored().distances().id(), "stored.distances.id");
    if (!dist.ok()) return call->complete(dist.status()), call;
    auto next = svc_.matrices.get(request->stored().next_hop().id(), "stored.next_hop.id");
    if (!next.ok()) return call->complete(next.status()), call;
    call->run_on_engine([call, response, s, t, dist = *std::move(dist), next = *std::move(next)](
                            Backend& backend, JobContext& job) mutable {
      if (auto st = backend.ensure_on_host(dist); !st.ok()) return st;
      if (auto st = backend.ensure_on_host(next); !st.ok()) return st;
      if (auto st = trace_path(dist, next, s, t, {}, response); !st.ok()) return st;
      encode_stats(job, call->elapsed_seconds(), response->mutable_stats());
      return absl::OkStatus();
    });
    return call;
  }
  if (request->from_case() != v1::ShortestPathRequest::kGraph) {
    return call->complete(absl::InvalidArgumentError("from is missing: set graph or stored")), call;
  }
  auto source = take_apsp_source(mutable_request(request)->mutable_graph(), "graph.", svc_);
  if (!source.ok()) return call->complete(source.status()), call;
  call->run_on_engine([this, call, response, s, t, source = *std::move(source)](
                          Backend& backend, JobContext& job) mutable {
    auto result = run_apsp(std::move(source), /*next_hop=*/true, svc_, backend, job);
    if (!result.ok()) return result.status();
    if (auto st = trace_path(result->out.distances, *result->out.next_hop, s, t, result->vertex_ids,
                             response);
        !st.ok()) {
      return st;
    }
    encode_stats(job, call->elapsed_seconds(), response->mutable_stats());
    return absl::OkStatus();
  });
  return call;
}

grpc::ServerUnaryReactor* ComputeService::DeleteMatrix(grpc::CallbackServerContext* ctx,
                                                       const v1::DeleteMatrixRequest* request,
                                                       v1::DeleteMatrixResponse* response) {
  auto* call = new UnaryCall(svc_, "DeleteMatrix", ctx, *request, response);
  call->complete(svc_.matrices.remove(request->ref().id()));
  svc_.metrics.set_stored_matrix_bytes(svc_.matrices.used_bytes());
  return call;
}

grpc::ServerUnaryReactor* ComputeService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                        const v1::GetServerInfoRequest* request,
                                                        v1::GetServerInfoResponse* response) {
  auto* call = new UnaryCall(svc_, "GetServerInfo", ctx, *request, response);
  Backend& backend = svc_.engine.backend();
  response->set_version(GCOMPUTE_VERSION);
  response->set_backend(backend.name());
  response->set_backend_note(svc_.backend_note);
  for (const DeviceInfo& d : backend.devices()) {
    v1::Device* out = response->add_devices();
    out->set_index(d.index);
    out->set_name(d.name);
    out->set_memory_bytes(d.memory_bytes);
    out->set_compute_capability(d.compute_capability);
  }
  v1::Limits* limits = response->mutable_limits();
  limits->set_max_message_bytes(svc_.limits.max_message_bytes);
  limits->set_max_matrix_elements(svc_.limits.max_matrix_elements);
  limits->set_queue_depth(static_cast<std::uint32_t>(svc_.engine.queue_depth_limit()));
  limits->set_stored_matrix_quota_bytes(svc_.matrices.quota_bytes());
  limits->set_default_ttl_seconds(absl::ToInt64Seconds(svc_.matrices.default_ttl()));
  limits->set_workers(static_cast<std::uint32_t>(backend.concurrency()));
  call->complete(absl::OkStatus());
  return call;
}

}  // namespace gcompute::server
