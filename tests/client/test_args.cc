// SPDX-License-Identifier: Apache-2.0
// Argument parsing of the gcompute CLI.
#include "cli/args.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "cli/commands.hpp"

namespace gcompute::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<CommandLine> parse(std::vector<std::string> args) {
  return parse_command_line(args);
}

void expect_error(std::vector<std::string> args, const std::string& what) {
  absl::StatusOr<CommandLine> cl = parse(args);
  ASSERT_FALSE(cl.ok()) << what;
  EXPECT_THAT(std::string(cl.status().message()), HasSubstr(what));
}

TEST(Args, GlobalOptionsBeforeOrAfterTheSubcommand) {
  absl::StatusOr<CommandLine> cl =
      parse({"--server", "10.0.0.1:7000", "matmul", "a.npy", "b.npy", "c.npy", "--timeout=2.5"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->server, "10.0.0.1:7000");
  ASSERT_TRUE(cl->timeout.has_value());
  EXPECT_EQ(*cl->timeout, absl::Milliseconds(2500));
  EXPECT_THAT(cl->command, ElementsAre("matmul"));
  EXPECT_THAT(cl->positionals, ElementsAre("a.npy", "b.npy", "c.npy"));

  cl = parse({"info", "--server=h:1", "--inline-limit", "1024", "--max-message-bytes", "4096"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->server, "h:1");
  EXPECT_EQ(cl->inline_limit_bytes, 1024u);
  EXPECT_EQ(cl->max_message_bytes, 4096u);

  cl = parse({"info"});
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->server, "127.0.0.1:50051");
  EXPECT_FALSE(cl->timeout.has_value());
}

TEST(Args, TlsAndTokenOptions) {
  absl::StatusOr<CommandLine> cl =
      parse({"--tls-ca", "ca.pem", "info", "--tls-cert=c.pem", "--tls-key", "k.pem",
             "--tls-server-name", "gc.example", "--token-file", "t.txt"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->tls_ca, "ca.pem");
  EXPECT_EQ(cl->tls_cert, "c.pem");
  EXPECT_EQ(cl->tls_key, "k.pem");
  EXPECT_EQ(cl->tls_server_name, "gc.example");
  EXPECT_EQ(cl->token_file, "t.txt");
  expect_error({"info", "--tls-ca="}, "--tls-ca is empty");
  expect_error({"info", "--token-file"}, "--token-file needs a value");
}

TEST(Args, SubcommandOptions) {
  absl::StatusOr<CommandLine> cl =
      parse({"matmul", "--precision", "tf32", "a.npy", "--transpose-b", "b.npy", "c.npy"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->get("precision"), "tf32");
  EXPECT_TRUE(cl->has("transpose-b"));
  EXPECT_FALSE(cl->has("transpose-a"));
  EXPECT_THAT(cl->positionals, ElementsAre("a.npy", "b.npy", "c.npy"));

  cl = parse({"svd", "a.npy", "--out", "res", "--no-vectors", "--tol", "1e-9", "--max-sweeps=7"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->get("out"), "res");
  EXPECT_EQ(cl->get("tol"), "1e-9");
  EXPECT_EQ(cl->get("max-sweeps"), "7");
  EXPECT_TRUE(cl->has("no-vectors"));

  cl = parse({"graph", "create", "g1", "--vertices", "5"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_THAT(cl->command, ElementsAre("graph", "create"));
  EXPECT_THAT(cl->positionals, ElementsAre("g1"));
  EXPECT_EQ(cl->get("vertices"), "5");

  cl = parse({"graph", "edit", "g1", "e.jsonl", "--expected-version", "3"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->get("expected-version"), "3");

  cl = parse({"apsp", "g.gr", "d.npy", "--next-hop", "n.npy", "--i32"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_EQ(cl->get("next-hop"), "n.npy");
  EXPECT_TRUE(cl->has("i32"));

  // "--" ends the options: later tokens are positionals even if they start with '-'.
  cl = parse({"transpose", "--", "-in.npy", "out.npy"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_THAT(cl->positionals, ElementsAre("-in.npy", "out.npy"));
}

TEST(Args, Errors) {
  expect_error({}, "no command");
  expect_error({"frobnicate"}, "unknown command 'frobnicate'");
  expect_error({"graph"}, "'graph' needs a subcommand");
  expect_error({"graph", "rename", "a"}, "unknown graph subcommand 'rename'");
  expect_error({"transpose", "a.npy"}, "got 1 argument");
  expect_error({"transpose", "a", "b", "c"}, "got 3 arguments");
  expect_error({"graph", "list", "x"}, "got 1 argument");
  expect_error({"matmul", "a", "b", "c", "--precision", "f8"}, "must be one of");
  expect_error({"matmul", "a", "b", "c", "--precision"}, "--precision needs a value");
  expect_error({"matmul", "a", "b", "c", "--transpose-a=1"}, "takes no value");
  expect_error({"matmul", "a", "b", "c", "--full"}, "unknown option '--full' for 'matmul'");
  expect_error({"--precision", "f32", "matmul", "a", "b", "c"}, "go after the subcommand");
  expect_error({"svd", "a.npy"}, "needs --out");
  expect_error({"svd", "a.npy", "--out", "p", "--max-sweeps", "-1"}, "non-negative integer");
  expect_error({"svd", "a.npy", "--out", "p", "--tol", "abc"}, "non-negative number");
  expect_error({"info", "--timeout", "0"}, "--timeout must be positive");
  expect_error({"info", "-x"}, "unknown option '-x'");
}

TEST(Args, HelpNeedsNoPositionals) {
  absl::StatusOr<CommandLine> cl = parse({"svd", "--help"});
  ASSERT_TRUE(cl.ok()) << cl.status();
  EXPECT_TRUE(cl->help);
  EXPECT_THAT(cl->command, ElementsAre("svd"));
  cl = parse({"--help"});
  ASSERT_TRUE(cl.ok());
  EXPECT_TRUE(cl->command.empty());
  cl = parse({"graph", "-h"});
  ASSERT_TRUE(cl.ok());
  EXPECT_THAT(cl->command, ElementsAre("graph"));
}

TEST(Args, HelpTexts) {
  EXPECT_THAT(help_text({"matmul"}), HasSubstr("converted to f64 on the client"));
  EXPECT_THAT(help_text({"apsp"}), HasSubstr("vertex k of a 1-based file"));
  EXPECT_THAT(help_text({"graph", "edit"}), HasSubstr("decompose_vertex"));
  const std::string overview = help_text({});
  for (const char* cmd : {"transpose", "matmul", "svd", "apsp", "path", "graph create",
                          "graph edit", "graph show", "graph delete", "graph list", "graph apsp",
                          "sssp", "graph sssp", "info", "--server", "--timeout"}) {
    EXPECT_THAT(overview, HasSubstr(cmd));
  }
  const std::string graph = help_text({"graph"});
  EXPECT_THAT(graph, HasSubstr("graph show"));
  EXPECT_THAT(graph, ::testing::Not(HasSubstr("matmul")));
}

TEST(RunCli, ExitStatusAndMessages) {
  std::ostringstream out, err;
  EXPECT_EQ(run_cli({"matmul", "--help"}, out, err), 0);
  EXPECT_THAT(out.str(), HasSubstr("usage: gcompute matmul A.npy B.npy OUT.npy"));
  out.str("");
  EXPECT_EQ(run_cli({"bogus"}, out, err), 2);
  EXPECT_THAT(err.str(), HasSubstr("unknown command 'bogus'"));
  err.str("");
  // A local file error is reported with the file name before anything is sent.
  EXPECT_EQ(
      run_cli({"--server", "127.0.0.1:1", "transpose", "/nonexistent/in.npy", "out.npy"}, out, err),
      1);
  EXPECT_THAT(err.str(), HasSubstr("/nonexistent/in.npy"));
  err.str("");
  // No server listens on port 1: the gRPC status is printed with its code.
  EXPECT_EQ(run_cli({"--server", "127.0.0.1:1", "--timeout", "5", "info"}, out, err), 1);
  EXPECT_THAT(err.str(), HasSubstr("UNAVAILABLE"));
}

}  // namespace
}  // namespace gcompute::cli
