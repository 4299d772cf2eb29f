// SPDX-License-Identifier: Apache-2.0
// What one tenant may hold and run at once. Defaults come from flags; the tokens file may
// override them per tenant (docs/security.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace gcompute::server::ops {

struct TenantQuotas {
  static constexpr std::uint64_t kUnlimited = ~std::uint64_t{0};
  std::uint64_t stored_bytes = kUnlimited;  ///< bytes of server-resident matrices
  std::uint64_t graphs = kUnlimited;        ///< stored graphs
  std::uint64_t running = kUnlimited;       ///< requests on the engine (queued there or running)
  std::uint64_t queued = kUnlimited;        ///< requests waiting for one of the running slots
};

/// The quotas of a tenant ("" is the implicit tenant of a server without authentication).
using TenantQuotaLookup = std::function<TenantQuotas(const std::string& tenant)>;

}  // namespace gcompute::server::ops
