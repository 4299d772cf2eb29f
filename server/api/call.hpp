// SPDX-License-Identifier: Apache-2.0
// Per-call plumbing shared by every RPC: one reactor base that counts the call in flight,
// refuses new calls while the server drains, finishes exactly once and records the call's
// metrics; and the unary reactor that runs an operation through the ops layer.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "api/caller.hpp"
#include "api/chunk_buffers.hpp"
#include "api/idle_watch.hpp"
#include "api/status.hpp"
#include "api/unparsable_requests.hpp"
#include "engine/executor.hpp"
#include "metrics/metrics.hpp"
#include "ops/jobs.hpp"
#include "ops/operations.hpp"

namespace gcompute::server {

/// What the handlers share. Owned by the Server; outlives every call.
struct ServiceContext {
  ops::Operations& ops;
  ops::JobManager& jobs;
  Metrics& metrics;
  /// Runs store work (graph changes and reads) off gRPC's callback threads.
  Executor& store_executor;
  Limits limits;
  std::atomic<bool> draining{false};
  /// Aborts uploads idle for limits.upload_idle_time.
  IdleWatch* upload_watch = nullptr;
  /// Host buffers of the chunks downloads of device-resident matrices send.
  std::shared_ptr<ChunkBufferPool> chunk_buffers = std::make_shared<ChunkBufferPool>();
};

/// The base of every reactor (unary, client-streaming, server-streaming).
template <typename GrpcReactor>
class CallReactor : public GrpcReactor {
 public:
  void OnDone() override {
    svc_.metrics.add_inflight(-1);
    delete this;
  }

 protected:
  CallReactor(ServiceContext& svc, const char* method, const grpc::ServerContextBase& ctx)
      : svc_(svc),
        method_(method),
        caller_(caller_of(ctx)),
        start_(std::chrono::steady_clock::now()) {
    svc_.metrics.add_inflight(1);
  }
  /// For a call whose request comes with it (unary, server-streaming): counts its bytes.
  CallReactor(ServiceContext& svc, const char* method, const grpc::ServerContextBase& ctx,
              const google::protobuf::Message& request)
      : CallReactor(svc, method, ctx) {
    received_bytes_ = request.ByteSizeLong();
  }

  /// False (after finishing the call UNAVAILABLE) when the server is draining.
  bool accept() {
    if (!svc_.draining.load()) return true;
    finish_call(absl::UnavailableError("server is draining; retry on another replica"));
    return false;
  }

  /// Finishes the RPC with `status` once; later calls are ignored. Records the call.
  void finish_call(absl::Status status) {
    if (finished_.exchange(true)) return;
    on_finish(status);
    svc_.metrics.observe_request(method_, code_name(status.code()), elapsed_seconds(),
                                 received_bytes_, sent_bytes_);
    svc_.metrics.tenants().observe_request(caller_.tenant, status.ok());
    this->Finish(to_grpc(status));
  }
  /// Runs inside finish_call, before the metrics (e.g. to count the response's bytes).
  virtual void on_finish(absl::Status& status) { (void)status; }

  bool finished() const { return finished_.load(); }
  double elapsed_seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  ServiceContext& svc_;
  const std::string method_;
  const ops::Caller caller_;
  std::uint64_t received_bytes_ = 0;
  std::uint64_t sent_bytes_ = 0;

 private:
  const std::chrono::steady_clock::time_point start_;
  std::atomic<bool> finished_{false};
};

class UnaryCall final : public CallReactor<grpc::ServerUnaryReactor> {
 public:
  /// Starts a unary call: `body(call)` runs unless the server is draining, and must lead to
  /// exactly one complete().
  template <typename Body>
  static grpc::ServerUnaryReactor* start(ServiceContext& svc, const char* method,
                                         grpc::CallbackServerContext* ctx,
                                         const google::protobuf::Message& request,
                                         google::protobuf::Message* response, Body body) {
    auto* call = new UnaryCall(svc, method, ctx, request, response);
    if (call->accept()) body(*call);
    return call;
  }

