// SPDX-License-Identifier: Apache-2.0
// TLS, mutual TLS, bearer tokens and tenants against an in-process server, with certificates
// made by openssl for this run (tests/support/make_test_certs.sh): refused plaintext, wrong-CA
// and expired clients; certificate rotation without restart; missing, wrong and revoked
// tokens; two tenants that cannot see each other's matrices and graphs; per-tenant quotas.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gcompute/client/client.hpp"
#include "security/credentials.hpp"
#include "security/tokens.hpp"
#include "service_fixture.hpp"

namespace gcompute::service_test {
namespace {

namespace fs = std::filesystem;
using client::Client;
using client::ClientOptions;
using client::DType;
using client::HostMatrix;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
  }
  fs::rename(tmp, p);  // readers see the old file or the new one, never half of one
}

/// A directory of certificates made for this test binary's run.
class Certs {
 public:
  Certs() {
    char tmpl[] = "/tmp/gcompute-tls-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    const std::string cmd = std::string(GCOMPUTE_SOURCE_DIR) +
                            "/tests/support/make_test_certs.sh " + dir_.string() + " 2>&1";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  ~Certs() { fs::remove_all(dir_); }
  bool ok() const { return ok_; }
  fs::path operator/(const std::string& name) const { return dir_ / name; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  bool ok_ = false;
};

Certs& certs() {
  static Certs* c = new Certs();  // shared by every test; removed by the OS tmp cleaner
  return *c;
}

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(certs().ok()) << "make_test_certs.sh failed"; }
};

/// A channel of its own (no subchannel shared with other channels of the process), so each
/// check makes a new handshake.
std::shared_ptr<grpc::Channel> fresh_channel(const std::string& target,
                                             std::shared_ptr<grpc::ChannelCredentials> creds) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(target, std::move(creds), args);
}

std::shared_ptr<grpc::ChannelCredentials> tls_creds(const fs::path& ca, const fs::path& cert = {},
                                                    const fs::path& key = {}) {
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = read_text(ca);
  if (!cert.empty()) {
    o.pem_cert_chain = read_text(cert);
    o.pem_private_key = read_text(key);
  }
  return grpc::SslCredentials(o);
}

/// GetServerInfo over `channel` (5 s deadline), optionally with a bearer token.
grpc::Status info_call(const std::shared_ptr<grpc::Channel>& channel,
                       const std::string& token = "") {
  auto stub = v1::Compute::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  v1::GetServerInfoRequest req;
  v1::GetServerInfoResponse resp;
  return stub->GetServerInfo(&ctx, req, &resp);
}

ServerOptions tls_options() {
  ServerOptions o = test_options();
  o.security.tls_cert = (certs() / "server.crt").string();
  o.security.tls_key = (certs() / "server.key").string();
  return o;
}

