// SPDX-License-Identifier: Apache-2.0
// Element type conversions the CLI performs before sending matrices.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gcompute/client/host_matrix.hpp"

namespace gcompute::cli {

/// Converts between f32, f64 and i32. To i32 every value must be an integer in int32 range or
/// +inf, which becomes 2147483647 (APSP's "no edge"); from i32, 2147483647 becomes +inf.
/// `name` labels errors.
absl::StatusOr<client::HostMatrix> convert_dtype(const client::HostMatrix& m, client::DType to,
                                                 const std::string& name);

}  // namespace gcompute::cli
