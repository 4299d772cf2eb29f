// SPDX-License-Identifier: Apache-2.0
// Per-call plumbing shared by every handler: a unary reactor that is completed exactly once,
// records metrics, and turns client cancellation into the job's stop flag.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "api/limits.hpp"
#include "engine/backend.hpp"
#include "engine/engine.hpp"
#include "metrics/metrics.hpp"
#include "ops/apsp_cache.hpp"
#include "store/graphs/graph_store.hpp"
#include "store/matrices/matrix_store.hpp"

namespace gcompute::server {

/// What the handlers share. Owned by the Server; outlives every call.
struct ServiceContext {
  Engine& engine;
  MatrixStore& matrices;
  GraphStore& graphs;
  Metrics& metrics;
  Limits limits;
  std::atomic<bool> draining{false};
  std::string backend_note;
  ApspCache* apsp_cache = nullptr;  ///< [graph persistence] last APSP of stored graphs; null: off
};

class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(ServiceContext& svc, const char* method, grpc::CallbackServerContext* ctx,
            const google::protobuf::Message& request, google::protobuf::Message* response);

  /// Finishes the RPC with `status` (response already filled when OK). Exactly once.
  void complete(absl::Status status);

  /// Runs `work(backend, job)` on an engine worker, then completes with its status.
  template <typename Work>
  void run_on_engine(Work work) {
    absl::Status queued = svc_.engine.submit(
        method_, job_, [this, work = std::move(work)](absl::Status start) mutable {
          if (!start.ok()) return complete(std::move(start));
          complete(work(svc_.engine.backend(), *job_));
        });
    if (!queued.ok()) complete(std::move(queued));
  }

  const std::shared_ptr<JobContext>& job() const { return job_; }
  const std::string& method() const { return method_; }
  double elapsed_seconds() const;
  /// UNAVAILABLE when the server is draining.
  absl::Status check_accepting() const;

  void OnCancel() override { job_->cancelled.store(true); }
  void OnDone() override;

 private:
  ServiceContext& svc_;
  std::string method_;
  google::protobuf::Message* response_;
  std::shared_ptr<JobContext> job_;
  std::chrono::steady_clock::time_point start_;
  std::uint64_t request_bytes_;
  std::atomic<bool> completed_{false};
};

}  // namespace gcompute::server
