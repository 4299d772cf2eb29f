// SPDX-License-Identifier: Apache-2.0
// Job RPCs: SubmitJob validates and queues through the job manager (ops/jobs.hpp); GetJob,
// CancelJob and ListJobs read its table; WatchJob streams each change until a final state.
#include <mutex>

#include "api/compute_service.hpp"
#include "api/convert.hpp"

namespace gcompute::server {
namespace {

class WatchReactor final : public CallReactor<grpc::ServerWriteReactor<v1::Job>> {
 public:
  WatchReactor(ServiceContext& svc, const grpc::CallbackServerContext& ctx,
               const v1::WatchJobRequest* request)
      : CallReactor(svc, "WatchJob", ctx, *request) {
    if (!accept()) return;
    std::lock_guard lock(mu_);
    auto watch = svc_.jobs.watch(caller_, request->job_id(),
                                 [this](absl::StatusOr<ops::JobView> view) { send(view); });
    if (!watch.ok()) {
      finish_call(watch.status());
      return;
    }
    watch_ = *std::move(watch);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return finish_call(absl::CancelledError("client went away during WatchJob"));
    if (final_) return finish_call(absl::OkStatus());
    std::lock_guard lock(mu_);
    watch_->written();
  }

  void OnCancel() override {
    close_watch();
    finish_call(absl::CancelledError("WatchJob cancelled by the client"));
  }

  void OnDone() override {
    close_watch();
    CallReactor::OnDone();
  }

 private:
  // Called by the job manager, one view at a time (the next only after written()).
  void send(const absl::StatusOr<ops::JobView>& view) {
    if (!view.ok()) return finish_call(view.status());
    message_.Clear();
    encode(*view, &message_);
    final_ = ops::is_final(view->state);
    sent_bytes_ += message_.ByteSizeLong();
    StartWrite(&message_);
  }

  void close_watch() {
    std::lock_guard lock(mu_);
    if (watch_) watch_->close();
  }

  std::mutex mu_;  ///< watch_ is set after the manager may already have called send()
  std::shared_ptr<ops::JobWatch> watch_;
  v1::Job message_;
  bool final_ = false;
};

}  // namespace

grpc::ServerUnaryReactor* ComputeService::SubmitJob(grpc::CallbackServerContext* ctx,
                                                    const v1::SubmitJobRequest* request,
                                                    v1::SubmitJobResponse* response) {
  return UnaryCall::start(svc_, "SubmitJob", ctx, *request, response, [&](UnaryCall& call) {
    // Its record (--data-dir) holds the request as sent: encoded before decoding moves bytes.
    std::shared_ptr<const std::string> submission;
    if (svc_.jobs.journaled()) {
      submission = std::make_shared<const std::string>(request->SerializeAsString());
    }
    // gRPC owns the request and shares it with nobody: decoding moves its matrix bytes out.
    auto decoded = decode(*const_cast<v1::SubmitJobRequest*>(request));
    if (!decoded.ok()) return call.complete(decoded.status());
    decoded->options.submission = std::move(submission);
    auto submitted = svc_.jobs.submit(call.caller(), std::move(decoded->op), decoded->options);
    if (submitted.ok()) {
      response->set_job_id(submitted->id);
      response->set_existing(submitted->existing);
    }
    call.complete(submitted.status());
  });
}

grpc::ServerUnaryReactor* ComputeService::GetJob(grpc::CallbackServerContext* ctx,
                                                 const v1::GetJobRequest* request,
                                                 v1::Job* response) {
  return UnaryCall::start(svc_, "GetJob", ctx, *request, response, [&](UnaryCall& call) {
    auto job = svc_.jobs.get(call.caller(), request->job_id());
    if (job.ok()) encode(*job, response);
    call.complete(job.status());
  });
}

grpc::ServerWriteReactor<v1::Job>* ComputeService::WatchJob(grpc::CallbackServerContext* ctx,
                                                            const v1::WatchJobRequest* request) {
  return new WatchReactor(svc_, *ctx, request);
}

grpc::ServerUnaryReactor* ComputeService::CancelJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CancelJobRequest* request,
                                                    v1::CancelJobResponse* response) {
  return UnaryCall::start(svc_, "CancelJob", ctx, *request, response, [&](UnaryCall& call) {
    auto job = svc_.jobs.cancel(call.caller(), request->job_id());
    if (job.ok()) encode(*job, response->mutable_job());
    call.complete(job.status());
  });
}

grpc::ServerUnaryReactor* ComputeService::ListJobs(grpc::CallbackServerContext* ctx,
                                                   const v1::ListJobsRequest* request,
                                                   v1::ListJobsResponse* response) {
  return UnaryCall::start(svc_, "ListJobs", ctx, *request, response, [&](UnaryCall& call) {
    auto page = svc_.jobs.list(call.caller(), request->page_size(), request->page_token());
    if (page.ok()) {
      for (const ops::JobView& job : page->jobs) encode(job, response->add_jobs());
      response->set_next_page_token(page->next_page_token);
    }
    call.complete(page.status());
  });
}

}  // namespace gcompute::server
