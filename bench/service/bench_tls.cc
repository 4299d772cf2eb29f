// SPDX-License-Identifier: Apache-2.0
// What TLS costs on the service path (CPU backend, runs anywhere): the floor of any call (a
// GetServerInfo round trip) and a 256 MiB chunked upload, against three in-process servers on
// 127.0.0.1 measured in one run, interleaved repetition by repetition: plaintext, TLS, and
// mutual TLS with a bearer token. Certificates come from deploy/tls/make-dev-certs.sh (P-256).
//
//   bench_tls [CALLS=2000] [UPLOADS=5]
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gcompute/client/client.hpp"
#include "security/tokens.hpp"
#include "server.hpp"

namespace {

namespace fs = std::filesystem;
using gcompute::client::Client;
using gcompute::client::ClientOptions;
using gcompute::client::HostMatrix;
using Clock = std::chrono::steady_clock;

struct Setup {
  const char* name;
  std::unique_ptr<gcompute::server::Server> server;
  std::unique_ptr<Client> client;
  std::vector<double> call_us;
  std::vector<double> upload_s;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int uploads = argc > 2 ? std::atoi(argv[2]) : 5;
  // The backend of the three servers (cpu or cuda), and where deploy/ is when this binary runs
  // away from its source tree (the GPU machine).
  const std::string device = argc > 3 ? argv[3] : "cpu";
  const char* source_env = std::getenv("GCOMPUTE_SOURCE_DIR");
  const std::string source = source_env != nullptr ? source_env : GCOMPUTE_SOURCE_DIR;
  char tmpl[] = "/tmp/gcompute-bench-tls-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  const std::string make = source + "/deploy/tls/make-dev-certs.sh " + dir.string() + " >/dev/null";
  if (std::system(make.c_str()) != 0) {
    std::fprintf(stderr, "make-dev-certs.sh failed\n");
    return 1;
  }
  const std::string token = "bench-token-0123456789abcdef";
  std::ofstream(dir / "tokens") << "bench " << gcompute::server::sha256_hex(token) << "\n";

  std::vector<Setup> setups;
  for (const char* name : {"plaintext", "TLS", "mutual TLS + token"}) {
    gcompute::server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.metrics_listen = "";
    o.device = device;
    o.stored_matrix_quota_bytes = 1ull << 30;
    ClientOptions co;
    const std::string mode = name;
    if (mode != "plaintext") {
      o.security.tls_cert = (dir / "server.crt").string();
      o.security.tls_key = (dir / "server.key").string();
      co.tls_ca = (dir / "ca.crt").string();
    }
    if (mode == "mutual TLS + token") {
      o.security.tls_client_ca = (dir / "ca.crt").string();
      o.security.auth_tokens = (dir / "tokens").string();
      co.tls_cert = (dir / "client.crt").string();
      co.tls_key = (dir / "client.key").string();
      co.token = token;
    }
    auto server = gcompute::server::Server::create(o);
    if (!server.ok()) {
      std::fprintf(stderr, "%s: %s\n", name, std::string(server.status().message()).c_str());
      return 1;
    }
    co.target = "127.0.0.1:" + std::to_string((*server)->port());
    Setup s{name, *std::move(server), std::make_unique<Client>(co), {}, {}};
    setups.push_back(std::move(s));
  }

  // 256 MiB of f64: 4096 x 8192.
  HostMatrix m;
  m.rows = 4096;
  m.cols = 8192;
  m.dtype = gcompute::client::DType::kF64;
  m.data.assign(m.expected_bytes(), '\x5a');

  for (Setup& s : setups) {  // warm-up: connection, handshake, first upload
    for (int i = 0; i < 50; ++i) (void)s.client->server_info();
  }
  for (int rep = 0; rep < uploads; ++rep) {
    for (Setup& s : setups) {
      const auto t0 = Clock::now();
      auto stored = s.client->upload_matrix(m);
      const double sec = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!stored.ok()) {
        std::fprintf(stderr, "%s upload: %s\n", s.name,
                     std::string(stored.status().message()).c_str());
        return 1;
      }
      if (rep > 0) s.upload_s.push_back(sec);  // the first one warms the buffers
      (void)s.client->delete_matrix(stored->ref);
    }
  }
  constexpr int kBlock = 100;
  for (int done = 0; done < calls; done += kBlock) {
    for (Setup& s : setups) {
      for (int i = 0; i < kBlock; ++i) {
        const auto t0 = Clock::now();
        auto info = s.client->server_info();
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (!info.ok()) {
          std::fprintf(stderr, "%s call: %s\n", s.name,
                       std::string(info.status().message()).c_str());
          return 1;
        }
        s.call_us.push_back(us);
      }
    }
  }
  std::printf(
      "| setup | call floor, median us (%d calls) | 256 MiB upload, median s (%d) | upload MiB/s "
      "|\n",
      calls, uploads - 1);
  std::printf("|---|---:|---:|---:|\n");
  for (Setup& s : setups) {
    const double up = median(s.upload_s);
    std::printf("| %s | %.1f | %.3f | %.0f |\n", s.name, median(s.call_us), up, 256.0 / up);
  }
  setups.clear();
  fs::remove_all(dir);
  return 0;
}
