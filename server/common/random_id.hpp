// SPDX-License-Identifier: Apache-2.0
// Identifiers that nobody can guess: 128 bits from the operating system's CSPRNG.
#pragma once

#include <string>

namespace gcompute::server {

/// `prefix` followed by 32 lowercase hex digits from getrandom(2) (128 bits). Aborts the
/// process if the kernel's generator fails, which it does not once the system has booted:
/// an id from a weaker source would let one client read another's data.
std::string random_id(const std::string& prefix);

}  // namespace gcompute::server
