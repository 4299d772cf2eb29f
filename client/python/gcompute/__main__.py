# SPDX-License-Identifier: Apache-2.0
"""python3 -m gcompute: a few commands of the client from the shell.

  python3 -m gcompute [--server TARGET] info     version, backend, devices and limits
  python3 -m gcompute [--server TARGET] health   grpc.health.v1 state of every replica
  python3 -m gcompute [--server TARGET] graphs   the stored graphs of every replica

TARGET as for gcompute.Client (default 127.0.0.1:50051; a comma list or dns:///NAME:PORT).
The token comes from --token or the environment variable GCOMPUTE_TOKEN. Exit status: 0 on
success, 1 when a call fails (the message names the gRPC code), 2 for bad usage.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional, TextIO

from .client import Client
from .errors import Error


def _print_info(gc: Client, out: TextIO) -> None:
    for i, name in enumerate(gc.replicas):
        if i:
            out.write("\n")
        info = gc.info(i)
        out.write(f"server: {name}\nversion: {info.version}\nbackend: {info.backend}\n")
        if info.backend_note:
            out.write(f"backend note: {info.backend_note}\n")
        for d in info.devices:
            out.write(f"device {d.index}: {d.name}, {d.memory_bytes / (1 << 30):.4g} GiB, "
                      f"compute capability {d.compute_capability}\n")
        lim = info.limits
        out.write(f"max message bytes: {lim.max_message_bytes}\n"
                  f"max matrix elements: {lim.max_matrix_elements}\n"
                  f"queue depth: {lim.queue_depth}\n"
                  f"stored matrix quota bytes: {lim.stored_matrix_quota_bytes}\n"
                  f"default ttl seconds: {lim.default_ttl_seconds}\n"
                  f"workers: {lim.workers}\n")


def _print_health(gc: Client, out: TextIO) -> int:
    states = gc.health()
    for name, state in states.items():
        out.write(f"{name}: {state}\n")
    return 0 if all(s == "SERVING" for s in states.values()) else 1


def _print_graphs(gc: Client, out: TextIO) -> None:
    for g in gc.list_graphs():
        out.write(f"{g.graph_id}: version {g.version}, {g.num_vertices} vertices, "
                  f"{g.num_edges} edges (on {gc.replica_for_graph(g.graph_id)})\n")


def main(argv: Optional[List[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m gcompute",
                                 description="Commands of the gcompute Python client.")
    ap.add_argument("--server", default="127.0.0.1:50051", help="target (default %(default)s)")
    ap.add_argument("--tls-ca", help="PEM file of the CA of the server's certificate (TLS)")
    ap.add_argument("--token", default=os.environ.get("GCOMPUTE_TOKEN"),
                    help="bearer token (default: $GCOMPUTE_TOKEN)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per command (default %(default)s)")
    ap.add_argument("command", choices=["info", "health", "graphs"])
    args = ap.parse_args(argv)
    try:
        with Client(args.server, tls_ca=args.tls_ca, token=args.token, timeout=args.timeout) as gc:
            if args.command == "info":
                _print_info(gc, out)
            elif args.command == "health":
                return _print_health(gc, out)
            else:
                _print_graphs(gc, out)
    except Error as e:
        where = f"{e.replica}: " if e.replica else ""
        err.write(f"gcompute: {where}{e.code_name}: {e.message}\n")
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # stdout closed early (| head): not a failure of the command
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
