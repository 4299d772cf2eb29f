// SPDX-License-Identifier: Apache-2.0
// The `gcompute` command-line client; see docs/cli.md.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return gcompute::cli::run_cli(args, std::cout, std::cerr);
}