std::unique_ptr<server::Server> start(const ServerOptions& o) {
  auto s = server::Server::create(o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

std::string target_of(const server::Server& s) {
  return "127.0.0.1:" + std::to_string(s.port());
}

HostMatrix f64_matrix(int64_t rows, int64_t cols, double first) {
  HostMatrix m;
  m.rows = rows;
  m.cols = cols;
  m.dtype = DType::kF64;
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<double>(i);
  m.data.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  return m;
}

// ---- transport ------------------------------------------------------------------------------

TEST_F(SecurityTest, TlsServesTlsClientsOnly) {
  auto s = start(tls_options());
  ASSERT_NE(s, nullptr);
  const std::string t = target_of(*s);
  EXPECT_TRUE(is_ok(info_call(fresh_channel(t, tls_creds(certs() / "ca.crt")))));
  EXPECT_TRUE(has_status(info_call(fresh_channel(t, grpc::InsecureChannelCredentials())),
                         grpc::UNAVAILABLE));
  // A client that trusts another CA refuses the server's certificate.
  EXPECT_TRUE(has_status(info_call(fresh_channel(t, tls_creds(certs() / "other/ca.crt"))),
                         grpc::UNAVAILABLE));

  // The client library over TLS, and a replica list of the same server twice over TLS.
  ClientOptions co;
  co.target = t + ",localhost:" + std::to_string(s->port());
  co.tls_ca = (certs() / "ca.crt").string();
  Client c(co);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(c.server_info_at(i).ok()) << i;
  auto r = c.transpose(f64_matrix(2, 3, 1));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->matrix.rows, 3);
}

TEST_F(SecurityTest, MutualTlsRefusesMissingExpiredAndForeignClientCertificates) {
  ServerOptions o = tls_options();
  o.security.tls_client_ca = (certs() / "ca.crt").string();
  auto s = start(o);
  ASSERT_NE(s, nullptr);
  const std::string t = target_of(*s);
  const fs::path ca = certs() / "ca.crt";
  EXPECT_TRUE(is_ok(
      info_call(fresh_channel(t, tls_creds(ca, certs() / "client.crt", certs() / "client.key")))));
  EXPECT_FALSE(info_call(fresh_channel(t, tls_creds(ca))).ok()) << "no client certificate";
  EXPECT_FALSE(
      info_call(fresh_channel(t, tls_creds(ca, certs() / "expired.crt", certs() / "expired.key")))
          .ok())
      << "expired client certificate";
  EXPECT_FALSE(info_call(fresh_channel(t, tls_creds(ca, certs() / "other/client.crt",
                                                    certs() / "other/client.key")))
                   .ok())
      << "client certificate of another CA";
  EXPECT_FALSE(info_call(fresh_channel(t, grpc::InsecureChannelCredentials())).ok());
}

TEST_F(SecurityTest, RotatedServerCertificateServesNewHandshakesWithoutRestart) {
  // The server's files live in a directory of their own, overwritten below.
  const fs::path dir = certs().dir() / "rotating";
  fs::create_directories(dir);
  fs::copy_file(certs() / "server.crt", dir / "server.crt", fs::copy_options::overwrite_existing);
  fs::copy_file(certs() / "server.key", dir / "server.key", fs::copy_options::overwrite_existing);
  ServerOptions o = test_options();
  o.security.tls_cert = (dir / "server.crt").string();
  o.security.tls_key = (dir / "server.key").string();
  o.security.tls_refresh_seconds = 1;
  auto s = start(o);
  ASSERT_NE(s, nullptr);
  const std::string t = target_of(*s);
  ASSERT_TRUE(is_ok(info_call(fresh_channel(t, tls_creds(certs() / "ca.crt")))));
  ASSERT_FALSE(info_call(fresh_channel(t, tls_creds(certs() / "other/ca.crt"))).ok());

  // The key first: a watcher that reads between the two renames sees a mismatched pair,
  // refuses it and keeps the old one until its next check.
  write_text(dir / "server.key", read_text(certs() / "other/server.key"));
  write_text(dir / "server.crt", read_text(certs() / "other/server.crt"));
  bool rotated = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!rotated && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    rotated = info_call(fresh_channel(t, tls_creds(certs() / "other/ca.crt"))).ok();
  }
  EXPECT_TRUE(rotated) << "new handshakes still present the old certificate after 10 s";
  EXPECT_FALSE(info_call(fresh_channel(t, tls_creds(certs() / "ca.crt"))).ok())
      << "the old certificate is still served";
}

