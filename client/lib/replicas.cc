// SPDX-License-Identifier: Apache-2.0
#include "replicas.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gcompute::client {

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t rendezvous_score(const std::string& replica, const std::string& graph_id) {
  // FNV-1a alone is a poor rendezvous score: ids that differ only in their last bytes
  // change only the low bits of the product, so one replica would win them all. The
  // MurmurHash3 fmix64 finaliser spreads every input bit over the whole word.
  uint64_t h = fnv1a64(absl::StrCat(replica, "|", graph_id));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

std::size_t graph_owner(const std::vector<std::string>& replicas, const std::string& graph_id) {
  std::size_t best = 0;
  uint64_t best_score = 0;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    const uint64_t score = rendezvous_score(replicas[i], graph_id);
    if (i == 0 || score > best_score || (score == best_score && replicas[i] < replicas[best])) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

namespace {

/// NAME of "dns:///NAME:PORT" (or "dns://AUTHORITY/NAME:PORT"); "" for other targets.
std::string dns_target_host(const std::string& target) {
  if (target.rfind("dns:", 0) != 0 || target.find(',') != std::string::npos) return "";
  std::string rest = target.substr(4);
  if (rest.rfind("//", 0) == 0) {
    const std::size_t slash = rest.find('/', 2);
    if (slash == std::string::npos) return "";
    rest = rest.substr(slash + 1);
  }
  if (!rest.empty() && rest[0] == '[') {
    const std::size_t close = rest.find(']');
    return close == std::string::npos ? "" : rest.substr(1, close - 1);
  }
  return rest.substr(0, rest.rfind(':'));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> expand_target(const std::string& target) {
  static constexpr char kDns[] = "dns:";
  if (target.rfind(kDns, 0) == 0 && target.find(',') == std::string::npos) {
    // dns:///NAME:PORT or dns://AUTHORITY/NAME:PORT (the authority is ignored: the system
    // resolver answers).
    std::string rest = target.substr(std::strlen(kDns));
    if (rest.rfind("//", 0) == 0) {
      const std::size_t slash = rest.find('/', 2);
      if (slash == std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("target '", target, "': expected dns:///NAME:PORT"));
      }
      rest = rest.substr(slash + 1);
    }
    std::string host;
    std::string port;
    if (!rest.empty() && rest[0] == '[') {
      const std::size_t close = rest.find(']');
      if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
        return absl::InvalidArgumentError(absl::StrCat("target '", target, "': bad [IPv6]:PORT"));
      }
      host = rest.substr(1, close - 1);
      port = rest.substr(close + 2);
    } else {
      const std::size_t colon = rest.rfind(':');
      if (colon == std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("target '", target, "' has no port (dns:///NAME:PORT)"));
      }
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
    }
    if (host.empty() || port.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("target '", target, "': empty name or port"));
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot resolve '", host, "': ", gai_strerror(rc)));
    }
    std::set<std::string> names;
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      if (a->ai_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
        names.insert(absl::StrCat(text, ":", port));
      } else if (a->ai_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
        names.insert(absl::StrCat("[", text, "]:", port));
      }
    }
    freeaddrinfo(found);
    if (names.empty()) {
      return absl::UnavailableError(absl::StrCat("'", host, "' resolved to no addresses"));
    }
    return std::vector<std::string>(names.begin(), names.end());
  }
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(target, ',')) {
    const std::string name(absl::StripAsciiWhitespace(part));
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("target '", target, "' has an empty entry"));
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", target, "' names '", name, "' twice"));
    }
    out.push_back(name);
  }
  return out;
}

ReplicaSet::ReplicaSet(const std::string& target, grpc::ChannelArguments args,
                       const absl::StatusOr<ChannelSecurity>& security,
                       const std::string& tls_server_name) {
  absl::StatusOr<std::vector<std::string>> expanded = expand_target(target);
  if (!security.ok()) {
    init_error_ = security.status();
    names_ = {target};
  } else if (expanded.ok()) {
    names_ = *std::move(expanded);
  } else {
    init_error_ = expanded.status();
    names_ = {target};
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      security.ok() ? security->credentials : grpc::InsecureChannelCredentials();
  // dns:/// targets become one channel per address; their certificates name the DNS name.
  std::string server_name = tls_server_name;
  if (security.ok() && security->tls && server_name.empty()) server_name = dns_target_host(target);
  if (!server_name.empty()) args.SetSslTargetNameOverride(server_name);
  // Many short-lived clients (CLI invocations) would all start at replica 0: start each
  // client's round robin at a random replica instead.
  next_.store(static_cast<std::size_t>(std::random_device{}()), std::memory_order_relaxed);
  for (const std::string& name : names_) {
    Replica r;
    r.name = name;
    r.channel = grpc::CreateCustomChannel(name, credentials, args);
    r.stub = ::gcompute::v1::Compute::NewStub(r.channel);
    if (security.ok()) r.authorization = security->authorization;
    replicas_.push_back(std::move(r));
  }
}

absl::StatusOr<Route> ReplicaSet::route_for_refs(const std::vector<const MatrixRef*>& refs) {
  Route route;
  bool unknown = false;
  for (const MatrixRef* ref : refs) {
    const std::optional<std::size_t> owner = matrix_owner(ref->id);
    if (!owner) {
      unknown = true;
      continue;
    }
    if (route.fixed && *route.fixed != *owner) {
      return absl::InvalidArgumentError(
          absl::StrCat("the stored operands of one call live on different servers (",
                       replicas_[*route.fixed].name, " and ", replicas_[*owner].name,
                       "): download one and pass it inline, or upload both through one server"));
    }
    route.fixed = owner;
  }
  // A ref this client did not create: it may be on any replica; one is chosen in turn
  // (NOT_FOUND if it is elsewhere), never retried as if the call were stateless.
  if (!route.fixed && unknown) route.fixed = next_round_robin();
  return route;
}

void ReplicaSet::remember_matrix(const std::string& id, std::size_t replica,
                                 int64_t expires_at_unix_ms) {
  if (replicas_.size() == 1) return;
  std::lock_guard<std::mutex> lock(owners_mu_);
  // Forget expired matrices now and then so a long-lived client does not grow without end.
  if (matrix_owners_.size() >= 4096 && matrix_owners_.size() % 1024 == 0) {
    const int64_t now_ms = absl::ToUnixMillis(absl::Now());
    for (auto it = matrix_owners_.begin(); it != matrix_owners_.end();) {
      it = it->second.expires_at_unix_ms != 0 && it->second.expires_at_unix_ms < now_ms
               ? matrix_owners_.erase(it)
               : std::next(it);
    }
  }
  matrix_owners_[id] = MatrixOwner{replica, expires_at_unix_ms};
}

void ReplicaSet::forget_matrix(const std::string& id) {
  std::lock_guard<std::mutex> lock(owners_mu_);
  matrix_owners_.erase(id);
}

std::optional<std::size_t> ReplicaSet::matrix_owner(const std::string& id) const {
  if (replicas_.size() == 1) return 0;
  std::lock_guard<std::mutex> lock(owners_mu_);
  auto it = matrix_owners_.find(id);
  if (it == matrix_owners_.end()) return std::nullopt;
  return it->second.replica;
}

}  // namespace gcompute::client
