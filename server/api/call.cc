// SPDX-License-Identifier: Apache-2.0
#include "api/call.hpp"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "api/status.hpp"

namespace gcompute::server {

UnaryCall::UnaryCall(ServiceContext& svc, const char* method, grpc::CallbackServerContext* ctx,
                     const google::protobuf::Message& request, google::protobuf::Message* response)
    : svc_(svc),
      method_(method),
      response_(response),
      job_(std::make_shared<JobContext>()),
      start_(std::chrono::steady_clock::now()),
      request_bytes_(request.ByteSizeLong()) {
  job_->deadline = absl::FromChrono(ctx->deadline());
  svc_.metrics.add_inflight(1);
}

double UnaryCall::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

absl::Status UnaryCall::check_accepting() const {
  if (svc_.draining.load()) {
    return absl::UnavailableError("server is draining; retry on another replica");
  }
  return absl::OkStatus();
}

void UnaryCall::complete(absl::Status status) {
  if (completed_.exchange(true)) return;
  // A job stopped by the cancel flag after its deadline passed reports the deadline.
  if (absl::IsCancelled(status) && job_->deadline <= absl::Now()) {
    status = absl::DeadlineExceededError(
        absl::StrCat(method_, ": deadline exceeded (", status.message(), ")"));
  }
  const double seconds = elapsed_seconds();
  const std::uint64_t sent = status.ok() ? response_->ByteSizeLong() : 0;
  svc_.metrics.observe_request(method_, code_name(status.code()), seconds, request_bytes_, sent);
  const PhaseTimes& t = job_->times;
  if (t.queue_seconds > 0) svc_.metrics.observe_phase(method_, "queue", t.queue_seconds);
  if (t.h2d_seconds > 0) svc_.metrics.observe_phase(method_, "h2d", t.h2d_seconds);
  if (t.compute_seconds > 0) svc_.metrics.observe_phase(method_, "compute", t.compute_seconds);
  if (t.d2h_seconds > 0) svc_.metrics.observe_phase(method_, "d2h", t.d2h_seconds);
  Finish(to_grpc(status));
}

void UnaryCall::OnDone() {
  svc_.metrics.add_inflight(-1);
  delete this;
}

}  // namespace gcompute::server
