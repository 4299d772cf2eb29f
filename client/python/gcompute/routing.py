# SPDX-License-Identifier: Apache-2.0
"""Which replica a request goes to: the rules of docs/deployment.md, exactly as the C++ client
(client/lib/replicas.cc) applies them, so that Python and C++ clients agree on graph owners.

- A target is one server, a comma-separated list ("a:1,b:2", each entry a replica, trimmed), or
  "dns:///NAME:PORT", resolved once to every address of NAME ("IP:PORT" / "[IPv6]:PORT",
  sorted).
- A stored graph lives on the replica with the highest rendezvous score
  fmix64(fnv1a64(replica + "|" + graph_id)); a tie goes to the smaller name.
"""
from __future__ import annotations

import socket
from typing import List, Sequence

from .errors import InvalidArgument, Unavailable

_MASK = (1 << 64) - 1
FNV_OFFSET_BASIS = 14695981039346656037
FNV_PRIME = 1099511628211


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64 bits, of `data`."""
    h = FNV_OFFSET_BASIS
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & _MASK
    return h


def fmix64(h: int) -> int:
    """MurmurHash3's 64-bit finaliser."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    return h ^ (h >> 33)


def rendezvous_score(replica: str, graph_id: str) -> int:
    """The score of `replica` for `graph_id`: fmix64(fnv1a64(UTF-8 of replica|graph_id))."""
    return fmix64(fnv1a64(f"{replica}|{graph_id}".encode("utf-8")))


def graph_owner(replicas: Sequence[str], graph_id: str) -> int:
    """Index of the replica that owns `graph_id` (0 for a single replica)."""
    best, best_score = 0, -1
    for i, name in enumerate(replicas):
        score = rendezvous_score(name, graph_id)
        # Names compare as bytes in C++ (std::string): the same as str order for ASCII names.
        if score > best_score or (score == best_score and name.encode() < replicas[best].encode()):
            best, best_score = i, score
    return best


def _split_host_port(target: str, rest: str):
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0 or close + 1 >= len(rest) or rest[close + 1] != ":":
            raise InvalidArgument(f"target '{target}': bad [IPv6]:PORT")
        return rest[1:close], rest[close + 2:]
    colon = rest.rfind(":")
    if colon < 0:
        raise InvalidArgument(f"target '{target}' has no port (dns:///NAME:PORT)")
    return rest[:colon], rest[colon + 1:]


def expand_target(target: str) -> List[str]:
    """The replica names of a target (see the module docstring).

    Raises InvalidArgument for an empty or repeated list entry or a malformed dns: target, and
    Unavailable when a dns: name does not resolve.
    """
    if target.startswith("dns:") and "," not in target:
        rest = target[len("dns:"):]
        if rest.startswith("//"):  # dns://AUTHORITY/NAME:PORT: the system resolver answers
            slash = rest.find("/", 2)
            if slash < 0:
                raise InvalidArgument(f"target '{target}': expected dns:///NAME:PORT")
            rest = rest[slash + 1:]
        host, port = _split_host_port(target, rest)
        if not host or not port:
            raise InvalidArgument(f"target '{target}': empty name or port")
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise Unavailable(f"cannot resolve '{host}': {e.strerror}") from None
        names = set()
        for family, _, _, _, addr in found:
            if family == socket.AF_INET:
                names.add(f"{addr[0]}:{port}")
            elif family == socket.AF_INET6:
                names.add(f"[{addr[0].split('%')[0]}]:{port}")
        if not names:
            raise Unavailable(f"'{host}' resolved to no addresses")
        return sorted(names, key=lambda n: n.encode())
    out: List[str] = []
    for part in target.split(","):
        name = part.strip()
        if not name:
            raise InvalidArgument(f"target '{target}' has an empty entry")
        if name in out:
            raise InvalidArgument(f"target '{target}' names '{name}' twice")
        out.append(name)
    return out
