// SPDX-License-Identifier: Apache-2.0
// Per-tenant admission in front of the engine: a tenant has at most `running` requests on the
// engine (waiting there or executing) and at most `queued` more waiting here for one of those
// slots; beyond that RESOURCE_EXHAUSTED names the tenant and the quota. Keeps one tenant from
// filling the engine's shared queue.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "ops/tenant_quotas.hpp"

namespace gcompute::server::ops {

class TenantAdmission {
 public:
  /// Puts one request on the engine; must lead to exactly one release() of the same tenant
  /// once the request has left the engine (done or refused).
  using Launch = absl::AnyInvocable<void()>;

  explicit TenantAdmission(TenantQuotaLookup quotas) : quotas_(std::move(quotas)) {}

  /// Calls `launch` at once while `tenant` is under its running quota, keeps it for later
  /// while under its queued quota, and otherwise returns RESOURCE_EXHAUSTED (`launch` unused).
  absl::Status admit(const std::string& tenant, Launch launch);
  /// A request of `tenant` left the engine: launches the tenant's oldest waiting request.
  void release(const std::string& tenant);

  /// Requests of `tenant` on the engine and waiting here (tests, metrics).
  std::uint64_t running(const std::string& tenant) const;
  std::uint64_t waiting(const std::string& tenant) const;

 private:
  struct Tenant {
    std::uint64_t running = 0;
    std::deque<Launch> waiting;
  };
  const TenantQuotaLookup quotas_;
  mutable absl::Mutex mu_;
  std::map<std::string, Tenant> tenants_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gcompute::server::ops
