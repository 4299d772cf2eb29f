// SPDX-License-Identifier: Apache-2.0
// Command-line parsing of the `gcompute` CLI: global options (accepted before or after the
// subcommand), subcommands with positional arguments and their own options, --help texts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/progress.hpp"

namespace gcompute::cli {

/// One parsed command line.
struct CommandLine {
  std::string server = "127.0.0.1:50051";
  std::optional<absl::Duration> timeout;
  std::optional<uint64_t> inline_limit_bytes;
  std::optional<uint64_t> max_message_bytes;
  /// TLS and authentication (docs/security.md); empty: not given.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;
  std::string token_file;
  /// --progress: bars on stderr for transfers and long operations.
  ProgressMode progress = ProgressMode::kAuto;
  /// --no-shared-memory: send operands and receive results over the wire even when the server
  /// runs on this host.
  bool shared_memory = true;
  bool help = false;
  /// The subcommand: {"matmul"}, {"graph", "create"}, ... Empty when only --help was given.
  std::vector<std::string> command;
  std::vector<std::string> positionals;
  /// Subcommand options by name without "--"; flags map to "".
  std::map<std::string, std::string> options;

  bool has(const std::string& name) const { return options.count(name) != 0; }
  /// The option's value, or `fallback` when it was not given.
  std::string get(const std::string& name, const std::string& fallback = "") const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

/// Parses the arguments after argv[0]. With --help, positional counts are not checked.
absl::StatusOr<CommandLine> parse_command_line(const std::vector<std::string>& args);

/// The help text of a subcommand ({} or an unknown command: the overview; {"graph"}: the
/// graph subcommands).
std::string help_text(const std::vector<std::string>& command);

}  // namespace gcompute::cli
