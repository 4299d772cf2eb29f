// SPDX-License-Identifier: Apache-2.0
// The servers of one client and which of them a call goes to: round robin with failover for
// stateless calls, the creating replica for stored matrices (graph ids are routed with
// graph_owner(), declared in the public header).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "channel_security.hpp"
#include "gcompute/client/client.hpp"
#include "gcompute/v1/service.grpc.pb.h"

namespace gcompute::client {

/// One server: its channel and stub.
struct Replica {
  std::string name;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<::gcompute::v1::Compute::Stub> stub;
  std::string authorization;  ///< "Bearer TOKEN" or empty

  /// Sets the deadline and the credentials of a call to this replica.
  void prepare(grpc::ClientContext& context, absl::Time deadline) const {
    context.set_deadline(absl::ToChronoTime(deadline));
    if (!authorization.empty()) context.AddMetadata("authorization", authorization);
  }
};

/// Where one call goes: a fixed replica (state lives there) or any (balanced, with failover).
struct Route {
  std::optional<std::size_t> fixed;
};

class ReplicaSet {
 public:
  /// One replica per name expand_target(target) gives, connected with `security`; if either
  /// failed, one channel to `target` and every call returns the error.
  ReplicaSet(const std::string& target, grpc::ChannelArguments args,
             const absl::StatusOr<ChannelSecurity>& security, const std::string& tls_server_name);

  const std::vector<std::string>& names() const { return names_; }
  std::size_t size() const { return replicas_.size(); }
  Replica& at(std::size_t index) { return replicas_[index]; }
  /// The target's expansion error (OK when it expanded).
  const absl::Status& init_error() const { return init_error_; }

  /// The route of requests on stored graph `graph_id`: its owner.
  Route route_for_graph(const std::string& graph_id) const {
    return Route{graph_owner(names_, graph_id)};
  }
  /// The route of a call whose stored-matrix operands are `refs` (may be empty).
  absl::StatusOr<Route> route_for_refs(const std::vector<const MatrixRef*>& refs);

  /// Records that replica `replica` created stored matrix `id`.
  void remember_matrix(const std::string& id, std::size_t replica, int64_t expires_at_unix_ms);
  void forget_matrix(const std::string& id);
  /// The replica that created matrix `id`, if known (always 0 with one replica).
  std::optional<std::size_t> matrix_owner(const std::string& id) const;

  /// Runs `fn(replica, index)` on the route: a fixed replica once, or replicas in turn from
  /// the next round-robin one while they answer UNAVAILABLE and `deadline` has not passed.
  template <typename Fn>
  auto run(const Route& route, absl::Time deadline, Fn&& fn)
      -> decltype(fn(std::declval<Replica&>(), std::size_t{0})) {
    if (!init_error_.ok()) return init_error_;
    if (route.fixed) return fn(replicas_[*route.fixed], *route.fixed);
    const std::size_t n = replicas_.size();
    const std::size_t first = next_round_robin();
    for (std::size_t i = 0;; ++i) {
      const std::size_t index = (first + i) % n;
      auto result = fn(replicas_[index], index);
      if (i + 1 >= n || absl::Now() >= deadline) return result;
      if (status_of(result).code() != absl::StatusCode::kUnavailable) return result;
    }
  }

 private:
  // Which replica created a stored matrix, until it expires or is deleted.
  struct MatrixOwner {
    std::size_t replica;
    int64_t expires_at_unix_ms;
  };

  std::size_t next_round_robin() {
    return next_.fetch_add(1, std::memory_order_relaxed) % replicas_.size();
  }
  static const absl::Status& status_of(const absl::Status& s) { return s; }
  template <typename T>
  static const absl::Status& status_of(const absl::StatusOr<T>& s) {
    return s.status();
  }

  std::vector<std::string> names_;
  std::vector<Replica> replicas_;
  absl::Status init_error_;
  std::atomic<std::size_t> next_{0};
  mutable std::mutex owners_mu_;
  std::unordered_map<std::string, MatrixOwner> matrix_owners_;
};

}  // namespace gcompute::client
