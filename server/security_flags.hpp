// SPDX-License-Identifier: Apache-2.0
// The server's security flags (docs/security.md), read into SecurityOptions.
#pragma once

#include "security/security_options.hpp"

namespace gcompute::server {

/// SecurityOptions from the parsed command line.
SecurityOptions security_options_from_flags();

}  // namespace gcompute::server