TEST_F(SecurityTest, FlagCombinationsAreCheckedAtStart) {
  auto fails_with = [](ServerOptions o, const std::string& part) {
    auto s = server::Server::create(o);
    if (s.ok()) return ::testing::AssertionFailure() << "started; expected: " << part;
    if (std::string(s.status().message()).find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << s.status();
    }
    return ::testing::AssertionSuccess();
  };
  // Each case: the options it starts from, what it changes, and a part of the start error.
  struct Case {
    ServerOptions base;
    std::function<void(ServerOptions&)> change;
    std::string error;
  };
  const Case cases[] = {
      {test_options(), [](ServerOptions& o) { o.listen = "0.0.0.0:0"; }, "not a loopback address"},
      // --insecure passes the check; binding a documentation address (not local) then fails.
      {test_options(),
       [](ServerOptions& o) {
         o.listen = "192.0.2.1:0";
         o.security.insecure = true;
       },
       "cannot listen on 192.0.2.1:0"},
      {test_options(),
       [](ServerOptions& o) { o.security.tls_cert = (certs() / "server.crt").string(); },
       "--tls-cert and --tls-key go together"},
      {tls_options(), [](ServerOptions& o) { o.security.tenant_from_cert = true; },
       "--tenant-from-cert needs mutual TLS"},
      {tls_options(),
       [](ServerOptions& o) { o.security.tls_key = (certs() / "missing.key").string(); },
       "--tls-key"},
      {tls_options(),
       [](ServerOptions& o) {
         o.security.tls_client_ca = (certs() / "ca.crt").string();
         o.security.tenant_from_cert = true;
         o.security.tenant_cert_field = "ip";
       },
       "--tenant-cert-field is \"ip\"; expected cn, dns, uri or email"},
      {tls_options(),
       [](ServerOptions& o) {
         o.security.tls_client_ca = (certs() / "ca.crt").string();
         o.security.tenant_cert_field = "uri";
       },
       "--tenant-cert-field and --tenant-cert-prefix need --tenant-from-cert"},
  };
  for (const Case& c : cases) {
    ServerOptions o = c.base;
    c.change(o);
    EXPECT_TRUE(fails_with(o, c.error));
  }

  EXPECT_TRUE(server::is_loopback_address("127.0.0.1:1"));
  EXPECT_TRUE(server::is_loopback_address("[::1]:1"));
  EXPECT_TRUE(server::is_loopback_address("localhost:1"));
  EXPECT_FALSE(server::is_loopback_address("0.0.0.0:1"));
  EXPECT_FALSE(server::is_loopback_address("[::]:1"));
  EXPECT_FALSE(server::is_loopback_address("10.0.0.1:1"));
}

// ---- tokens ---------------------------------------------------------------------------------

constexpr char kTokenA[] = "token-of-tenant-a-0123456789";
constexpr char kTokenB[] = "token-of-tenant-b-9876543210";
constexpr char kTokenC[] = "token-of-tenant-c-5555555555";

/// A tokens file for tenant-a (no overrides), tenant-b (small quotas) and tenant-c (nothing
/// may run).
std::string tokens_text(bool with_a = true) {
  std::string t = "# tenant  sha256(token)  overrides\n";
  if (with_a) t += "tenant-a " + server::sha256_hex(kTokenA) + "\n";
  t += "tenant-b " + server::sha256_hex(kTokenB) + "  stored_bytes=1000 graphs=1  # small\n";
  t += "tenant-c " + server::sha256_hex(kTokenC) + " running=0\n";
  return t;
}

struct TokenServer {
  fs::path tokens;
  std::unique_ptr<server::Server> server;
  std::string target() const { return target_of(*server); }
  Client client(const std::string& token) const {
    ClientOptions co;
    co.target = target();
    co.token = token;
    co.default_timeout = absl::Seconds(10);
    return Client(co);
  }
};

TokenServer start_token_server(ServerOptions o = test_options()) {
  TokenServer ts;
  static int n = 0;
  ts.tokens = certs().dir() / ("tokens-" + std::to_string(n++));
  write_text(ts.tokens, tokens_text());
  o.security.auth_tokens = ts.tokens.string();
  o.security.auth_tokens_refresh_ms = 20;
  ts.server = start(o);
  return ts;
}

