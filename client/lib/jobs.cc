// SPDX-License-Identifier: Apache-2.0
// The job calls of Client: SubmitJob with the operation's request built as its unary call
// builds it (operands inline or uploaded), and GetJob, WatchJob, CancelJob and ListJobs on the
// replica that holds the job.
#include <utility>

#include "absl/strings/str_cat.h"
#include "client_impl.hpp"
#include "gcompute/client/client.hpp"
#include "gcompute/kernels/status_macros.hpp"
#include "proto_convert.hpp"
#include "results.hpp"

namespace gcompute::client {
namespace {

using Stub = pb::Compute::Stub;

std::string state_name(pb::JobState state) {
  const std::string name = pb::JobState_Name(state);
  const std::string prefix = "JOB_STATE_";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

JobInfo job_info_from(const pb::Job& j) {
  JobInfo out;
  out.job_id = j.job_id();
  out.method = j.method();
  out.state = state_name(j.state());
  out.priority = j.priority() == pb::JOB_PRIORITY_HIGH ? JobPriority::kHigh : JobPriority::kNormal;
  out.client_job_key = j.client_job_key();
  out.fraction = j.progress().fraction();
  out.phase = j.progress().phase();
  out.detail = j.progress().detail();
  out.created_unix_ms = j.created_unix_ms();
  out.started_unix_ms = j.started_unix_ms();
  out.finished_unix_ms = j.finished_unix_ms();
  out.expires_unix_ms = j.expires_unix_ms();
  if (j.error_code() != 0) {
    out.error = absl::Status(static_cast<absl::StatusCode>(j.error_code()), j.error_message());
  }
  return out;
}

/// SubmitJob with the operation `fill` puts into the request; the job's replica is remembered.
template <typename Fill>
absl::StatusOr<std::string> submit(Client::Impl& impl, const absl::StatusOr<Route>& route,
                                   const JobOptions& job, const CallOptions& call, Fill&& fill) {
  const CallScope scope = impl.call_scope(call);
  return impl.rpc_with_operands(
      route, scope, &Stub::SubmitJob,
      [&](OperandStager& stager, pb::SubmitJobRequest& request) {
        request.set_priority(job.priority == JobPriority::kHigh ? pb::JOB_PRIORITY_HIGH
                                                                : pb::JOB_PRIORITY_NORMAL);
        request.set_client_job_key(job.client_job_key);
        request.set_ttl_seconds(job.ttl_seconds);
        fill(stager, request);
      },
      [&impl](pb::SubmitJobResponse& response,
              const Attempt& attempt) -> absl::StatusOr<std::string> {
        // Job ids share the owner table of stored matrices: both name state on one replica.
        impl.replicas.remember_matrix(response.job_id(), attempt.replica_index, 0);
        return response.job_id();
      });
}

/// Runs `fn(replica, index)` where job `id` lives: the replica that accepted it when this
/// client submitted it, else each replica in turn until one does not answer NOT_FOUND.
template <typename Fn>
auto on_job_replica(Client::Impl& impl, const std::string& id, Fn&& fn)
    -> decltype(fn(std::declval<Replica&>(), std::size_t{0})) {
  if (!impl.replicas.init_error().ok()) return impl.replicas.init_error();
  if (auto owner = impl.replicas.matrix_owner(id)) return fn(impl.replicas.at(*owner), *owner);
  for (std::size_t i = 0;; ++i) {
    auto result = fn(impl.replicas.at(i), i);
    if (i + 1 >= impl.replicas.size() || result.status().code() != absl::StatusCode::kNotFound) {
      return result;
    }
  }
}

absl::StatusOr<pb::Job> get_raw(Client::Impl& impl, const std::string& id, absl::Time deadline,
                                std::size_t* replica_index = nullptr) {
  pb::GetJobRequest request;
  request.set_job_id(id);
  return on_job_replica(impl, id,
                        [&](Replica& replica, std::size_t index) -> absl::StatusOr<pb::Job> {
                          if (replica_index != nullptr) *replica_index = index;
                          return unary_rpc(replica, &Stub::GetJob, request, deadline);
                        });
}

}  // namespace

absl::StatusOr<std::string> Client::submit_transpose(const Operand& a, const JobOptions& job,
                                                     const CallOptions& call) {
  return submit(*impl_, impl_->replicas.route_for_refs(stored_operands({&a})), job, call,
                [&](OperandStager& stager, pb::SubmitJobRequest& request) {
                  stager.add(a, request.mutable_transpose()->mutable_a());
                });
}

absl::StatusOr<std::string> Client::submit_matmul(const Operand& a, const Operand& b,
                                                  const MatMulOptions& options,
                                                  const JobOptions& job, const CallOptions& call) {
  const Operand* c = options.c ? &*options.c : nullptr;
  return submit(*impl_, impl_->replicas.route_for_refs(stored_operands({&a, &b, c})), job, call,
                [&](OperandStager& stager, pb::SubmitJobRequest& request) {
                  fill_matmul(stager, a, b, options, request.mutable_matmul());
                });
}

absl::StatusOr<std::string> Client::submit_svd(const Operand& a, const SvdOptions& options,
                                               bool batched, const JobOptions& job,
                                               const CallOptions& call) {
  return submit(*impl_, impl_->replicas.route_for_refs(stored_operands({&a})), job, call,
                [&](OperandStager& stager, pb::SubmitJobRequest& request) {
                  fill_svd(stager, a, options,
                           batched ? request.mutable_batched_svd() : request.mutable_svd());
                });
}

absl::StatusOr<std::string> Client::submit_apsp(const ApspGraph& graph, bool next_hop,
                                                const JobOptions& job, const CallOptions& call) {
  return submit(*impl_, route_for(impl_->replicas, graph), job, call,
                [&](OperandStager& stager, pb::SubmitJobRequest& request) {
                  fill_apsp(stager, graph, next_hop, request.mutable_apsp());
                });
}

absl::StatusOr<std::string> Client::submit_shortest_path(const ApspGraph& graph, int64_t source,
                                                         int64_t target, const JobOptions& job,
                                                         const CallOptions& call) {
  return submit(*impl_, route_for(impl_->replicas, graph), job, call,
                [&](OperandStager& stager, pb::SubmitJobRequest& request) {
                  fill_shortest_path(stager, graph, source, target,
                                     request.mutable_shortest_path());
                });
}

absl::StatusOr<std::string> Client::submit_sssp(const SsspGraph& graph, int64_t source,
                                                const JobOptions& job, const CallOptions& call) {
  return submit(*impl_, route_for(impl_->replicas, graph), job, call,
                [&](OperandStager&, pb::SubmitJobRequest& request) {
                  fill_sssp(graph, source, request.mutable_sssp());
                });
}

absl::StatusOr<JobInfo> Client::get_job(const std::string& job_id, const CallOptions& call) {
  absl::StatusOr<pb::Job> job = get_raw(*impl_, job_id, impl_->call_scope(call).deadline);
  if (!job.ok()) return job.status();
  return job_info_from(*job);
}

absl::StatusOr<JobInfo> Client::cancel_job(const std::string& job_id, const CallOptions& call) {
  const absl::Time deadline = impl_->call_scope(call).deadline;
  pb::CancelJobRequest request;
  request.set_job_id(job_id);
  return on_job_replica(*impl_, job_id,
                        [&](Replica& replica, std::size_t) -> absl::StatusOr<JobInfo> {
                          auto r = unary_rpc(replica, &Stub::CancelJob, request, deadline);
                          if (!r.ok()) return r.status();
                          return job_info_from(r->job());
                        });
}

absl::StatusOr<std::vector<JobInfo>> Client::list_jobs(const CallOptions& call) {
  if (!impl_->replicas.init_error().ok()) return impl_->replicas.init_error();
  const absl::Time deadline = impl_->call_scope(call).deadline;
  std::vector<JobInfo> out;
  for (std::size_t i = 0; i < impl_->replicas.size(); ++i) {
    pb::ListJobsRequest request;
    request.set_page_size(1000);
    do {
      auto page = unary_rpc(impl_->replicas.at(i), &Stub::ListJobs, request, deadline);
      if (!page.ok()) return page.status();
      for (const pb::Job& j : page->jobs()) out.push_back(job_info_from(j));
      request.set_page_token(page->next_page_token());
    } while (!request.page_token().empty());
  }
  return out;
}

absl::StatusOr<JobInfo> Client::watch_job(const std::string& job_id,
                                          const std::function<void(const JobInfo&)>& on_update,
                                          const CallOptions& call) {
  const absl::Time deadline = impl_->call_scope(call).deadline;
  pb::WatchJobRequest request;
  request.set_job_id(job_id);
  return on_job_replica(*impl_, job_id,
                        [&](Replica& replica, std::size_t) -> absl::StatusOr<JobInfo> {
                          grpc::ClientContext context;
                          replica.prepare(context, deadline);  // deadline and token
                          auto reader = replica.stub->WatchJob(&context, request);
                          pb::Job job;
                          JobInfo last;
                          while (reader->Read(&job)) {
                            last = job_info_from(job);
                            if (on_update) on_update(last);
                          }
                          const grpc::Status status = reader->Finish();
                          if (!status.ok()) return from_grpc_status(status);
                          return last;
                        });
}

absl::StatusOr<JobResults> Client::job_results(const std::string& job_id, const CallOptions& call) {
  const CallScope scope = impl_->call_scope(call);
  std::size_t index = 0;
  absl::StatusOr<pb::Job> job = get_raw(*impl_, job_id, scope.deadline, &index);
  if (!job.ok()) return job.status();
  if (job->state() == pb::JOB_STATE_QUEUED || job->state() == pb::JOB_STATE_RUNNING) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " is ", state_name(job->state()), "; wait until it is final"));
  }
  if (job->error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(job->error_code()), job->error_message());
  }
  const Attempt attempt{index, impl_->transfer_on(impl_->replicas.at(index), scope)};
  JobResults out;
  out.method = job->method();
  pb::JobResult& r = *job->mutable_result();
  switch (r.result_case()) {
    case pb::JobResult::kTranspose: {
      GC_ASSIGN_OR_RETURN(out.matrix,
                          matrix_with_stats(attempt, r.mutable_transpose()->mutable_at(), "at",
                                            r.transpose().stats()));
      break;
    }
    case pb::JobResult::kMatmul: {
      GC_ASSIGN_OR_RETURN(out.matrix, matrix_with_stats(attempt, r.mutable_matmul()->mutable_c(),
                                                        "c", r.matmul().stats()));
      break;
    }
    case pb::JobResult::kSvd: {
      GC_ASSIGN_OR_RETURN(out.svd, svd_result_from(*r.mutable_svd(), attempt, r.svd().has_u()));
      break;
    }
    case pb::JobResult::kEigh: {
      GC_ASSIGN_OR_RETURN(out.eigh, eigh_result_from(*r.mutable_eigh(), attempt, r.eigh().has_v()));
      break;
    }
    case pb::JobResult::kApsp: {
      GC_ASSIGN_OR_RETURN(out.apsp,
                          apsp_result_from(*r.mutable_apsp(), attempt, r.apsp().has_next_hop()));
      break;
    }
    case pb::JobResult::kShortestPath:
      out.path = path_result_from(r.shortest_path());
      break;
    case pb::JobResult::kSssp: {
      GC_ASSIGN_OR_RETURN(out.sssp, sssp_result_from(*r.mutable_sssp(), attempt));
      break;
    }
    case pb::JobResult::RESULT_NOT_SET:
      return absl::InternalError(absl::StrCat("job ", job_id, " succeeded without a result"));
  }
  return out;
}

}  // namespace gcompute::client
