// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: every RPC's request as the server decodes and validates it. The first
// input byte picks the request message (kinds below); the rest is its protobuf encoding. An
// unparsable message is not fed further (the server answers it before any handler runs).
//
// Each input gets the handler's path up to, not including, the work: api/convert.hpp's
// decoding, then the ops layer's checks (Operations::prepare for the compute operations, the
// stores for matrices and graphs, the job manager for jobs). A prepared operation is dropped,
// never run; the engine is drained, so a SubmitJob that passes every check is refused
// UNAVAILABLE instead of queued. The stores are fresh for each input and hold one graph, "g",
// so that refs and edits can find something; limits are small so nothing large is allocated.
//
// Properties: no crash, out-of-bounds access, leak or UB (ASan, UBSan, the rss limit); every
// refusal is a status of a code that blames the request (never INTERNAL or UNKNOWN), with a
// message that says why and fits in a gRPC trailer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "api/convert.hpp"
#include "engine/cpu_backend.hpp"
#include "gcompute/v1/service.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "ops/jobs.hpp"
#include "ops/operations.hpp"
#include "request_kinds.hpp"

namespace {

using namespace gcompute::server;  // NOLINT: a test harness
namespace v1 = gcompute::v1;
using namespace gcompute::fuzz;  // NOLINT: the request kinds

/// A gRPC trailer carries the message; servers and proxies refuse metadata past 8 KiB.
constexpr std::size_t kMaxMessageBytes = 4096;

[[noreturn]] void fail(RequestKind kind, const absl::Status& status, const char* what) {
  std::fprintf(stderr, "fuzz_requests: %s: %s: %s\n", request_kind_name(kind), what,
               status.ToString().substr(0, 2 * kMaxMessageBytes).c_str());
  std::abort();
}

/// A refusal blames the request with a code and a message; `unavailable_ok` admits the
/// drained engine's refusal of a job that passed every check.
void check(RequestKind kind, const absl::Status& status, bool unavailable_ok = false) {
  // Replaying seeds with GCOMPUTE_FUZZ_VERBOSE=1 shows how far each gets.
  static const bool verbose = std::getenv("GCOMPUTE_FUZZ_VERBOSE") != nullptr;
  if (verbose) {
    std::fprintf(stderr, "fuzz_requests: %s: %s\n", request_kind_name(kind),
                 status.ToString().substr(0, 200).c_str());
  }
  if (status.ok()) return;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:  // CreateGraph of a taken id
    case absl::StatusCode::kAborted:        // a graph version or page token of another version
      break;
    case absl::StatusCode::kUnavailable:
      if (unavailable_ok) break;
      [[fallthrough]];
    default:
      fail(kind, status, "a code that does not blame the request");
  }
  if (status.message().empty()) fail(kind, status, "a refusal without a message");
  if (status.message().size() > kMaxMessageBytes) fail(kind, status, "a message too long");
}

/// Small, so that whatever passes admission is small too.
Limits small_limits() {
  Limits l;
  l.max_message_bytes = 1 << 20;
  l.response_overhead_bytes = 4 << 10;
  l.max_matrix_elements = 1 << 14;
  l.max_batch = 64;
  l.max_request_host_bytes = 8 << 20;
  l.max_request_device_bytes = 8 << 20;
  return l;
}

/// The engine every input shares: drained, so nothing submitted to it ever runs.
Engine& drained_engine() {
  static Engine* engine = [] {
    auto* e = new Engine(std::make_unique<CpuBackend>(1), EngineOptions{});
    e->drain();
    return e;
  }();
  return *engine;
}

template <typename Message>
bool parse(Message& m, const std::uint8_t* data, std::size_t size) {
  return m.ParseFromArray(data, static_cast<int>(size));
}

/// Parses the input as a Message and checks the status that `call` gives for it.
template <typename Message, typename Call>
void check_call(RequestKind kind, const std::uint8_t* data, std::size_t size, Call call) {
  Message request;
  if (parse(request, data, size)) check(kind, call(request));
}

/// decode(request, args...) then Operations::prepare, as compute_service.cc's handlers do.
template <typename Message, typename... Args>
void prepare(RequestKind kind, ops::Operations& ops, const ops::Caller& caller,
             const std::uint8_t* data, std::size_t size, Args... args) {
  Message request;
  if (!parse(request, data, size)) return;
  auto decoded = decode(request, args...);
  if (!decoded.ok()) return check(kind, decoded.status());
  check(kind, ops.prepare(caller, *std::move(decoded)).status());
}