TEST_F(SecurityTest, TokensMissingWrongAndRevokedAreUnauthenticatedAlike) {
  TokenServer ts = start_token_server();
  ASSERT_NE(ts.server, nullptr);
  auto channel = fresh_channel(ts.target(), grpc::InsecureChannelCredentials());
  const grpc::Status missing = info_call(channel);
  EXPECT_TRUE(has_status(missing, grpc::UNAUTHENTICATED, {"authorization: Bearer TOKEN"}));
  const grpc::Status wrong =
      info_call(fresh_channel(ts.target(), grpc::InsecureChannelCredentials()), "not-a-token");
  EXPECT_TRUE(has_status(wrong, grpc::UNAUTHENTICATED));
  EXPECT_EQ(wrong.error_message(), missing.error_message()) << "messages must not differ";
  // Health stays open.
  EXPECT_EQ(health_check(channel, ""), 1);
  EXPECT_TRUE(
      is_ok(info_call(fresh_channel(ts.target(), grpc::InsecureChannelCredentials()), kTokenA)));
  // The client library sends the token with every call.
  Client a = ts.client(kTokenA);
  EXPECT_TRUE(a.transpose(f64_matrix(1, 1, 5)).ok());
  EXPECT_FALSE(ts.client("").server_info().ok());

  // Revoke tenant-a's token by editing the file.
  write_text(ts.tokens, tokens_text(/*with_a=*/false));
  bool revoked = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!revoked && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    revoked = info_call(fresh_channel(ts.target(), grpc::InsecureChannelCredentials()), kTokenA)
                  .error_code() == grpc::UNAUTHENTICATED;
  }
  EXPECT_TRUE(revoked);
  // Also on a connection that authenticated before.
  EXPECT_EQ(a.server_info().status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(
      is_ok(info_call(fresh_channel(ts.target(), grpc::InsecureChannelCredentials()), kTokenB)));
  // A broken file keeps the last good tokens.
  write_text(ts.tokens, "tenant-b not-hex\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(
      is_ok(info_call(fresh_channel(ts.target(), grpc::InsecureChannelCredentials()), kTokenB)));
}

TEST_F(SecurityTest, TokensOverTls) {
  TokenServer ts = start_token_server(tls_options());
  ASSERT_NE(ts.server, nullptr);
  const auto creds = tls_creds(certs() / "ca.crt");
  EXPECT_TRUE(has_status(info_call(fresh_channel(ts.target(), creds)), grpc::UNAUTHENTICATED));
  EXPECT_TRUE(is_ok(info_call(fresh_channel(ts.target(), creds), kTokenB)));
}

// ---- tenants --------------------------------------------------------------------------------

