// SPDX-License-Identifier: Apache-2.0
// A minimal HTTP server for GET /metrics (Prometheus text format 0.0.4).
//
// prometheus-cpp's Exposer runs on civetweb, whose threads get a small fixed stack; with the
// CUDA libraries linked in, the process's static TLS no longer fits and pthread_create fails
// (EINVAL), so the endpoint could never start in CUDA builds. This exporter uses one ordinary
// std::thread and answers one short request per connection.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"

namespace gcompute::server {

class HttpExporter {
 public:
  /// Listens on `address` ("HOST:PORT"; port 0 picks one) and serves the collectables' metrics
  /// at /metrics (404 elsewhere). The collectables must outlive the exporter.
  static absl::StatusOr<std::unique_ptr<HttpExporter>> start(
      const std::string& address, std::vector<std::shared_ptr<prometheus::Collectable>> sources);
  ~HttpExporter();  ///< stops accepting and joins the thread

  int port() const { return port_; }

 private:
  HttpExporter(int fd, int port, std::vector<std::shared_ptr<prometheus::Collectable>> sources);
  void serve();
  void answer(int client) const;

  int fd_;
  int port_;
  std::vector<std::shared_ptr<prometheus::Collectable>> sources_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace gcompute::server