void run(RequestKind kind, const std::uint8_t* data, std::size_t size) {
  const Limits limits = small_limits();
  MatrixStore::Options matrix_options;
  matrix_options.quota_bytes = 4 << 20;
  MatrixStore matrices(matrix_options);
  GraphStore::Options graph_options;
  graph_options.limits.max_vertices = 4096;
  graph_options.limits.max_edges = 4096;
  graph_options.max_graphs = 4;
  GraphStore graphs(graph_options);
  ops::Operations ops(drained_engine(), ops::OpEnv{matrices, graphs, nullptr, limits, {}}, "");
  const ops::Caller caller{""};
  {
    std::vector<Hyperedge> edges{Hyperedge{0, {0}, {1}, 1}, Hyperedge{0, {1}, {2}, 2},
                                 Hyperedge{0, {2, 3}, {0}, 0.5}};
    if (!ops.create_graph(caller, "g", 4, std::move(edges)).ok()) std::abort();
  }

  switch (kind) {
    case kTranspose:
      return prepare<v1::TransposeRequest>(kind, ops, caller, data, size);
    case kMatMul:
      return prepare<v1::MatMulRequest>(kind, ops, caller, data, size);
    case kSvd:
      return prepare<v1::SvdRequest>(kind, ops, caller, data, size, false);
    case kBatchedSvd:
      return prepare<v1::SvdRequest>(kind, ops, caller, data, size, true);
    case kEigh:
      return prepare<v1::EighRequest>(kind, ops, caller, data, size);
    case kApsp:
      return prepare<v1::ApspRequest>(kind, ops, caller, data, size, std::string());
    case kShortestPath:
      return prepare<v1::ShortestPathRequest>(kind, ops, caller, data, size);
    case kSssp:
      return prepare<v1::SsspRequest>(kind, ops, caller, data, size);
    case kUploadHeader: {
      // The stream's first message; an upload ended after it is complete only when empty.
      v1::UploadMatrixRequest::Header header;
      if (!parse(header, data, size)) return;
      auto decoded = decode(header);
      if (!decoded.ok()) return check(kind, decoded.status());
      auto session = ops.begin_upload(caller, *decoded);
      if (!session.ok()) return check(kind, session.status());
      return check(kind, (*session)->finish().status());
    }
    case kDownloadMatrix:
      return check_call<v1::DownloadMatrixRequest>(kind, data, size, [&](const auto& r) {
        return ops.open_download(caller, r.ref().id(), "ref.id").status();
      });
    case kDeleteMatrix:
      return check_call<v1::DeleteMatrixRequest>(
          kind, data, size, [&](const auto& r) { return ops.delete_matrix(caller, r.ref().id()); });
    case kCreateGraph: {
      v1::CreateGraphRequest request;
      if (!parse(request, data, size)) return;
      auto info = ops.create_graph(caller, request.graph_id(), request.num_vertices(),
                                   decode_edges(request));
      check(kind, info.status());
      if (!info.ok()) return;
      v1::CreateGraphResponse response;
      encode(*info, response.mutable_info());
      return;
    }
    case kGetGraph: {
      v1::GetGraphRequest request;
      if (!parse(request, data, size)) return;
      auto graph = ops.get_graph(caller, request.graph_id());
      if (!graph.ok()) return check(kind, graph.status());
      auto first = decode_page_token(request.page_token(), *graph);
      check(kind, first.status());
      if (!first.ok()) return;
      v1::GetGraphResponse response;
      const std::uint64_t next =
          encode_page(*graph, *first, request.page_size(),
                      limits.max_message_bytes - limits.response_overhead_bytes, &response);
      const std::uint64_t items = graph->vertices.size() + graph->edges.size();
      if (next <= *first || next > items) {
        fail(kind, absl::OkStatus(), "a page that does not advance within the graph");
      }
      return;
    }
    case kListGraphs: {
      v1::ListGraphsRequest request;
      if (!parse(request, data, size)) return;
      v1::ListGraphsResponse response;
      for (const GraphInfo& info : ops.list_graphs(caller)) encode(info, response.add_graphs());
      return check(kind, absl::OkStatus());
    }
    case kDeleteGraph:
      return check_call<v1::DeleteGraphRequest>(
          kind, data, size, [&](const auto& r) { return ops.delete_graph(caller, r.graph_id()); });
    case kApplyEdits: {
      v1::ApplyEditsRequest request;
      if (!parse(request, data, size)) return;
      auto edits = decode_edits(request);
      if (!edits.ok()) return check(kind, edits.status());
      std::optional<std::uint64_t> expected;
      if (request.has_expected_version()) expected = request.expected_version();
      auto result = ops.apply_edits(caller, request.graph_id(), expected, *edits);
      check(kind, result.status());
      if (!result.ok()) return;
      v1::ApplyEditsResponse response;
      encode(*result, &response);
      if (absl::Status s = graphs.check_invariants(); !s.ok()) {
        fail(kind, s, "an accepted batch broke the graph's invariants");
      }
      return;
    }
    default:
      break;
  }

  // Jobs: a manager per input (its table starts empty and gains nothing: the engine refuses).
  ops::JobManager jobs(ops, ops::JobManagerOptions{});
  switch (kind) {
    case kSubmitJob: {
      v1::SubmitJobRequest request;
      if (!parse(request, data, size)) return;
      auto decoded = decode(request);
      if (!decoded.ok()) return check(kind, decoded.status());
      auto submitted = jobs.submit(caller, std::move(decoded->op), decoded->options);
      if (submitted.ok()) fail(kind, absl::OkStatus(), "a drained engine queued a job");
      return check(kind, submitted.status(), /*unavailable_ok=*/true);
    }
    case kGetJob:
      return check_call<v1::GetJobRequest>(
          kind, data, size, [&](const auto& r) { return jobs.get(caller, r.job_id()).status(); });
    case kWatchJob:
      return check_call<v1::WatchJobRequest>(kind, data, size, [&](const auto& r) {
        return jobs.watch(caller, r.job_id(), [](auto) {}).status();
      });
    case kCancelJob:
      return check_call<v1::CancelJobRequest>(kind, data, size, [&](const auto& r) {
        return jobs.cancel(caller, r.job_id()).status();
      });
    case kListJobs:
      return check_call<v1::ListJobsRequest>(kind, data, size, [&](const auto& r) {
        return jobs.list(caller, r.page_size(), r.page_token()).status();
      });
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The parser logs each string of invalid UTF-8 it refuses: noise, and slow.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  run(static_cast<RequestKind>(data[0] % kRequestKinds), data + 1, size - 1);
  return 0;
}
