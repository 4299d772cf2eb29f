// SPDX-License-Identifier: Apache-2.0
// A validated operation ready for an engine worker, and what preparing one may use.
#pragma once

#include <cstdint>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "engine/backend.hpp"
#include "ops/caller.hpp"
#include "ops/op_env.hpp"
#include "ops/requests.hpp"

namespace gcompute::server::ops {

/// An operation whose inputs passed every check that needs no data (shapes, limits, refs,
/// options). `run` executes it once on an engine worker and returns its result.
struct PreparedOp {
  std::string method;
  absl::AnyInvocable<absl::StatusOr<OpResult>(Backend&, JobContext&)> run;
  /// Work of a few microseconds: a unary call may run it on its own thread when a worker is
  /// idle (Engine::Dispatch::kInlineIfIdle) instead of handing it over.
  bool tiny = false;
};

/// The most bytes of a tiny transpose and multiply-adds of a tiny matmul (tens of microseconds
/// on one core).
inline constexpr std::uint64_t kTinyTransposeBytes = 1u << 20;
inline constexpr std::uint64_t kTinyMatmulMultiplyAdds = 1u << 21;

absl::StatusOr<PreparedOp> prepare_transpose(TransposeRequest request, OpEnv& env,
                                             const Caller& caller);
absl::StatusOr<PreparedOp> prepare_matmul(MatMulRequest request, OpEnv& env, const Caller& caller);
absl::StatusOr<PreparedOp> prepare_svd(SvdRequest request, OpEnv& env, const Caller& caller);
absl::StatusOr<PreparedOp> prepare_eigh(EighRequest request, OpEnv& env, const Caller& caller);
absl::StatusOr<PreparedOp> prepare_apsp(ApspRequest request, OpEnv& env, const Caller& caller);
absl::StatusOr<PreparedOp> prepare_shortest_path(ShortestPathRequest request, OpEnv& env,
                                                 const Caller& caller);
absl::StatusOr<PreparedOp> prepare_sssp(SsspRequest request, OpEnv& env, const Caller& caller);

/// The graph store's key of `caller`'s graph `graph_id`: tenants have separate namespaces.
std::string graph_key(const Caller& caller, const std::string& graph_id);

}  // namespace gcompute::server::ops
