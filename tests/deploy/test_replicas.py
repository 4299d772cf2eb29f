#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Three gcompute-server replicas on loopback behind the balancing CLI.

Load spread: 60 transposes through `--server a,b,c` land on every replica (each server's
gcompute_requests_total{method="Transpose"}). Graph affinity: graphs created through the
balanced CLI exist on exactly one replica, the one this file's own FNV-1a/rendezvous
implementation names (so the documented rule is reproducible outside the C++ client), and
every later call about the graph (edit, show, apsp, delete) reaches only that replica.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

ARGS = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fnv1a64(data: bytes) -> int:
    h = 14695981039346656037
    for b in data:
        h ^= b
        h = (h * 1099511628211) % (1 << 64)
    return h


def fmix64(h: int) -> int:
    m = (1 << 64) - 1
    h ^= h >> 33
    h = (h * 0xff51afd7ed558ccd) & m
    h ^= h >> 33
    h = (h * 0xc4ceb9fe1a85ec53) & m
    return h ^ (h >> 33)


def owner(replicas, graph_id):
    """Rendezvous hashing as docs/deployment.md states it: highest fmix64(FNV-1a-64(name|id))."""
    return max(replicas, key=lambda r: (fmix64(fnv1a64(f"{r}|{graph_id}".encode())), [-ord(c) for c in r]))


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'gcompute_requests_total\{(.*)\} ([0-9.e+]+)$', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        key = labels["method"]
        out[key] = out.get(key, 0) + float(m.group(2))
    return out


def cli(server, *args, check=True):
    r = subprocess.run([ARGS.cli_bin, "--server", server, "--timeout", "30", *args],
                       capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"gcompute {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-bin", required=True)
    ap.add_argument("--cli-bin", required=True)
    ARGS = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gcompute-replicas-")
    procs, replicas, mports = [], [], []
    deadline = time.monotonic() + 240
    try:
        for i in range(3):
            port, mport = free_port(), free_port()
            log = open(os.path.join(work, f"server{i}.log"), "w")
            procs.append(subprocess.Popen(
                [ARGS.server_bin, f"--listen=127.0.0.1:{port}", f"--metrics-listen=127.0.0.1:{mport}",
                 "--device=cpu", "--workers=1", "--drain-seconds=2"], stdout=log, stderr=subprocess.STDOUT))
            replicas.append(f"127.0.0.1:{port}")
            mports.append(mport)
        balanced = ",".join(replicas)
        while True:
            r = cli(balanced, "health", check=False)
            if r.returncode == 0:
                break
            assert time.monotonic() < deadline, f"replicas not SERVING: {r.stdout} {r.stderr}"
            for p in procs:
                assert p.poll() is None, "a server exited at start"
            time.sleep(0.2)
        print(r.stdout, end="")
        assert r.stdout.count("SERVING") == 3

        # Load spread.
        before = [metrics(m).get("Transpose", 0) for m in mports]
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        np.save(os.path.join(work, "a.npy"), a)
        n = 60
        for _ in range(n):
            cli(balanced, "transpose", os.path.join(work, "a.npy"), os.path.join(work, "at.npy"))
            assert np.array_equal(np.load(os.path.join(work, "at.npy")), a.T)
        spread = [metrics(m).get("Transpose", 0) - b for m, b in zip(mports, before)]
        print("transposes per replica:", spread)
        assert sum(spread) == n, spread
        assert min(spread) >= 3, f"load not spread: {spread}"

        # Graph affinity.
        ids = [f"affinity-{k}" for k in range(9)]
        owners = {g: owner(replicas, g) for g in ids}
        assert len(set(owners.values())) >= 2, "test ids all hash to one replica"
        graph_methods = ("CreateGraph", "ApplyEdits", "GetGraph", "Apsp", "DeleteGraph")
        start = [metrics(m) for m in mports]
        edits = os.path.join(work, "edits.jsonl")
        with open(edits, "w") as f:
            f.write('{"add_edge":{"tails":[0],"heads":[1],"weight":2.5}}\n')
            f.write('{"add_edge":{"tails":[1],"heads":[2],"weight":1.5}}\n')
        for g in ids:
            cli(balanced, "graph", "create", g, "--vertices", "3")
            holders = [r for r in replicas if g in cli(r, "graph", "list").stdout.split()]
            assert holders == [owners[g]], f"{g} is on {holders}, expected only {owners[g]}"
            out = cli(balanced, "graph", "edit", g, edits).stdout
            assert "version: 2" in out, out
            shown = cli(balanced, "graph", "show", g).stdout
            assert "2 edges" in shown, shown
            dist = os.path.join(work, f"{g}.npy")
            cli(balanced, "graph", "apsp", g, dist)
            d = np.load(dist)
            assert d[0, 2] == np.float32(4.0) and np.isinf(d[2, 0]), d
        listed = cli(balanced, "graph", "list").stdout
        assert all(g in listed for g in ids), listed
        for g in ids:
            cli(balanced, "graph", "delete", g)
            assert cli(balanced, "graph", "show", g, check=False).returncode == 1
        end = [metrics(m) for m in mports]
        for i, r in enumerate(replicas):
            mine = sum(1 for g in ids if owners[g] == r)
            for method in graph_methods:
                got = end[i].get(method, 0) - start[i].get(method, 0)
                # show after delete adds one NOT_FOUND GetGraph per graph, on the owner too.
                want = mine * (2 if method == "GetGraph" else 1)
                assert got == want, f"{r}: {method} {got} calls, expected {want} (owns {mine} graphs)"
        print("graph owners:", {r: sum(1 for g in ids if owners[g] == r) for r in replicas})

        # A replica that is down: stateless calls fail over, its graphs report UNAVAILABLE.
        procs[0].send_signal(signal.SIGTERM)
        assert procs[0].wait(timeout=30) == 0
        for _ in range(6):
            cli(balanced, "transpose", os.path.join(work, "a.npy"), os.path.join(work, "at.npy"))
        lost = next(g for g in (f"down-{k}" for k in range(100)) if owner(replicas, g) == replicas[0])
        r = cli(balanced, "graph", "create", lost, "--vertices", "2", check=False)
        assert r.returncode == 1 and "UNAVAILABLE" in r.stderr, r.stderr
        print("PASS")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    sys.exit(main())
