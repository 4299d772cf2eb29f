// SPDX-License-Identifier: Apache-2.0
// Client::Impl: the options and replicas of a Client, and the one shape every operation
// shares (route, stage operands, call, convert the response), so that each operation only
// fills its request and reads its response.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gcompute/client/client.hpp"
#include "matrix_transfer.hpp"
#include "operand_stager.hpp"
#include "replicas.hpp"
#include "shared_memory.hpp"
#include "unary_rpc.hpp"

namespace gcompute::client {

/// The deadline and progress callback of one Client call, fixed when the call starts.
struct CallScope {
  absl::Time deadline;
  const ProgressCallback& progress;
};

/// One attempt of a call, on one replica; stored results are fetched through `transfer`.
struct Attempt {
  std::size_t replica_index;
  TransferTarget transfer;
};

/// What an operation returns for a converter that returns T: T itself when it already
/// carries a status (absl::Status, absl::StatusOr<U>), else absl::StatusOr<T>.
template <typename T>
struct WithStatus {
  using type = absl::StatusOr<T>;
};
template <typename T>
struct WithStatus<absl::StatusOr<T>> {
  using type = absl::StatusOr<T>;
};
template <>
struct WithStatus<absl::Status> {
  using type = absl::Status;
};

/// Converts a response with `convert(response, attempt)`, or `convert(response)` when the
/// converter needs no replica (nothing to download).
template <typename Convert, typename Response>
decltype(auto) convert_response(Convert& convert, Response& response, const Attempt& attempt) {
  if constexpr (std::is_invocable_v<Convert&, Response&, const Attempt&>) {
    return convert(response, attempt);
  } else {
    return convert(response);
  }
}

inline const absl::Status& status_of(const absl::Status& s) {
  return s;
}
template <typename T>
const absl::Status& status_of(const absl::StatusOr<T>& s) {
  return s.status();
}

/// The server refused the call's shared memory itself (not its operands' contents): the region
/// is unknown to it (a restart) or the results did not fit the arena.
inline bool refused_shared_memory(const absl::Status& s) {
  return (s.code() == absl::StatusCode::kNotFound ||
          s.code() == absl::StatusCode::kInvalidArgument ||
          s.code() == absl::StatusCode::kFailedPrecondition) &&
         s.message().find("shared_memory") != absl::string_view::npos;
}

/// The stored-matrix quota (the server's or the tenant's) refused a result.
inline bool refused_stored_results(const absl::Status& s) {
  return s.code() == absl::StatusCode::kResourceExhausted &&
         s.message().find("stored-matrix quota") != absl::string_view::npos;
}

/// The call failed without an answer about its work: the server may still be running it.
inline bool may_still_run(const absl::Status& s) {
  return s.code() == absl::StatusCode::kDeadlineExceeded ||
         s.code() == absl::StatusCode::kCancelled || s.code() == absl::StatusCode::kUnavailable ||
         s.code() == absl::StatusCode::kUnknown;
}

template <typename Convert, typename Response>
using ConvertedResult = typename WithStatus<std::decay_t<decltype(convert_response(
    std::declval<Convert&>(), std::declval<Response&>(), std::declval<const Attempt&>()))>>::type;

struct Client::Impl {
  ClientOptions options;  // chunk_bytes already clamped to what one message can carry
  ReplicaSet replicas;
  /// Arenas of the replicas on this host; declared after `replicas`, which their release uses.
  SharedMemoryPool shared_memory;

  explicit Impl(ClientOptions client_options);

  CallScope call_scope(const CallOptions& call) const {
    return CallScope{absl::Now() + call.timeout.value_or(options.default_timeout),
                     call.progress ? call.progress : options.progress};
  }
  TransferTarget transfer_on(Replica& replica, const CallScope& scope) const {
    return TransferTarget{replica, scope.deadline, options.chunk_bytes, scope.progress};
  }

  /// Calls `method` with `request` on the route (retrying stateless calls elsewhere while
  /// replicas are UNAVAILABLE) and returns `convert` of the response. A route that could not
  /// be chosen is returned as is.
  template <typename Request, typename Response, typename Convert>
  ConvertedResult<Convert, Response> rpc(const absl::StatusOr<Route>& route, const CallScope& scope,
                                         UnaryMethod<Request, Response> method,
                                         const Request& request, Convert&& convert) {
    if (!route.ok()) return route.status();
    return replicas.run(*route, scope.deadline, [&](Replica& replica, std::size_t index) {
      const Attempt attempt{index, transfer_on(replica, scope)};
      return call_and_convert(attempt, method, request, convert);
    });
  }

  /// As rpc(), but the request is built anew for each replica tried by `fill(stager,
  /// request)`, whose operands are placed in shared memory (`use_shared_memory` and the replica
  /// on this host), inline or uploaded to that replica first; the uploads leave the server's
  /// store when it reads them, or are deleted when the attempt fails. A call the server refuses
  /// for its shared memory (it restarted and forgot the region) is sent again over the wire.
  template <typename Request, typename Response, typename Fill, typename Convert>
  ConvertedResult<Convert, Response> rpc_with_operands(const absl::StatusOr<Route>& route,
                                                       const CallScope& scope,
                                                       UnaryMethod<Request, Response> method,
                                                       Fill&& fill, Convert&& convert,
                                                       bool use_shared_memory = false) {
    using Result = ConvertedResult<Convert, Response>;
    if (!route.ok()) return route.status();
    return replicas.run(*route, scope.deadline, [&](Replica& replica, std::size_t index) -> Result {
      bool shared = use_shared_memory && options.shared_memory;
      // The calls that may use shared memory are the ones whose results come back in their
      // response.
      bool stream_results = use_shared_memory;
      for (;;) {
        SharedMemoryUse use;
        if (shared) use = {&shared_memory, index, options.shared_memory_min_bytes};
        TransferTarget transfer = transfer_on(replica, scope);
        OperandStager stager(transfer, effective_inline_limit(options), use, stream_results);
        Request request;
        fill(stager, request);
        if (absl::Status s = stager.place(); !s.ok()) return s;
        transfer.arena = stager.arena();  // the results may lie there
        Result result =
            call_and_convert(Attempt{index, transfer}, method, request, convert, &stager);
        const absl::Status& status = status_of(result);
        if (stager.arena() != nullptr) {
          if (refused_shared_memory(status)) {
            stager.discard_arena();
            shared = false;
            continue;
          }
          // A call that may still run on the server (cancelled, timed out, cut off) could yet
          // write into the arena: it must not serve the next call.
          if (may_still_run(status)) stager.discard_arena();
        }
        // Results this client chose to store, refused by the store's quota: asked for again
        // in the response, as the caller left them.
        if (stager.stores_results() && refused_stored_results(status)) {
          stream_results = false;
          continue;
        }
        return result;
      }
    });
  }

 private:
  template <typename Request, typename Response, typename Convert>
  static ConvertedResult<Convert, Response> call_and_convert(const Attempt& attempt,
                                                             UnaryMethod<Request, Response> method,
                                                             const Request& request,
                                                             Convert& convert,
                                                             OperandStager* staged = nullptr) {
    absl::StatusOr<Response> response =
        unary_rpc(attempt.transfer.replica, method, request, attempt.transfer.deadline);
    if (!response.ok()) return response.status();
    if (staged != nullptr) staged->uploads_released();
    return convert_response(convert, *response, attempt);
  }
};

}  // namespace gcompute::client
