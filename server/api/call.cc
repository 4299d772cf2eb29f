// SPDX-License-Identifier: Apache-2.0
#include "api/call.hpp"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gcompute::server {

UnaryCall::UnaryCall(ServiceContext& svc, const char* method, grpc::CallbackServerContext* ctx,
                     const google::protobuf::Message& request, google::protobuf::Message* response)
    : CallReactor(svc, method, *ctx, request),
      response_(response),
      job_(std::make_shared<JobContext>()) {
  job_->deadline = absl::FromChrono(ctx->deadline());
  job_->tenant = caller_.tenant;
  // A call without a deadline (gRPC reports the far future) gets the server's bound.
  const absl::Duration bound = svc.limits.max_request_time;
  if (bound > absl::ZeroDuration() && job_->deadline - absl::Now() > absl::Hours(24 * 365)) {
    job_->deadline = absl::Now() + bound;
    server_deadline_ = true;
  }
}

void UnaryCall::on_finish(absl::Status& status) {
  if (!status.ok() && job_->shutdown.load()) {
    status = absl::UnavailableError(
        absl::StrCat(method_,
                     ": stopped because the server shut down before it finished "
                     "(--drain-seconds); retry on another replica"));
  } else if ((absl::IsCancelled(status) || absl::IsDeadlineExceeded(status)) &&
             job_->deadline <= absl::Now()) {
    // A job stopped by the cancel flag after its deadline passed reports the deadline.
    status = absl::DeadlineExceededError(
        server_deadline_
            ? absl::StrCat(method_, ": ran longer than ",
                           absl::ToInt64Seconds(svc_.limits.max_request_time),
                           " s, the bound of calls without a deadline (--max-request-seconds; ",
                           status.message(), ")")
            : absl::StrCat(method_, ": deadline exceeded (", status.message(), ")"));
  }
  if (status.ok() && raw_response_ != nullptr) {
    *raw_response_ = encode_raw_(*response_);
    sent_bytes_ = raw_response_->Length();
  } else if (status.ok()) {
    sent_bytes_ = response_->ByteSizeLong();
  }
  const PhaseTimes& t = job_->times;
  if (t.queue_seconds > 0) svc_.metrics.observe_phase(method_, "queue", t.queue_seconds);
  if (t.h2d_seconds > 0) svc_.metrics.observe_phase(method_, "h2d", t.h2d_seconds);
  if (t.compute_seconds > 0) svc_.metrics.observe_phase(method_, "compute", t.compute_seconds);
  if (t.d2h_seconds > 0) svc_.metrics.observe_phase(method_, "d2h", t.d2h_seconds);
  svc_.metrics.tenants().add_device_seconds(caller_.tenant,
                                            t.h2d_seconds + t.compute_seconds + t.d2h_seconds);
}

}  // namespace gcompute::server
