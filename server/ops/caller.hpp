// SPDX-License-Identifier: Apache-2.0
// Who a request comes from. Everything a caller stores (matrices, graphs) belongs to its tenant;
// another tenant's data is NOT_FOUND, exactly like data that does not exist.
#pragma once

#include <string>

namespace gcompute::server::ops {

struct Caller {
  /// The tenant, from the credential the call authenticated with ("" when the server runs
  /// without authentication: one implicit tenant).
  std::string tenant;
};

}  // namespace gcompute::server::ops
