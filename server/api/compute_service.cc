// SPDX-License-Identifier: Apache-2.0
// Compute operations: Transpose, MatMul, Svd, BatchedSvd, Eigh, Apsp, ShortestPath, Sssp,
// GetServerInfo.
// Each handler decodes its request, hands it to the ops layer and encodes the result.
#include "api/compute_service.hpp"

#include "api/convert.hpp"
#include "api/inline_result.hpp"

namespace gcompute::server {
namespace {

// The request is the call's own (gRPC's for typed methods, UnaryCall's for raw ones) and shared
// with nobody: decoding moves its matrix bytes out.
template <typename Request>
Request& mutable_request(const Request* r) {
  return *const_cast<Request*>(r);
}

/// decode(request) prepared for `call`'s caller, for UnaryCall::run.
template <typename Request, typename... Args>
absl::StatusOr<ops::PreparedOp> prepare(ops::Operations& ops, const UnaryCall& call,
                                        const Request* request, Args&&... args) {
  auto decoded = decode(mutable_request(request), std::forward<Args>(args)...);
  if (!decoded.ok()) return decoded.status();
  return ops.prepare(call.caller(), *std::move(decoded));
}

/// For UnaryCall::run: fills `response` from the result (convert.hpp, shared with jobs).
template <typename Response>
auto encoder(UnaryCall& call, Response* response) {
  return [&call, response](auto result) {
    encode(std::move(result), *call.job(), call.elapsed(), response);
    return absl::OkStatus();
  };
}

}  // namespace

template <typename Result, typename Request, typename Response>
grpc::ServerUnaryReactor* ComputeService::run_op_with_result(const char* method,
                                                             grpc::CallbackServerContext* ctx,
                                                             const grpc::ByteBuffer* request,
                                                             grpc::ByteBuffer* response) {
  return UnaryCall::start_raw<Request, Response>(
      svc_, method, ctx, request, response, &encode_with_result,
      [&](UnaryCall& call, const Request* typed_request, Response* typed_response) {
        call.run<Result>(prepare(svc_.ops, call, typed_request), encoder(call, typed_response));
      });
}

template <typename Result, typename Request, typename Response, typename... DecodeArgs>
grpc::ServerUnaryReactor* ComputeService::run_op(const char* method,
                                                 grpc::CallbackServerContext* ctx,
                                                 const Request* request, Response* response,
                                                 DecodeArgs... decode_args) {
  return UnaryCall::start(svc_, method, ctx, *request, response, [&](UnaryCall& call) {
    call.run<Result>(prepare(svc_.ops, call, request, std::move(decode_args)...),
                     encoder(call, response));
  });
}

grpc::ServerUnaryReactor* ComputeService::Transpose(grpc::CallbackServerContext* ctx,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  return run_op_with_result<ops::TransposeResult, v1::TransposeRequest, v1::TransposeResponse>(
      "Transpose", ctx, request, response);
}

grpc::ServerUnaryReactor* ComputeService::MatMul(grpc::CallbackServerContext* ctx,
                                                 const grpc::ByteBuffer* request,
                                                 grpc::ByteBuffer* response) {
  return run_op_with_result<ops::MatMulResult, v1::MatMulRequest, v1::MatMulResponse>(
      "MatMul", ctx, request, response);
}

grpc::ServerUnaryReactor* ComputeService::Svd(grpc::CallbackServerContext* ctx,
                                              const v1::SvdRequest* request,
                                              v1::SvdResponse* response) {
  return run_op<ops::SvdResult>("Svd", ctx, request, response, /*batched=*/false);
}

grpc::ServerUnaryReactor* ComputeService::BatchedSvd(grpc::CallbackServerContext* ctx,
                                                     const v1::SvdRequest* request,
                                                     v1::SvdResponse* response) {
  return run_op<ops::SvdResult>("BatchedSvd", ctx, request, response, /*batched=*/true);
}

grpc::ServerUnaryReactor* ComputeService::Eigh(grpc::CallbackServerContext* ctx,
                                               const v1::EighRequest* request,
                                               v1::EighResponse* response) {
  return run_op<ops::EighResult>("Eigh", ctx, request, response);
}

grpc::ServerUnaryReactor* ComputeService::Apsp(grpc::CallbackServerContext* ctx,
                                               const v1::ApspRequest* request,
                                               v1::ApspResponse* response) {
  return run_op<ops::ApspResult>("Apsp", ctx, request, response, std::string());
}

grpc::ServerUnaryReactor* ComputeService::ShortestPath(grpc::CallbackServerContext* ctx,
                                                       const v1::ShortestPathRequest* request,
                                                       v1::ShortestPathResponse* response) {
  return run_op<ops::ShortestPathResult>("ShortestPath", ctx, request, response);
}

grpc::ServerUnaryReactor* ComputeService::Sssp(grpc::CallbackServerContext* ctx,
                                               const v1::SsspRequest* request,
                                               v1::SsspResponse* response) {
  return run_op<ops::SsspResult>("Sssp", ctx, request, response);
}

grpc::ServerUnaryReactor* ComputeService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                        const v1::GetServerInfoRequest* request,
                                                        v1::GetServerInfoResponse* response) {
  return UnaryCall::start(svc_, "GetServerInfo", ctx, *request, response, [&](UnaryCall& call) {
    const ops::ServerInfo info = svc_.ops.server_info();
    response->set_version(GCOMPUTE_VERSION);
    response->set_backend(info.backend);
    response->set_backend_note(info.backend_note);
    for (const DeviceInfo& d : info.devices) {
      v1::Device* out = response->add_devices();
      out->set_index(d.index);
      out->set_name(d.name);
      out->set_memory_bytes(d.memory_bytes);
      out->set_compute_capability(d.compute_capability);
    }
    v1::Limits* limits = response->mutable_limits();
    limits->set_max_message_bytes(info.limits.max_message_bytes);
    limits->set_max_matrix_elements(info.limits.max_matrix_elements);
    limits->set_queue_depth(static_cast<std::uint32_t>(info.queue_depth));
    limits->set_stored_matrix_quota_bytes(info.stored_matrix_quota_bytes);
    limits->set_default_ttl_seconds(absl::ToInt64Seconds(info.default_ttl));
    limits->set_workers(static_cast<std::uint32_t>(info.workers));
    response->set_shared_memory(info.shared_memory);
    response->set_host_boot_id(info.host_boot_id);
    call.complete(absl::OkStatus());
  });
}

}  // namespace gcompute::server
