// SPDX-License-Identifier: Apache-2.0
#include "api/call.hpp"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gcompute::server {

UnaryCall::UnaryCall(ServiceContext& svc, const char* method, grpc::CallbackServerContext* ctx,
                     const google::protobuf::Message& request, google::protobuf::Message* response)
    : CallReactor(svc, method, *ctx), response_(response), job_(std::make_shared<JobContext>()) {
  received_bytes_ = request.ByteSizeLong();
  job_->deadline = absl::FromChrono(ctx->deadline());
  job_->tenant = caller_.tenant;
}

void UnaryCall::on_finish(absl::Status& status) {
  // A job stopped by the cancel flag after its deadline passed reports the deadline.
  if (absl::IsCancelled(status) && job_->deadline <= absl::Now()) {
    status = absl::DeadlineExceededError(
        absl::StrCat(method_, ": deadline exceeded (", status.message(), ")"));
  }
  if (status.ok()) sent_bytes_ = response_->ByteSizeLong();
  const PhaseTimes& t = job_->times;
  if (t.queue_seconds > 0) svc_.metrics.observe_phase(method_, "queue", t.queue_seconds);
  if (t.h2d_seconds > 0) svc_.metrics.observe_phase(method_, "h2d", t.h2d_seconds);
  if (t.compute_seconds > 0) svc_.metrics.observe_phase(method_, "compute", t.compute_seconds);
  if (t.d2h_seconds > 0) svc_.metrics.observe_phase(method_, "d2h", t.d2h_seconds);
  svc_.metrics.tenants().add_device_seconds(caller_.tenant,
                                            t.h2d_seconds + t.compute_seconds + t.d2h_seconds);
}

}  // namespace gcompute::server