TEST_F(SecurityTest, TenantsCannotReadListEditOrDeleteEachOthersData) {
  TokenServer ts = start_token_server();
  ASSERT_NE(ts.server, nullptr);
  Client a = ts.client(kTokenA);
  Client b = ts.client(kTokenB);

  const HostMatrix m = f64_matrix(3, 5, 7);
  auto stored = a.upload_matrix(m);
  ASSERT_TRUE(stored.ok()) << stored.status();
  const client::MatrixRef ref = stored->ref;
  EXPECT_EQ(ref.id.size(), 2u + 32u) << ref.id;

  EXPECT_EQ(b.download_matrix(ref).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b.transpose(ref).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b.matmul(ref, f64_matrix(5, 1, 0)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b.delete_matrix(ref).code(), absl::StatusCode::kNotFound);
  // Guessed and neighbouring refs are NOT_FOUND as well.
  std::string next = ref.id;
  next.back() = next.back() == '0' ? '1' : '0';
  EXPECT_EQ(a.download_matrix({next}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b.download_matrix({next}).status().code(), absl::StatusCode::kNotFound);
  auto back = a.download_matrix(ref);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, m.data);

  ASSERT_TRUE(a.create_graph("shared-name", 3, {{0, {0}, {1}, 2.0}}).ok());
  auto b_list = b.list_graphs();
  ASSERT_TRUE(b_list.ok());
  EXPECT_TRUE(b_list->empty());
  EXPECT_EQ(b.get_graph("shared-name").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(b.apply_edits("shared-name", {client::AddVertex{}}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(b.delete_graph("shared-name").code(), absl::StatusCode::kNotFound);
  // b's graph of the same name is b's own.
  ASSERT_TRUE(b.create_graph("shared-name", 1, {}).ok());
  auto a_graph = a.get_graph("shared-name");
  ASSERT_TRUE(a_graph.ok());
  EXPECT_EQ(a_graph->info.num_vertices, 3u);
  auto a_list = a.list_graphs();
  ASSERT_TRUE(a_list.ok());
  ASSERT_EQ(a_list->size(), 1u);
  EXPECT_EQ((*a_list)[0].num_vertices, 3u);
}

TEST_F(SecurityTest, OneConnectionNeverLendsOneTenantsIdentityToAnother) {
  // gRPC shares the authentication state of a connection among its calls: a second token on
  // the same connection must be refused, or act as its own tenant, never as the first.
  TokenServer ts = start_token_server();
  ASSERT_NE(ts.server, nullptr);
  auto channel = fresh_channel(ts.target(), grpc::InsecureChannelCredentials());
  auto stub = v1::Compute::NewStub(channel);
  auto call_ctx = [](grpc::ClientContext& ctx, const char* token) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    ctx.AddMetadata("authorization", std::string("Bearer ") + token);
  };
  {
    grpc::ClientContext ctx;
    call_ctx(ctx, kTokenA);
    v1::CreateGraphRequest req;
    req.set_graph_id("only-a");
    req.set_num_vertices(2);
    v1::CreateGraphResponse resp;
    ASSERT_TRUE(is_ok(stub->CreateGraph(&ctx, req, &resp)));
  }
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    call_ctx(ctx, kTokenB);
    v1::GetGraphRequest req;
    req.set_graph_id("only-a");
    v1::GetGraphResponse resp;
    const grpc::Status st = stub->GetGraph(&ctx, req, &resp);
    EXPECT_TRUE(st.error_code() == grpc::UNAUTHENTICATED || st.error_code() == grpc::NOT_FOUND)
        << code_name(st.error_code()) << ": " << st.error_message();
    grpc::ClientContext list_ctx;
    call_ctx(list_ctx, kTokenB);
    v1::ListGraphsResponse list;
    const grpc::Status ls = stub->ListGraphs(&list_ctx, v1::ListGraphsRequest(), &list);
    if (ls.ok()) {
      EXPECT_EQ(list.graphs_size(), 0);
    } else {
      EXPECT_EQ(ls.error_code(), grpc::UNAUTHENTICATED) << ls.error_message();
    }
  }
  // The first tenant keeps working on that connection.
  grpc::ClientContext ctx;
  call_ctx(ctx, kTokenA);
  v1::GetGraphRequest req;
  req.set_graph_id("only-a");
  v1::GetGraphResponse resp;
  EXPECT_TRUE(is_ok(stub->GetGraph(&ctx, req, &resp)));
}

/// A client of `server` over mutual TLS with the test CA's certificate `name` (.crt, .key).
Client mtls_client(const server::Server& server, const std::string& name) {
  ClientOptions co;
  co.target = target_of(server);
  co.tls_ca = (certs() / "ca.crt").string();
  co.tls_cert = (certs() / (name + ".crt")).string();
  co.tls_key = (certs() / (name + ".key")).string();
  return Client(co);
}

TEST_F(SecurityTest, TenantFromClientCertificate) {
  ServerOptions o = tls_options();
  o.security.tls_client_ca = (certs() / "ca.crt").string();
  o.security.tenant_from_cert = true;
  auto s = start(o);
  ASSERT_NE(s, nullptr);
  auto client_for = [&](const std::string& name) { return mtls_client(*s, name); };
  Client a = client_for("client");  // CN tenant-a
  Client b = client_for("client-b");
  auto stored = a.upload_matrix(f64_matrix(2, 2, 1));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(b.download_matrix(stored->ref).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(a.download_matrix(stored->ref).ok());
}

TEST_F(SecurityTest, TenantFromSubjectAlternativeNameAfterItsPrefix) {
  ServerOptions o = tls_options();
  o.security.tls_client_ca = (certs() / "ca.crt").string();
  o.security.tenant_from_cert = true;
  o.security.tenant_cert_field = "uri";
  o.security.tenant_cert_prefix = "spiffe://gcompute.test/tenant/";
  auto s = start(o);
  ASSERT_NE(s, nullptr);
  auto client_for = [&](const std::string& name) { return mtls_client(*s, name); };
  // uri-1 and uri-2 share their common name; their URIs make them different tenants.
  Client u1 = client_for("uri-1");
  Client u2 = client_for("uri-2");
  auto stored = u1.upload_matrix(f64_matrix(2, 2, 1));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(u1.download_matrix(stored->ref).ok());
  EXPECT_EQ(u2.download_matrix(stored->ref).status().code(), absl::StatusCode::kNotFound);

  // No URI with the prefix (a common name only), or two tenants in one certificate.
  auto refused = [&](const std::string& name, const std::string& part) {
    auto r = client_for(name).upload_matrix(f64_matrix(1, 1, 1));
    if (r.status().code() != absl::StatusCode::kUnauthenticated) {
      return ::testing::AssertionFailure() << name << ": " << r.status();
    }
    if (std::string(r.status().message()).find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << name << ": " << r.status();
    }
    return ::testing::AssertionSuccess();
  };
  const std::string rule =
      "exactly one subject alternative name (uri) starting with "
      "\"spiffe://gcompute.test/tenant/\" naming a tenant; it names ";
  EXPECT_TRUE(refused("client", rule + "0"));
  EXPECT_TRUE(refused("uri-both", rule + "2"));
}

TEST_F(SecurityTest, QuotasPerTenantNameTheTenantAndQuota) {
  ServerOptions o = test_options();
  o.security.default_quotas.graphs = 2;
  TokenServer ts = start_token_server(o);
  ASSERT_NE(ts.server, nullptr);
  Client a = ts.client(kTokenA);
  Client b = ts.client(kTokenB);
  Client c = ts.client(kTokenC);

  // stored_bytes=1000 for tenant-b: 125 doubles fit, 126 do not.
  auto fits = b.upload_matrix(f64_matrix(1, 125, 0));
  ASSERT_TRUE(fits.ok()) << fits.status();
  auto over = b.upload_matrix(f64_matrix(1, 1, 0));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("tenant-b"), std::string::npos) << over.status();
  EXPECT_TRUE(a.upload_matrix(f64_matrix(1, 200, 0)).ok()) << "tenant-a has no byte quota";

  // graphs=1 for tenant-b (override), 2 for the others (default).
  ASSERT_TRUE(b.create_graph("g1", 1, {}).ok());
  auto g2 = b.create_graph("g2", 1, {});
  EXPECT_EQ(g2.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(g2.status().message().find("tenant-b"), std::string::npos) << g2.status();
  ASSERT_TRUE(a.create_graph("g1", 1, {}).ok());
  ASSERT_TRUE(a.create_graph("g2", 1, {}).ok());
  EXPECT_EQ(a.create_graph("g3", 1, {}).status().code(), absl::StatusCode::kResourceExhausted);

  // running=0 for tenant-c: nothing it submits runs; others are unaffected.
  auto refused = c.transpose(f64_matrix(2, 2, 0));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("tenant-c"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("running=0"), std::string::npos) << refused.status();
  EXPECT_TRUE(a.transpose(f64_matrix(2, 2, 0)).ok());
}

TEST_F(SecurityTest, JobsOfTwoTenantsTakeTurnsUnderABacklogOfAThousand) {
  ServerOptions o = test_options();
  o.workers = 1;
  TokenServer ts = start_token_server(o);
  ASSERT_NE(ts.server, nullptr);
  Client a = ts.client(kTokenA);
  Client b = ts.client(kTokenB);
  // Tenant a occupies the one worker, then queues 1,000 jobs; tenant b then queues one.
  HostMatrix graph;
  graph.rows = graph.cols = 2000;  // seconds of CPU work; cancelled once all jobs are queued
  graph.dtype = DType::kF32;
  graph.data.assign(static_cast<std::size_t>(graph.rows * graph.cols) * sizeof(float), '\0');
  auto blocker = a.submit_apsp(client::ApspGraph::dense(graph), false);
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  while (a.get_job(*blocker)->state == "QUEUED") {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<std::string> backlog;
  for (int i = 0; i < 1000; ++i) {
    auto id = a.submit_transpose(f64_matrix(1, 1, i));
    ASSERT_TRUE(id.ok()) << id.status();
    backlog.push_back(*id);
  }
  ASSERT_EQ(a.get_job(*blocker)->state, "RUNNING") << "the backlog did not queue behind it";
  auto other = b.submit_transpose(f64_matrix(1, 1, -1));
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(a.cancel_job(*blocker).ok());
  auto done = b.watch_job(*other, nullptr);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->state, "SUCCEEDED");
  // Round-robin between tenants: at most one of a's queued jobs runs before b's.
  int ahead = 0;
  for (const std::string& id : backlog) {
    auto j = a.watch_job(id, nullptr);
    ASSERT_TRUE(j.ok()) << j.status();
    ASSERT_EQ(j->state, "SUCCEEDED");
    if (j->finished_unix_ms < done->started_unix_ms) ++ahead;
  }
  EXPECT_LE(ahead, 1);
}

TEST_F(SecurityTest, MetricsCarryTheTenant) {
  TokenServer ts = start_token_server();
  ASSERT_NE(ts.server, nullptr);
  Client a = ts.client(kTokenA);
  Client b = ts.client(kTokenB);
  ASSERT_TRUE(a.upload_matrix(f64_matrix(1, 100, 0)).ok());
  ASSERT_TRUE(b.transpose(f64_matrix(300, 300, 0)).ok());
  EXPECT_EQ(b.download_matrix({"m-00000000000000000000000000000000"}).status().code(),
            absl::StatusCode::kNotFound);
  // The scrape may race the end of the upload: poll briefly.
  std::vector<Sample> samples;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    samples = parse_metrics(http_get(ts.server->metrics_port(), "/metrics"));
    if (metric_value(samples, "gcompute_tenant_stored_matrix_bytes", {{"tenant", "tenant-a"}}) ==
        800) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(metric_value(samples, "gcompute_tenant_stored_matrix_bytes", {{"tenant", "tenant-a"}}),
            800);
  EXPECT_EQ(metric_value(samples, "gcompute_tenant_stored_matrix_bytes", {{"tenant", "tenant-b"}}),
            0);
  EXPECT_GE(metric_value(samples, "gcompute_tenant_requests_total", {{"tenant", "tenant-b"}}), 2);
  EXPECT_EQ(metric_value(samples, "gcompute_tenant_errors_total", {{"tenant", "tenant-b"}}), 1);
  EXPECT_EQ(metric_value(samples, "gcompute_tenant_errors_total", {{"tenant", "tenant-a"}}), 0);
  EXPECT_GT(metric_value(samples, "gcompute_tenant_device_seconds_total", {{"tenant", "tenant-b"}}),
            0);
  EXPECT_EQ(metric_value(samples, "gcompute_tenant_device_seconds_total", {{"tenant", "tenant-a"}}),
            0);
}

TEST(TokenTable, ParsesCommentsOverridesAndRejectsBadLines) {
  server::ops::TenantQuotas defaults;
  defaults.graphs = 7;
  const std::string d1 = server::sha256_hex("one");
  const std::string d2 = server::sha256_hex("two");
  auto t = server::TokenTable::parse(
      "# comment\n\n  alpha " + d1 + " graphs=3 queued=4 # trailing\nbeta\t" + d2 + "\n", defaults);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tenant_of_digest.at(d1), "alpha");
  EXPECT_EQ(t->tenant_of_digest.at(d2), "beta");
  EXPECT_EQ(t->quotas.at("alpha").graphs, 3u);
  EXPECT_EQ(t->quotas.at("alpha").queued, 4u);
  EXPECT_EQ(t->quotas.at("beta").graphs, 7u);
  // The digest of "abc" from FIPS 180-2.
  EXPECT_EQ(server::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

  auto bad = [&](const std::string& text, const std::string& part) {
    auto r = server::TokenTable::parse(text, defaults);
    if (r.ok()) return ::testing::AssertionFailure() << "accepted: " << text;
    if (std::string(r.status().message()).find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << r.status();
    }
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(bad("alpha\n", "line 1"));
  EXPECT_TRUE(bad("\nalpha abc\n", "line 2: the second field must be 64 hex digits"));
  EXPECT_TRUE(bad("al/pha " + d1 + "\n", "tenant"));
  EXPECT_TRUE(bad("alpha " + d1 + " color=3\n", "unknown quota"));
  EXPECT_TRUE(bad("alpha " + d1 + " graphs=-1\n", "non-negative integer"));
  EXPECT_TRUE(bad("alpha " + d1 + "\nbeta " + d1 + "\n", "the same token"));
  EXPECT_TRUE(bad("alpha " + d1 + " graphs=1\nalpha " + d2 + " graphs=2\n", "earlier line"));
}

}  // namespace
}  // namespace gcompute::service_test
