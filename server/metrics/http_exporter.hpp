// SPDX-License-Identifier: Apache-2.0
// A minimal HTTP/1.1 server for GET /metrics (Prometheus text format 0.0.4).
//
// prometheus-cpp's Exposer runs on civetweb, whose threads get a small fixed stack; with the
// CUDA libraries linked in, the process's static TLS no longer fits and pthread_create fails
// (EINVAL), so the endpoint could never start in CUDA builds. This exporter uses one ordinary
// std::thread running a poll() loop over non-blocking sockets: no client, however slow or
// idle, holds it. Every connection answers one request and closes (Connection: close), has
// a total deadline from accept to close, a bounded request size, and a place among a fixed
// number of open connections (a new one displaces the oldest that has not been answered).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"

namespace gcompute::server {

/// Limits of the metrics endpoint. The defaults suit Prometheus (one scrape at a time,
/// a few hundred bytes of request, answered in milliseconds).
struct HttpExporterOptions {
  /// Connections open at once; one more displaces the oldest not yet answered (else the
  /// oldest), so idle connections cannot lock scrapes out.
  int max_connections = 32;
  /// From accept to close: reading the request, writing the answer, and the client's close.
  std::chrono::milliseconds deadline{5000};
  /// Request line and headers; longer requests get 431.
  std::size_t max_request_bytes = 8192;
};

class HttpExporter {
 public:
  /// Listens on `address` ("HOST:PORT"; port 0 picks one) and serves the collectables' metrics
  /// at /metrics (GET and HEAD; 404 elsewhere). The collectables must outlive the exporter.
  static absl::StatusOr<std::unique_ptr<HttpExporter>> start(
      const std::string& address, std::vector<std::shared_ptr<prometheus::Collectable>> sources,
      HttpExporterOptions options = {});
  ~HttpExporter();  ///< stops, closes every connection and joins the thread

  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  int port() const { return port_; }

  /// The complete response (status line, headers, body) to one request head (request line
  /// and headers, without the blank line). A pure function of the head and the metrics.
  std::string respond(std::string_view head) const;

 private:
  struct Connection;
  HttpExporter(int fd, int wake_fd, int port,
               std::vector<std::shared_ptr<prometheus::Collectable>> sources,
               HttpExporterOptions options);
  void serve();
  void accept_pending(std::vector<Connection>& open, std::uint64_t& serial,
                      std::chrono::steady_clock::time_point& paused_until);
  void on_readable(Connection& c) const;
  void on_writable(Connection& c) const;

  const int fd_;
  const int wake_fd_;  // an eventfd: the destructor writes it to end serve()
  const int port_;
  const std::vector<std::shared_ptr<prometheus::Collectable>> sources_;
  const HttpExporterOptions options_;
  std::thread thread_;
};

}  // namespace gcompute::server
