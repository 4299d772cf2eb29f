// SPDX-License-Identifier: Apache-2.0
// The subcommands of the `gcompute` CLI.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gcompute::cli {

/// Runs the CLI on the arguments after argv[0]. Returns the exit status: 0 on success,
/// 2 for a usage error, 1 for any other error (printed to `err` with its status code).
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace gcompute::cli