  /// How a raw method's response is coded.
  using RawEncoder = grpc::ByteBuffer (*)(google::protobuf::Message& response);

  /// Starts a call of a raw method (gRPC hands over the request's bytes and sends the
  /// response's as given): the request is parsed here (parse_raw_message), `body(call, request,
  /// response)` runs as in start(), and an OK call's response goes out as `encode(response)`.
  template <typename Request, typename Response, typename Body>
  static grpc::ServerUnaryReactor* start_raw(ServiceContext& svc, const char* method,
                                             grpc::CallbackServerContext* ctx,
                                             const grpc::ByteBuffer* raw_request,
                                             grpc::ByteBuffer* raw_response, RawEncoder encode,
                                             Body body) {
    auto messages = std::make_shared<std::pair<Request, Response>>();
    auto* call = new UnaryCall(svc, method, ctx, messages->first, &messages->second);
    call->received_bytes_ = raw_request->Length();
    call->raw_messages_ = messages;
    call->raw_response_ = raw_response;
    call->encode_raw_ = encode;
    // As gRPC does for a typed method: parsed first (an unparsable request is INVALID_ARGUMENT
    // even while draining), and the received bytes let go of at once, so that an inline
    // operand is not held twice while the call waits and runs. gRPC's holder of the bytes is
    // not const; it only destroys them after the call.
    auto& received = *const_cast<grpc::ByteBuffer*>(raw_request);
    absl::Status parsed = parse_raw_message(svc.metrics, call->method_, received, messages->first);
    received.Clear();
    if (!parsed.ok()) {
      call->complete(std::move(parsed));
      return call;
    }
    if (!call->accept()) return call;
    body(*call, &messages->first, &messages->second);
    return call;
  }

  /// Finishes the RPC with `status` (response already filled when OK). Exactly once.
  void complete(absl::Status status) { finish_call(std::move(status)); }

  /// Runs a prepared operation on the engine and completes with encode(result) (which fills
  /// the response and returns a status).
  template <typename Result, typename Encode>
  void run(absl::StatusOr<ops::PreparedOp> op, Encode encode) {
    if (!op.ok()) return complete(op.status());
    svc_.ops.submit(caller_, *std::move(op), job_,
                    [this, encode = std::move(encode)](absl::StatusOr<ops::OpResult> r) mutable {
                      if (!r.ok()) return complete(r.status());
                      complete(encode(std::get<Result>(*std::move(r))));
                    });
  }

  /// Runs `work()` (which fills the response and returns a status) on the store executor and
  /// completes with its status; RESOURCE_EXHAUSTED when that queue is full.
  template <typename Work>
  void run_on_store(Work work) {
    absl::Status queued =
        svc_.store_executor.post([this, work = std::move(work)]() mutable { complete(work()); });
    if (!queued.ok()) complete(std::move(queued));
  }

  const std::shared_ptr<JobContext>& job() const { return job_; }
  const ops::Caller& caller() const { return caller_; }
  double elapsed() const { return elapsed_seconds(); }

  void OnCancel() override { job_->cancelled.store(true); }

 private:
  UnaryCall(ServiceContext& svc, const char* method, grpc::CallbackServerContext* ctx,
            const google::protobuf::Message& request, google::protobuf::Message* response);
  void on_finish(absl::Status& status) override;

  google::protobuf::Message* response_;
  /// A raw method's: its request and response (which it owns), where the response's bytes go,
  /// and how they are made from *response_.
  std::shared_ptr<void> raw_messages_;
  grpc::ByteBuffer* raw_response_ = nullptr;
  RawEncoder encode_raw_ = nullptr;
  std::shared_ptr<JobContext> job_;
  bool server_deadline_ = false;  ///< job_->deadline is --max-request-seconds, not the client's
};

}  // namespace gcompute::server
