// SPDX-License-Identifier: Apache-2.0
#include "ops/tenant_admission.hpp"

#include "absl/strings/str_cat.h"
#include "common/quote.hpp"

namespace gcompute::server::ops {

absl::Status TenantAdmission::admit(const std::string& tenant, Launch launch) {
  const TenantQuotas q = quotas_ ? quotas_(tenant) : TenantQuotas{};
  {
    absl::MutexLock lock(&mu_);
    Tenant& t = tenants_[tenant];
    if (t.running < q.running) {
      ++t.running;
    } else if (q.running > 0 && t.waiting.size() < q.queued) {
      t.waiting.push_back(std::move(launch));
      return absl::OkStatus();
    } else {
      const std::uint64_t running = t.running;
      const std::size_t waiting = t.waiting.size();
      if (running == 0 && waiting == 0) tenants_.erase(tenant);
      return absl::ResourceExhaustedError(
          absl::StrCat("tenant ", quote_id(tenant), " has ", running,
                       " requests running (quota running=", q.running, ") and ", waiting,
                       " queued (quota queued=", q.queued, "); retry when one finishes"));
    }
  }
  launch();
  return absl::OkStatus();
}

void TenantAdmission::release(const std::string& tenant) {
  Launch next;
  {
    absl::MutexLock lock(&mu_);
    auto it = tenants_.find(tenant);
    if (it == tenants_.end()) return;
    Tenant& t = it->second;
    if (!t.waiting.empty()) {
      next = std::move(t.waiting.front());  // keeps the running slot
      t.waiting.pop_front();
    } else if (--t.running == 0) {
      tenants_.erase(it);
    }
  }
  if (next) next();
}

std::uint64_t TenantAdmission::running(const std::string& tenant) const {
  absl::MutexLock lock(&mu_);
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.running;
}

std::uint64_t TenantAdmission::waiting(const std::string& tenant) const {
  absl::MutexLock lock(&mu_);
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.waiting.size();
}

}  // namespace gcompute::server::ops
