// SPDX-License-Identifier: Apache-2.0
// gRPC handlers of gcompute.v1.Compute: decode and validate, submit to the engine, encode.
// No CUDA here: handlers see only the Backend interface through the engine.
#pragma once

#include "api/call.hpp"
#include "gcompute/v1/service.grpc.pb.h"

namespace gcompute::server {

// Raw methods: UploadMatrix and DownloadMatrix (their chunks are coded by wire/chunk_codec), and
// Transpose and MatMul (a result returned inline leaves without protobuf's copy of its bytes:
// wire/spliced_bytes).
using ComputeServiceBase = v1::Compute::WithRawCallbackMethod_UploadMatrix<
    v1::Compute::WithRawCallbackMethod_DownloadMatrix<v1::Compute::WithRawCallbackMethod_Transpose<
        v1::Compute::WithRawCallbackMethod_MatMul<v1::Compute::CallbackService>>>>;

class ComputeService final : public ComputeServiceBase {
 public:
  explicit ComputeService(ServiceContext& svc) : svc_(svc) {}

  grpc::ServerUnaryReactor* Transpose(grpc::CallbackServerContext* ctx,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* MatMul(grpc::CallbackServerContext* ctx,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Svd(grpc::CallbackServerContext* ctx, const v1::SvdRequest* request,
                                v1::SvdResponse* response) override;
  grpc::ServerUnaryReactor* BatchedSvd(grpc::CallbackServerContext* ctx,
                                       const v1::SvdRequest* request,
                                       v1::SvdResponse* response) override;
  grpc::ServerUnaryReactor* Eigh(grpc::CallbackServerContext* ctx, const v1::EighRequest* request,
                                 v1::EighResponse* response) override;
  grpc::ServerUnaryReactor* Apsp(grpc::CallbackServerContext* ctx, const v1::ApspRequest* request,
                                 v1::ApspResponse* response) override;
  grpc::ServerUnaryReactor* ShortestPath(grpc::CallbackServerContext* ctx,
                                         const v1::ShortestPathRequest* request,
                                         v1::ShortestPathResponse* response) override;
  grpc::ServerUnaryReactor* Sssp(grpc::CallbackServerContext* ctx, const v1::SsspRequest* request,
                                 v1::SsspResponse* response) override;

  grpc::ServerReadReactor<grpc::ByteBuffer>* UploadMatrix(grpc::CallbackServerContext* ctx,
                                                          grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* DownloadMatrix(
      grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* DeleteMatrix(grpc::CallbackServerContext* ctx,
                                         const v1::DeleteMatrixRequest* request,
                                         v1::DeleteMatrixResponse* response) override;

  grpc::ServerUnaryReactor* RegisterSharedMemory(
      grpc::CallbackServerContext* ctx, const v1::RegisterSharedMemoryRequest* request,
      v1::RegisterSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* UnregisterSharedMemory(
      grpc::CallbackServerContext* ctx, const v1::UnregisterSharedMemoryRequest* request,
      v1::UnregisterSharedMemoryResponse* response) override;

  grpc::ServerUnaryReactor* CreateGraph(grpc::CallbackServerContext* ctx,
                                        const v1::CreateGraphRequest* request,
                                        v1::CreateGraphResponse* response) override;
  grpc::ServerUnaryReactor* GetGraph(grpc::CallbackServerContext* ctx,
                                     const v1::GetGraphRequest* request,
                                     v1::GetGraphResponse* response) override;
  grpc::ServerUnaryReactor* ListGraphs(grpc::CallbackServerContext* ctx,
                                       const v1::ListGraphsRequest* request,
                                       v1::ListGraphsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteGraph(grpc::CallbackServerContext* ctx,
                                        const v1::DeleteGraphRequest* request,
                                        v1::DeleteGraphResponse* response) override;
  grpc::ServerUnaryReactor* ApplyEdits(grpc::CallbackServerContext* ctx,
                                       const v1::ApplyEditsRequest* request,
                                       v1::ApplyEditsResponse* response) override;

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* ctx,
                                      const v1::SubmitJobRequest* request,
                                      v1::SubmitJobResponse* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx,
                                   const v1::GetJobRequest* request, v1::Job* response) override;
  grpc::ServerWriteReactor<v1::Job>* WatchJob(grpc::CallbackServerContext* ctx,
                                              const v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* ctx,
                                      const v1::CancelJobRequest* request,
                                      v1::CancelJobResponse* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx,
                                     const v1::ListJobsRequest* request,
                                     v1::ListJobsResponse* response) override;

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* ctx,
                                          const v1::GetServerInfoRequest* request,
                                          v1::GetServerInfoResponse* response) override;

 private:
  /// An operation's call: decode(*request, decode_args...), run it on the engine, encode the
  /// result into `response`.
  template <typename Result, typename Request, typename Response, typename... DecodeArgs>
  grpc::ServerUnaryReactor* run_op(const char* method, grpc::CallbackServerContext* ctx,
                                   const Request* request, Response* response,
                                   DecodeArgs... decode_args);
  /// run_op for a raw method whose response carries its MatrixResult as field 1: an inline
  /// result's bytes leave without a copy.
  template <typename Result, typename Request, typename Response>
  grpc::ServerUnaryReactor* run_op_with_result(const char* method, grpc::CallbackServerContext* ctx,
                                               const grpc::ByteBuffer* request,
                                               grpc::ByteBuffer* response);
  ServiceContext& svc_;
};

}  // namespace gcompute::server
