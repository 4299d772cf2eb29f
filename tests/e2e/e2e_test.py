#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests: the real gcompute-server and the gcompute CLI on 127.0.0.1.

Results are checked independently with NumPy/SciPy; bad requests go through raw Python gRPC
stubs generated from proto/ with grpc_tools.protoc, so the server's status codes are seen
unfiltered by the C++ client. The server always runs with --device=cpu and small limits
(8 MiB messages, 4 Mi elements per matrix, 32 MiB stored-matrix quota) so that chunked
transfers, stored results and RESOURCE_EXHAUSTED are reachable with small inputs.

Usage: e2e_test.py --server-bin PATH --cli-bin PATH --proto-dir DIR --work-dir DIR [unittest args]
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

ARGS = None
SERVER = None  # subprocess.Popen of gcompute-server
ADDR = None  # "127.0.0.1:PORT"
METRICS_URL = None
pb = None  # generated modules, set by setUpModule
grpc = None

MAX_MESSAGE = 8 << 20
MAX_ELEMENTS = 4 << 20
QUOTA = 32 << 20
INF = np.float32(np.inf)
I32_NO_EDGE = 2147483647


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def generate_stubs(proto_dir, out_dir):
    """Python stubs for proto/ in out_dir. The proto uses proto3 `optional`, which Debian's
    grpc_tools (bundling an older protoc) rejects; so the system protoc 3.21 with
    grpc_python_plugin is used when present, and grpc_tools.protoc otherwise."""
    os.makedirs(out_dir, exist_ok=True)
    protos = sorted(
        os.path.join("gcompute", "v1", f)
        for f in os.listdir(os.path.join(proto_dir, "gcompute", "v1"))
        if f.endswith(".proto")
    )
    common = [f"-I{proto_dir}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"] + protos
    protoc_bin, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if protoc_bin and plugin:
        r = subprocess.run([protoc_bin, f"--plugin=protoc-gen-grpc_python={plugin}"] + common,
                           capture_output=True, text=True)
        rc, err = r.returncode, r.stderr
    else:
        from grpc_tools import protoc

        rc, err = protoc.main(["grpc_tools.protoc"] + common), ""
    if rc != 0:
        raise RuntimeError(f"generating Python stubs failed ({rc}): {err}")
    sys.path.insert(0, out_dir)


class Stubs:
    """The generated modules, gathered in one namespace."""

    def __init__(self):
        from gcompute.v1 import (
            graphs_pb2,
            matrices_pb2,
            operations_pb2,
            service_pb2,
            service_pb2_grpc,
            types_pb2,
        )

        self.types = types_pb2
        self.ops = operations_pb2
        self.mat = matrices_pb2
        self.graphs = graphs_pb2
        self.svc = service_pb2
        self.grpc = service_pb2_grpc


def server_log_tail():
    path = os.path.join(ARGS.work_dir, "server.log")
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-40:])
    except OSError:
        return "(no server log)"


def stop_process(proc, drain_seconds):
    """SIGTERM (a server drains), then SIGKILL if it is still running after drain_seconds."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=drain_seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def stop_server():
    global SERVER
    if SERVER is None:
        return
    stop_process(SERVER, 20)
    SERVER = None


def setUpModule():
    global SERVER, ADDR, METRICS_URL, pb, grpc
    import grpc as grpc_module

    grpc = grpc_module
    os.makedirs(ARGS.work_dir, exist_ok=True)
    generate_stubs(ARGS.proto_dir, os.path.join(ARGS.work_dir, "gen"))
    pb = Stubs()
    port, metrics_port = free_port(), free_port()
    while metrics_port == port:
        metrics_port = free_port()
    ADDR = f"127.0.0.1:{port}"
    METRICS_URL = f"http://127.0.0.1:{metrics_port}/metrics"
    log = open(os.path.join(ARGS.work_dir, "server.log"), "w")
    SERVER = subprocess.Popen(
        [
            ARGS.server_bin,
            f"--listen={ADDR}",
            f"--metrics_listen=127.0.0.1:{metrics_port}",
            "--device=cpu",
            f"--max_message_bytes={MAX_MESSAGE}",
            f"--max_matrix_elements={MAX_ELEMENTS}",
            f"--stored_matrix_quota_bytes={QUOTA}",
            "--workers=2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 60
    while True:
        if SERVER.poll() is not None:
            rc = SERVER.returncode
            SERVER = None
            raise RuntimeError(f"gcompute-server exited with {rc} at start-up:\n{server_log_tail()}")
        try:
            with grpc.insecure_channel(ADDR) as ch:
                pb.grpc.ComputeStub(ch).GetServerInfo(pb.svc.GetServerInfoRequest(), timeout=2)
            break
        except grpc.RpcError:
            if time.time() > deadline:
                stop_server()
                raise RuntimeError(f"gcompute-server did not answer within 60 s:\n{server_log_tail()}")
            time.sleep(0.2)


def tearDownModule():
    stop_server()


def stub(max_bytes=64 << 20):
    ch = grpc.insecure_channel(
        ADDR,
        options=[("grpc.max_send_message_length", max_bytes), ("grpc.max_receive_message_length", max_bytes)],
    )
    return ch, pb.grpc.ComputeStub(ch)


def matrix_pb(a, dtype=None):
    a = np.ascontiguousarray(a)
    dt = {np.float32: pb.types.DTYPE_F32, np.float64: pb.types.DTYPE_F64, np.int32: pb.types.DTYPE_I32}[
        a.dtype.type
    ]
    if a.ndim == 3:
        return pb.types.Matrix(batch=a.shape[0], rows=a.shape[1], cols=a.shape[2], dtype=dtype or dt, data=a.tobytes())
    return pb.types.Matrix(rows=a.shape[0], cols=a.shape[1], dtype=dtype or dt, data=a.tobytes())


def scrape_metrics():
    with urllib.request.urlopen(METRICS_URL, timeout=10) as r:
        text = r.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m:
            values[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return values


def metric_sum(values, name, **labels):
    """Sum of the series of `name` whose labels include `labels` (method matched by suffix)."""
    total = 0.0
    for (n, lab), v in values.items():
        if n != name:
            continue
        ok = True
        for k, want in labels.items():
            m = re.search(rf'{k}="([^"]*)"', lab)
            if not m or not (m.group(1) == want or m.group(1).endswith("/" + want)):
                ok = False
        if ok:
            total += v
    return total


class E2eBase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gc_e2e_", dir=ARGS.work_dir)
        self.rng = np.random.default_rng(abs(hash(self.id())) % (2**32))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertIsNone(SERVER.poll(), f"the server died during the test:\n{server_log_tail()}")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def save(self, name, a):
        p = self.path(name)
        np.save(p, a)
        return p

    def cli(self, *args, check=True, timeout=300):
        cmd = [ARGS.cli_bin, "--server", ADDR, "--max-message-bytes", str(MAX_MESSAGE), *map(str, args)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            self.fail(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stderr}")
        return r

    def cli_fails(self, *args, code=None, contains=()):
        r = self.cli(*args, check=False)
        self.assertNotEqual(r.returncode, 0, f"expected failure of {args}, got:\n{r.stdout}")
        if code:
            self.assertIn(code, r.stderr)
        for c in contains:
            self.assertIn(c, r.stderr)
        return r


class CliTest(E2eBase):
    def test_help_for_every_subcommand(self):
        for cmd in (["transpose"], ["matmul"], ["svd"], ["apsp"], ["path"], ["graph", "create"], ["graph", "edit"],
                    ["graph", "show"], ["graph", "delete"], ["graph", "list"], ["graph", "apsp"], ["info"],
                    ["sssp"], ["graph", "sssp"], ["submit", "sssp"],
                    ["submit", "apsp"], ["submit", "svd"], ["jobs", "list"], ["jobs", "watch"], ["wait"]):
            r = self.cli(*cmd, "--help")
            self.assertIn("usage: gcompute " + " ".join(cmd), r.stdout)

    def test_info(self):
        r = self.cli("info")
        self.assertIn("backend: cpu", r.stdout)
        self.assertIn(f"max message bytes: {MAX_MESSAGE}", r.stdout)

    def test_transpose(self):
        for shape, dt in (((37, 53), np.float32), ((1, 1), np.float64), ((1, 17), np.float32), ((3, 5, 7), np.float64),
                          ((11, 13), np.int32)):
            a = (self.rng.standard_normal(shape) * 100).astype(dt)
            out = self.path("t.npy")
            self.cli("transpose", self.save("a.npy", a), out)
            got = np.load(out)
            want = np.swapaxes(a, -1, -2)
            self.assertEqual(got.dtype, a.dtype)
            np.testing.assert_array_equal(got, want)

    def test_matmul(self):
        a = self.rng.standard_normal((31, 17)).astype(np.float32)
        b = self.rng.standard_normal((17, 23)).astype(np.float32)
        out = self.path("c.npy")
        ref = a.astype(np.float64) @ b.astype(np.float64)
        self.cli("matmul", self.save("a.npy", a), self.save("b.npy", b), out)
        c = np.load(out)
        self.assertEqual(c.dtype, np.float32)
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)
        # Transpose flags.
        self.cli("matmul", self.save("at.npy", a.T.copy()), self.save("bt.npy", b.T.copy()), out,
                 "--transpose-a", "--transpose-b")
        np.testing.assert_allclose(np.load(out), ref, rtol=1e-4, atol=1e-4)
        # f32 files with --precision f64: converted on the client, f64 result.
        self.cli("matmul", self.path("a.npy"), self.path("b.npy"), out, "--precision", "f64")
        c = np.load(out)
        self.assertEqual(c.dtype, np.float64)
        np.testing.assert_allclose(c, ref, rtol=1e-12, atol=1e-12)
        # Reduced precisions: f32 results, looser agreement.
        for precision, tol in (("tf32", 1e-2), ("bf16", 5e-2), ("f16", 1e-2)):
            self.cli("matmul", self.path("a.npy"), self.path("b.npy"), out, "--precision", precision)
            c = np.load(out)
            self.assertEqual(c.dtype, np.float32)
            err = np.linalg.norm(c - ref) / np.linalg.norm(ref)
            self.assertLess(err, tol, precision)
        # Batched, with B broadcast.
        a3 = self.rng.standard_normal((4, 6, 5))
        b2 = self.rng.standard_normal((5, 3))
        self.cli("matmul", self.save("a3.npy", a3), self.save("b2.npy", b2[None]), out)
        np.testing.assert_allclose(np.load(out), a3 @ b2, rtol=1e-12, atol=1e-12)

    def check_svd(self, a, prefix, full, tol):
        s = np.load(prefix + ".S.npy")
        u = np.load(prefix + ".U.npy")
        vt = np.load(prefix + ".Vt.npy")
        m, n = a.shape[-2:]
        p = min(m, n)
        self.assertEqual(s.shape, a.shape[:-2] + (p,))
        self.assertEqual(u.shape, a.shape[:-2] + ((m, m) if full else (m, p)))
        self.assertEqual(vt.shape, a.shape[:-2] + ((n, n) if full else (p, n)))
        want = np.linalg.svd(a.astype(np.float64), compute_uv=False)
        np.testing.assert_allclose(s, want, rtol=tol, atol=tol * want.max())
        self.assertTrue(np.all(np.diff(s, axis=-1) <= tol * want.max()), "S not descending")
        us = u[..., :, :p] * s[..., None, :]
        np.testing.assert_allclose(us @ vt[..., :p, :], a, atol=tol * 10 * want.max())
        eye_u = np.swapaxes(u, -1, -2) @ u
        np.testing.assert_allclose(eye_u, np.broadcast_to(np.eye(u.shape[-1]), eye_u.shape), atol=tol * 10)

    def test_svd(self):
        for shape, dt, tol in (((40, 25), np.float64, 1e-10), ((25, 40), np.float64, 1e-10),
                               ((19, 19), np.float32, 2e-5), ((1, 7), np.float64, 1e-12)):
            a = self.rng.standard_normal(shape).astype(dt)
            prefix = self.path("r")
            r = self.cli("svd", self.save("a.npy", a), "--out", prefix)
            self.assertRegex(r.stdout, r"sweeps: \d+")
            self.assertIn("converged: true", r.stdout)
            self.check_svd(a, prefix, False, tol)
            self.cli("svd", self.path("a.npy"), "--out", prefix + "f", "--full", "--tol", "0", "--max-sweeps", "80")
            self.check_svd(a, prefix + "f", True, tol)
        # Values only.
        a = self.rng.standard_normal((12, 9))
        prefix = self.path("v")
        self.cli("svd", self.save("v.npy", a), "--out", prefix, "--no-vectors")
        np.testing.assert_allclose(np.load(prefix + ".S.npy"), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
        self.assertFalse(os.path.exists(prefix + ".U.npy"))
        # A batch (3-D) goes to BatchedSvd.
        a = self.rng.standard_normal((5, 8, 6))
        prefix = self.path("b")
        self.cli("svd", self.save("b.npy", a), "--out", prefix)
        self.check_svd(a, prefix, False, 1e-10)
        # One QDWH iteration is not enough for a random 30x30 matrix.
        c = self.rng.standard_normal((30, 30))
        r = self.cli("svd", self.save("c.npy", c), "--out", prefix, "--method", "polar", "--max-sweeps", "1")
        self.assertIn("sweeps: 1", r.stdout)
        self.assertIn("converged: false", r.stdout)
        # Every method agrees with LAPACK.
        for method in ("auto", "jacobi", "polar"):
            r = self.cli("svd", self.path("c.npy"), "--out", prefix + method, "--method", method)
            self.assertIn("converged: true", r.stdout)
            self.check_svd(c, prefix + method, False, 1e-10)

    def test_eigh(self):
        x = self.rng.standard_normal((12, 12))
        a = (x + x.T) / 2
        prefix = self.path("e")
        r = self.cli("eigh", self.save("e.npy", a), "--out", prefix)
        self.assertIn("converged: true", r.stdout)
        w, v = np.load(prefix + ".W.npy"), np.load(prefix + ".V.npy")
        np.testing.assert_allclose(w, np.linalg.eigh(a)[0], rtol=0, atol=1e-12 * np.abs(w).max())
        np.testing.assert_allclose(a @ v, v * w, rtol=0, atol=1e-11 * np.abs(w).max())
        # Values only, for a stack.
        r = self.cli("eigh", self.save("es.npy", np.stack([a, -a])), "--out", prefix + "s", "--no-vectors")
        ws = np.load(prefix + "s.W.npy")
        self.assertEqual(ws.shape, (2, 12))
        self.assertFalse(os.path.exists(prefix + "s.V.npy"))
        # Not symmetric: an error naming the pair.
        b = a.copy()
        b[3, 1] += 1.0
        r = self.cli("eigh", self.save("eb.npy", b), "--out", prefix + "b", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not symmetric", r.stderr)

    def test_large_matrices_are_chunked(self):
        # Over the wire (--no-shared-memory): 1500 x 1500 f32 = 9 MB is over the CLI's inline
        # limit (half of 8 MiB), so it is uploaded in chunks; the 9 MB result exceeds the
        # server's 8 MiB messages, so it comes back stored and is downloaded in chunks.
        a = self.rng.standard_normal((1500, 1500)).astype(np.float32)
        out = self.path("t.npy")
        before = scrape_metrics()
        self.cli("--no-shared-memory", "transpose", self.save("big.npy", a), out)
        np.testing.assert_array_equal(np.load(out), a.T)
        after = scrape_metrics()
        for method in ("UploadMatrix", "DownloadMatrix", "DeleteMatrix"):
            self.assertGreater(metric_sum(after, "gcompute_requests_total", method=method),
                               metric_sum(before, "gcompute_requests_total", method=method), method)
        # Nothing is left stored after the command.
        self.assertEqual(metric_sum(after, "gcompute_stored_matrix_bytes"), 0)
        # A small matrix with a lowered --inline-limit is uploaded too; the product comes back inline.
        b = self.rng.standard_normal((600, 300)).astype(np.float32)
        c = self.rng.standard_normal((300, 200)).astype(np.float32)
        before = after
        self.cli("matmul", self.save("b.npy", b), self.save("c.npy", c), out, "--inline-limit", "500000",
                 "--no-shared-memory")
        np.testing.assert_allclose(np.load(out), b.astype(np.float64) @ c, rtol=1e-4, atol=1e-3)
        after = scrape_metrics()
        self.assertGreater(metric_sum(after, "gcompute_requests_total", method="UploadMatrix"),
                           metric_sum(before, "gcompute_requests_total", method="UploadMatrix"))

    def test_same_host_data_goes_through_shared_memory(self):
        # The server runs on this host: the CLI registers an arena and neither the operand nor
        # the result crosses the socket (no upload, no download, nothing stored).
        a = self.rng.standard_normal((1500, 1500)).astype(np.float32)
        out = self.path("ts.npy")
        before = scrape_metrics()
        self.cli("transpose", self.save("bigs.npy", a), out)
        np.testing.assert_array_equal(np.load(out), a.T)
        b = self.rng.standard_normal((700, 300))
        c = self.rng.standard_normal((300, 500))
        self.cli("matmul", self.save("bs.npy", b), self.save("cs.npy", c), out)
        np.testing.assert_allclose(np.load(out), b @ c, rtol=1e-12, atol=1e-12)
        after = scrape_metrics()

        def calls(method):
            return (metric_sum(after, "gcompute_requests_total", method=method) -
                    metric_sum(before, "gcompute_requests_total", method=method))

        self.assertEqual(calls("RegisterSharedMemory"), 2)
        self.assertEqual(calls("UnregisterSharedMemory"), 2)
        self.assertEqual(calls("UploadMatrix"), 0)
        self.assertEqual(calls("DownloadMatrix"), 0)
        self.assertEqual(calls("DeleteMatrix"), 0)  # nothing was stored to delete

    def random_graph(self, n, density, low=1, high=10, integer=False):
        w = self.rng.uniform(low, high, (n, n))
        if integer:
            w = np.round(w)
        mask = self.rng.random((n, n)) < density
        np.fill_diagonal(mask, False)
        return np.where(mask, w, np.inf), mask

    def test_apsp_dense(self):
        for n in (1, 7, 33, 64):
            w, mask = self.random_graph(n, 0.2)
            w32 = w.astype(np.float32)
            d_out, n_out = self.path("d.npy"), self.path("n.npy")
            self.cli("apsp", self.save("w.npy", w32), d_out, "--next-hop", n_out)
            d = np.load(d_out)
            nh = np.load(n_out)
            self.assertEqual(d.dtype, np.float32)
            self.assertEqual(nh.dtype, np.int32)
            want = scipy.sparse.csgraph.floyd_warshall(np.where(mask, w32, 0).astype(np.float64), directed=True)
            np.testing.assert_allclose(d, want, rtol=1e-5)
            self.check_next_hop(d, nh, w32)

    def check_next_hop(self, d, nh, w):
        n = d.shape[0]
        for i in range(n):
            self.assertEqual(nh[i, i], i)
            for j in range(n):
                if np.isinf(d[i, j]):
                    self.assertEqual(nh[i, j], -1)
                    continue
                length, v, steps = 0.0, i, 0
                while v != j:
                    nxt = nh[v, j]
                    self.assertGreaterEqual(nxt, 0)
                    length += float(w[v, nxt])
                    v, steps = nxt, steps + 1
                    self.assertLessEqual(steps, n)
                self.assertAlmostEqual(length, float(d[i, j]), delta=1e-4 * max(1.0, abs(float(d[i, j]))))

    def test_apsp_negative_weights_and_i32(self):
        # Potentials make some weights negative without creating negative cycles.
        n = 40
        w, mask = self.random_graph(n, 0.15, integer=True)
        pot = self.rng.integers(0, 8, n)
        w = np.where(mask, w + pot[:, None] - pot[None, :], np.inf)
        self.assertTrue((w[mask] < 0).any())
        want = scipy.sparse.csgraph.floyd_warshall(
            scipy.sparse.csr_matrix((w[mask], np.nonzero(mask)), shape=(n, n)), directed=True)
        d_out = self.path("d.npy")
        self.cli("apsp", self.save("w.npy", w.astype(np.float32)), d_out)
        np.testing.assert_allclose(np.load(d_out), want, rtol=1e-5, atol=1e-4)
        self.cli("apsp", self.path("w.npy"), d_out, "--i32")
        d = np.load(d_out)
        self.assertEqual(d.dtype, np.int32)
        np.testing.assert_array_equal(d, np.where(np.isinf(want), I32_NO_EDGE, want).astype(np.int64))

    def write_dimacs(self, name, n, edges):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(f"c random graph\np sp {n} {len(edges)}\n")
            for u, v, wt in edges:
                f.write(f"a {u + 1} {v + 1} {wt:g}\n")
        return p

    def write_mtx(self, name, n, edges, symmetric=False):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(f"%%MatrixMarket matrix coordinate real {'symmetric' if symmetric else 'general'}\n% x\n")
            f.write(f"{n} {n} {len(edges)}\n")
            for u, v, wt in edges:
                f.write(f"{u + 1} {v + 1} {wt:g}\n")
        return p

    def random_edges(self, n, m):
        edges = {}
        while len(edges) < m:
            u, v = (int(x) for x in self.rng.integers(0, n, 2))
            if u != v:
                edges[(u, v)] = int(self.rng.integers(1, 20))
        return [(u, v, wt) for (u, v), wt in edges.items()]

    @staticmethod
    def dist_from_edges(n, edges, symmetric=False):
        dense = np.full((n, n), np.inf)
        for u, v, wt in edges:
            dense[u, v] = min(dense[u, v], wt)
            if symmetric:
                dense[v, u] = min(dense[v, u], wt)
        mask = np.isfinite(dense)
        return scipy.sparse.csgraph.floyd_warshall(
            scipy.sparse.csr_matrix((dense[mask], np.nonzero(mask)), shape=(n, n)), directed=True), dense

    def test_apsp_files(self):
        n = 50
        edges = self.random_edges(n, 200)
        want, _ = self.dist_from_edges(n, edges)
        d_out = self.path("d.npy")
        self.cli("apsp", self.write_dimacs("g.gr", n, edges), d_out)
        np.testing.assert_allclose(np.load(d_out), want, rtol=1e-6)
        self.cli("apsp", self.path("g.gr"), d_out, "--i32")
        np.testing.assert_array_equal(np.load(d_out), np.where(np.isinf(want), I32_NO_EDGE, want))
        sym_edges = [(u, v, wt) for u, v, wt in edges if u > v]
        want_sym, _ = self.dist_from_edges(n, sym_edges, symmetric=True)
        self.cli("apsp", self.write_mtx("g.mtx", n, sym_edges, symmetric=True), d_out)
        np.testing.assert_allclose(np.load(d_out), want_sym, rtol=1e-6)

    def parse_path(self, out):
        if out.strip() == "unreachable":
            return None, None
        m = re.search(r"path: ([0-9 \->]+)\nlength: (\S+)", out)
        self.assertIsNotNone(m, out)
        return [int(x) for x in m.group(1).split("->")], float(m.group(2))

    def test_path(self):
        n = 30
        edges = self.random_edges(n, 90)
        want, dense = self.dist_from_edges(n, edges)
        gr = self.write_dimacs("p.gr", n, edges)
        checked_reachable = checked_unreachable = False
        for s, t in ((0, n - 1), (3, 3), (5, 17), (n - 1, 0), (12, 4)):
            vertices, length = self.parse_path(self.cli("path", gr, s + 1, t + 1).stdout)
            if np.isinf(want[s, t]):
                self.assertIsNone(vertices)
                checked_unreachable = True
                continue
            checked_reachable = True
            self.assertEqual(vertices[0], s + 1)
            self.assertEqual(vertices[-1], t + 1)
            self.assertAlmostEqual(length, want[s, t], places=4)
            self.assertAlmostEqual(sum(dense[a - 1, b - 1] for a, b in zip(vertices, vertices[1:])), want[s, t], places=4)
        self.assertTrue(checked_reachable)
        # A vertex with no edges: unreachable. .npy files are 0-based.
        w = np.full((4, 4), np.inf, dtype=np.float32)
        w[0, 1], w[1, 2] = 1.5, 2.25
        npy = self.save("w.npy", w)
        self.assertEqual(self.parse_path(self.cli("path", npy, 0, 2).stdout), ([0, 1, 2], 3.75))
        self.assertEqual(self.cli("path", npy, 0, 3).stdout.strip(), "unreachable")
        self.assertEqual(self.cli("path", npy, 2, 0).stdout.strip(), "unreachable")
        del checked_unreachable
        # Vertex numbers outside the file's numbering are refused locally.
        self.cli_fails("path", gr, 0, 1, contains=("SRC '0'",))

    def test_sssp(self):
        n = 40
        edges = self.random_edges(n, 120)
        want, dense = self.dist_from_edges(n, edges)
        gr = self.write_dimacs("s.gr", n, edges)
        d_out, p_out = self.path("sd.npy"), self.path("sp.npy")
        s = 4
        r = self.cli("sssp", gr, s + 1, d_out, "--parents", p_out)
        d, parents = np.load(d_out), np.load(p_out)
        self.assertEqual((d.shape, d.dtype, parents.dtype), ((n,), np.float32, np.int32))
        np.testing.assert_allclose(d, want[s], rtol=1e-6)
        self.assertIn(f"reachable: {int(np.isfinite(want[s]).sum())} of {n}", r.stdout)
        self.assertEqual(int(parents[s]), s)
        for v in range(n):
            if np.isinf(want[s, v]):
                self.assertEqual(int(parents[v]), -1)
            elif v != s:
                self.assertAlmostEqual(float(d[parents[v]]) + dense[parents[v], v], float(d[v]), places=4)
        # As a job, collected by 'wait' from another process: the same files.
        job = self.cli("submit", "sssp", gr, s + 1).stdout.strip()
        self.cli("wait", job, "--out", self.path("sj"))
        np.testing.assert_array_equal(np.load(self.path("sj") + ".dist.npy"), d)
        np.testing.assert_array_equal(np.load(self.path("sj") + ".parents.npy"), parents)
        self.cli_fails("sssp", gr, 0, d_out, contains=("SRC '0'",))
        self.cli_fails("sssp", self.save("dense.npy", np.zeros((3, 3), np.float32)), 0, d_out,
                       contains=("edge list",))
        # A stored graph after a deletion: its ids are written beside OUT.
        name = f"s{self.rng.integers(1 << 30)}"
        csv = self.path("s.csv")
        with open(csv, "w") as f:
            f.write("0,1,2\n1,2,1.5\n0,3,1\n3,2,1\n")
        self.cli("graph", "create", name, csv, "--vertices", "4")
        edits = self.path("s.jsonl")
        with open(edits, "w") as f:
            f.write('{"delete_vertex":{"vertex_id":1}}\n')
        self.cli("graph", "edit", name, edits)
        r = self.cli("graph", "sssp", name, 0, d_out, "--parents", p_out)
        self.assertIn("reachable: 3 of 3", r.stdout)
        np.testing.assert_array_equal(np.load(d_out), np.array([0, 2, 1], np.float32))
        with open(d_out + ".ids.txt") as f:
            self.assertEqual([int(x) for x in f.read().split()], [0, 2, 3])
        self.cli_fails("graph", "sssp", name, 1, d_out, code="NOT_FOUND")
        self.cli("graph", "delete", name)

    def graph_json(self, name):
        return json.loads(self.cli("graph", "show", name, "--json").stdout)

    def test_jobs_submit_watch_wait_from_separate_processes(self):
        # Each CLI invocation is its own process and connection: submit, watch, wait, list.
        n = 97
        w, mask = self.random_graph(n, 0.2)
        w32 = w.astype(np.float32)
        job = self.cli("submit", "apsp", self.save("w.npy", w32), "--next-hop").stdout.strip()
        self.assertRegex(job, r"^j-[0-9a-f]{32}$")
        watched = self.cli("jobs", "watch", job).stdout.splitlines()
        self.assertTrue(watched and watched[-1].startswith("SUCCEEDED\t100% finished"), watched)
        prefix = self.path("res")
        self.cli("wait", job, "--out", prefix)
        d, nh = np.load(prefix + ".dist.npy"), np.load(prefix + ".next.npy")
        want = scipy.sparse.csgraph.floyd_warshall(np.where(mask, w32, 0).astype(np.float64), directed=True)
        np.testing.assert_allclose(d, want, rtol=1e-5)
        self.check_next_hop(d, nh, w32)
        shown = self.cli("jobs", "show", job).stdout
        self.assertIn("state: SUCCEEDED", shown)
        self.assertIn("method: Apsp", shown)
        self.assertIn(job + "\tApsp\tSUCCEEDED", self.cli("jobs", "list").stdout)
        # The other operations, written as their synchronous commands write them.
        a = self.rng.standard_normal((13, 7)).astype(np.float32)
        b = self.rng.standard_normal((7, 5)).astype(np.float32)
        mm = self.cli("submit", "matmul", self.save("a.npy", a), self.save("b.npy", b), "--priority", "high",
                      "--key", "e2e-mm").stdout.strip()
        again = self.cli("submit", "matmul", self.path("a.npy"), self.path("b.npy"), "--key", "e2e-mm").stdout.strip()
        self.assertEqual(mm, again)
        self.cli("wait", mm, "--out", self.path("mm"))
        np.testing.assert_allclose(np.load(self.path("mm.npy")), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        tr = self.cli("submit", "transpose", self.path("a.npy"), "--ttl", "60").stdout.strip()
        self.cli("wait", tr, "--out", self.path("at"))
        np.testing.assert_array_equal(np.load(self.path("at.npy")), a.T)
        sv = self.cli("submit", "svd", self.path("a.npy")).stdout.strip()
        self.cli("wait", sv, "--out", self.path("sv"))
        np.testing.assert_allclose(np.load(self.path("sv.S.npy")), np.linalg.svd(a.astype(np.float64))[1], rtol=1e-4)
        self.cli_fails("jobs", "show", "j-nope", code="NOT_FOUND", contains=['"j-nope"'])
        self.cli_fails("wait", job, contains=["--out"])

    def test_progress_bars_run_the_operation_as_a_job_with_the_same_results(self):
        n = 300
        w, mask = self.random_graph(n, 0.05)
        w32 = w.astype(np.float32)
        src, d_out, n_out = self.save("w.npy", w32), self.path("d.npy"), self.path("n.npy")
        r = self.cli("--progress", "always", "apsp", src, d_out, "--next-hop", n_out)
        # The kernel's rounds as the server reported them, ending at 100 %.
        self.assertRegex(r.stderr, r"\[#+ *\] +\d+% Apsp round \d+ of \d+")
        self.assertRegex(r.stderr, r"\[#{30}\] 100% Apsp round (\d+) of \1")
        d, nh = np.load(d_out), np.load(n_out)
        want = scipy.sparse.csgraph.floyd_warshall(np.where(mask, w32, 0).astype(np.float64), directed=True)
        np.testing.assert_allclose(d, want, rtol=1e-5)
        unary = self.path("unary.npy")
        self.cli("--progress", "never", "apsp", src, unary)
        np.testing.assert_array_equal(np.load(unary), d)
        a = self.rng.standard_normal((40, 30))
        self.cli("--progress", "always", "svd", self.save("a.npy", a), "--out", self.path("sv"))
        np.testing.assert_allclose(np.load(self.path("sv.S.npy")), np.linalg.svd(a)[1], rtol=1e-10)
        self.assertIn("Svd", self.cli("jobs", "list").stdout)

    def test_ctrl_c_cancels_the_job_of_a_command_with_progress(self):
        # The largest graph the test server takes, with next hops: seconds of CPU work. Its
        # 16 MiB upload and 32 MiB of outputs exceed the 32 MiB quota together: the job starts
        # only because the upload, sent with MatrixRef.release, left the store at submission.
        n = 2048
        w = self.rng.uniform(1, 10, (n, n)).astype(np.float32)
        self.assertGreater(3 * n * n * 4, QUOTA)
        cmd = [ARGS.cli_bin, "--server", ADDR, "--max-message-bytes", str(MAX_MESSAGE), "--progress", "always",
               "apsp", self.save("big.npy", w), self.path("d.npy"), "--next-hop", self.path("n.npy")]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen = b""
        deadline = time.time() + 120
        try:
            while b"round" not in seen:  # running, with progress drawn
                self.assertLess(time.time(), deadline, seen)
                chunk = os.read(proc.stderr.fileno(), 4096)
                self.assertTrue(chunk, f"the CLI ended before any progress: {seen!r}")
                seen += chunk
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err = (seen + err).decode()
        self.assertEqual(proc.returncode, 1, err)
        m = re.search(r"interrupted: cancelling job (j-[0-9a-f]+)", err)
        self.assertTrue(m, err)
        self.assertIn("CANCELLED: interrupted: job " + m.group(1) + " CANCELLED", err)
        self.assertIn("state: CANCELLED", self.cli("jobs", "show", m.group(1)).stdout)
        self.assertFalse(os.path.exists(self.path("d.npy")))

    def test_graph_lifecycle(self):
        name = f"g{self.rng.integers(1 << 30)}"
        csv = self.path("e.csv")
        with open(csv, "w") as f:
            f.write("src,dst,weight\n0,1,2.5\n1,2,1\n2,0,4\n0,2,10\n")
        r = self.cli("graph", "create", name, csv, "--vertices", "4")
        self.assertIn("version 1", r.stdout)
        g = self.graph_json(name)
        self.assertEqual((g["graph_id"], g["version"], g["num_vertices"], g["num_edges"]), (name, 1, 4, 4))
        self.assertEqual([(e["tails"], e["heads"], e["weight"]) for e in g["edges"]],
                         [([0], [1], 2.5), ([1], [2], 1.0), ([2], [0], 4.0), ([0], [2], 10.0)])
        self.assertIn(name, self.cli("graph", "list").stdout)
        self.cli_fails("graph", "create", name, "--vertices", "2", code="ALREADY_EXISTS")

        d_out, n_out = self.path("d.npy"), self.path("n.npy")
        self.cli("graph", "apsp", name, d_out, "--next-hop", n_out)
        d = np.load(d_out)
        self.assertAlmostEqual(float(d[0, 2]), 3.5, places=5)
        self.assertTrue(np.isinf(d[0, 3]))
        self.assertEqual(int(np.load(n_out)[0, 2]), 1)

        edits = self.path("e.jsonl")
        with open(edits, "w") as f:
            f.write('{"add_vertex":{}}\n')
            f.write('{"add_edge":{"tails":[3],"heads":[4],"weight":0.5}}\n')
            f.write('{"set_weight":{"edge_id":3,"weight":3}}\n')
            f.write('{"delete_edge":{"edge_id":2}}\n')
            f.write('{"decompose_vertex":{"vertex_id":1,"move_edge_ids":[1],"joining_weight":0.25}}\n')
            f.write('{"delete_vertex":{"vertex_id":4}}\n')
        r = self.cli("graph", "edit", name, edits, "--expected-version", "1")
        self.assertIn("version: 2", r.stdout)
        self.assertIn("edit 0: add_vertex vertex_id=4", r.stdout)
        self.assertIn("edit 1: add_edge edge_id=4", r.stdout)
        self.assertIn("edit 4: decompose_vertex vertex_id=5 edge_id=5", r.stdout)
        self.assertIn("edit 5: delete_vertex deleted_edge_ids=[4]", r.stdout)
        g = self.graph_json(name)
        self.assertEqual(g["version"], 2)
        self.assertEqual(g["vertices"], [0, 1, 2, 3, 5])
        edges = {e["id"]: (e["tails"], e["heads"], e["weight"]) for e in g["edges"]}
        self.assertEqual(edges, {0: ([0], [1], 2.5), 1: ([5], [2], 1.0), 3: ([0], [2], 3.0), 5: ([1], [5], 0.25)})
        # A stale expected version: ABORTED, nothing applied.
        self.cli_fails("graph", "edit", name, edits, "--expected-version", "1", code="ABORTED")
        # A missing edge: NOT_FOUND, nothing applied (the add_vertex before it is rolled back).
        with open(edits, "w") as f:
            f.write('{"add_vertex":{}}\n{"delete_edge":{"edge_id":99}}\n')
        self.cli_fails("graph", "edit", name, edits, code="NOT_FOUND")
        self.assertEqual(self.graph_json(name)["version"], 2)
        self.assertEqual(self.graph_json(name)["num_vertices"], 5)
        # A malformed edit file is refused locally with its line number.
        with open(edits, "w") as f:
            f.write('{"add_vertex":{}}\n{"add_edge":{"tails":[0]}}\n')
        self.cli_fails("graph", "edit", name, edits, contains=(edits + ":2:", "heads"))
        text = self.cli("graph", "show", name).stdout
        self.assertIn(f"graph {name}: version 2", text)
        self.cli("graph", "delete", name)
        self.cli_fails("graph", "show", name, code="NOT_FOUND")
        self.assertNotIn(name, self.cli("graph", "list").stdout)

    def test_graph_from_dimacs_and_mtx(self):
        n = 20
        edges = self.random_edges(n, 60)
        want, _ = self.dist_from_edges(n, edges)
        for i, path in enumerate((self.write_dimacs("c.gr", n, edges), self.write_mtx("c.mtx", n, edges))):
            name = f"files{i}_{self.rng.integers(1 << 30)}"
            self.cli("graph", "create", name, path)
            g = self.graph_json(name)
            self.assertEqual((g["num_vertices"], g["num_edges"]), (n, len(edges)))
            d_out = self.path("d.npy")
            self.cli("graph", "apsp", name, d_out)
            np.testing.assert_allclose(np.load(d_out), want, rtol=1e-6)
            self.cli("graph", "delete", name)
        r = self.cli("graph", "create", f"empty{self.rng.integers(1 << 30)}", "--vertices", "3")
        self.assertIn("3 vertices, 0 edges", r.stdout)

    def test_local_refusals(self):
        a = np.asfortranarray(self.rng.standard_normal((4, 3)))
        p = self.save("f.npy", a)
        self.cli_fails("transpose", p, self.path("o.npy"), contains=(p, "fortran_order"))
        p = self.save("be.npy", np.arange(6, dtype=">f4").reshape(2, 3))
        self.cli_fails("transpose", p, self.path("o.npy"), contains=(p, "big-endian"))
        p = self.save("i8.npy", np.arange(6, dtype=np.int64).reshape(2, 3))
        self.cli_fails("transpose", p, self.path("o.npy"), contains=(p, "'<i8'"))
        bad = self.path("bad.gr")
        with open(bad, "w") as f:
            f.write("p sp 3 1\na 1 9 1\n")
        self.cli_fails("apsp", bad, self.path("o.npy"), contains=(bad + ":2:",))
        r = self.cli("frobnicate", check=False)
        self.assertEqual(r.returncode, 2)

    def test_server_errors_through_the_cli(self):
        # A negative cycle: FAILED_PRECONDITION.
        w = np.full((3, 3), np.inf, dtype=np.float32)
        w[0, 1], w[1, 2], w[2, 0] = 1, -3, 1
        self.cli_fails("apsp", self.save("neg.npy", w), self.path("o.npy"), code="FAILED_PRECONDITION")
        # Mismatched shapes: INVALID_ARGUMENT.
        self.cli_fails("matmul", self.save("a.npy", np.ones((3, 4), np.float32)),
                       self.save("b.npy", np.ones((5, 2), np.float32)), self.path("o.npy"), code="INVALID_ARGUMENT")
        # No server at all: UNAVAILABLE.
        r = subprocess.run([ARGS.cli_bin, "--server", f"127.0.0.1:{free_port()}", "--timeout", "5", "info"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("UNAVAILABLE", r.stderr)


class ApiTest(E2eBase):
    """Bad requests through the raw stubs: each documented code the CPU path can produce."""

    def setUp(self):
        super().setUp()
        self.channel, self.stub = stub()

    def tearDown(self):
        # The server must still answer after every test, on the API and on health.
        info = self.stub.GetServerInfo(pb.svc.GetServerInfoRequest(), timeout=10)
        self.assertEqual(info.backend, "cpu")
        self.assertEqual(health_check(self.channel), 1, "health is not SERVING")
        self.channel.close()
        super().tearDown()

    def expect_code(self, code, fn, *contains):
        with self.assertRaises(grpc.RpcError) as cm:
            fn()
        self.assertEqual(cm.exception.code(), code, cm.exception.details())
        for c in contains:
            self.assertIn(c, cm.exception.details())
        return cm.exception.details()

    def test_invalid_argument(self):
        IA = grpc.StatusCode.INVALID_ARGUMENT
        a = matrix_pb(np.ones((3, 4), np.float32))
        b = matrix_pb(np.ones((5, 2), np.float32))
        self.expect_code(IA, lambda: self.stub.MatMul(pb.ops.MatMulRequest(
            a=pb.types.Operand(inline=a), b=pb.types.Operand(inline=b)), timeout=30), "3x4", "5x2")
        short = pb.types.Matrix(rows=2, cols=2, dtype=pb.types.DTYPE_F32, data=b"\0" * 15)
        self.expect_code(IA, lambda: self.stub.Transpose(pb.ops.TransposeRequest(
            a=pb.types.Operand(inline=short)), timeout=30), "15", "16")
        nodtype = pb.types.Matrix(rows=1, cols=1, data=b"\0" * 4)
        self.expect_code(IA, lambda: self.stub.Transpose(pb.ops.TransposeRequest(
            a=pb.types.Operand(inline=nodtype)), timeout=30), "dtype")
        sq = matrix_pb(np.eye(3))
        self.expect_code(IA, lambda: self.stub.Svd(pb.ops.SvdRequest(
            a=pb.types.Operand(inline=sq), tolerance=1.5), timeout=30), "tolerance")
        self.expect_code(IA, lambda: self.stub.Svd(pb.ops.SvdRequest(
            a=pb.types.Operand(inline=matrix_pb(np.ones((2, 2), np.int32)))), timeout=30), "i32", "f32")
        self.expect_code(IA, lambda: self.stub.Apsp(pb.ops.ApspRequest(
            dense=matrix_pb(np.zeros((3, 4), np.float32))), timeout=30), "3", "4")
        self.expect_code(IA, lambda: self.stub.CreateGraph(pb.graphs.CreateGraphRequest(
            graph_id="bad name!", num_vertices=1), timeout=30), "graph_id")

    def test_not_found(self):
        NF = grpc.StatusCode.NOT_FOUND
        ref = pb.types.MatrixRef(id="no-such-matrix")
        self.expect_code(NF, lambda: list(self.stub.DownloadMatrix(pb.mat.DownloadMatrixRequest(ref=ref), timeout=30)),
                         "no-such-matrix")
        self.expect_code(NF, lambda: self.stub.DeleteMatrix(pb.mat.DeleteMatrixRequest(ref=ref), timeout=30))
        self.expect_code(NF, lambda: self.stub.Transpose(pb.ops.TransposeRequest(
            a=pb.types.Operand(ref=ref)), timeout=30), "no-such-matrix")
        self.expect_code(NF, lambda: self.stub.GetGraph(pb.graphs.GetGraphRequest(graph_id="no-such-graph"),
                                                        timeout=30), "no-such-graph")
        name = f"nf{self.rng.integers(1 << 30)}"
        self.stub.CreateGraph(pb.graphs.CreateGraphRequest(graph_id=name, num_vertices=2), timeout=30)
        try:
            edit = pb.graphs.Edit(delete_vertex=pb.graphs.Edit.DeleteVertex(vertex_id=7))
            self.expect_code(NF, lambda: self.stub.ApplyEdits(pb.graphs.ApplyEditsRequest(
                graph_id=name, edits=[pb.graphs.Edit(add_vertex=pb.graphs.Edit.AddVertex()), edit]), timeout=30), "7")
            info = self.stub.GetGraph(pb.graphs.GetGraphRequest(graph_id=name), timeout=30).info
            self.assertEqual((info.version, info.num_vertices), (1, 2), "a failed batch changed the graph")
        finally:
            self.stub.DeleteGraph(pb.graphs.DeleteGraphRequest(graph_id=name), timeout=30)

    def test_already_exists_and_aborted(self):
        name = f"ex{self.rng.integers(1 << 30)}"
        self.stub.CreateGraph(pb.graphs.CreateGraphRequest(graph_id=name, num_vertices=1), timeout=30)
        try:
            self.expect_code(grpc.StatusCode.ALREADY_EXISTS, lambda: self.stub.CreateGraph(
                pb.graphs.CreateGraphRequest(graph_id=name, num_vertices=1), timeout=30), name)
            self.expect_code(grpc.StatusCode.ABORTED, lambda: self.stub.ApplyEdits(pb.graphs.ApplyEditsRequest(
                graph_id=name, expected_version=5, edits=[pb.graphs.Edit(add_vertex=pb.graphs.Edit.AddVertex())]),
                timeout=30), "5", "1")
        finally:
            self.stub.DeleteGraph(pb.graphs.DeleteGraphRequest(graph_id=name), timeout=30)

    def test_negative_cycle_is_failed_precondition(self):
        n = 6
        w = np.full((n, n), np.inf, dtype=np.float32)
        w[0, 1] = 1
        w[2, 3], w[3, 4], w[4, 2] = 1, -2, 0.5  # the cycle 2 -> 3 -> 4 -> 2 weighs -0.5
        details = self.expect_code(grpc.StatusCode.FAILED_PRECONDITION, lambda: self.stub.Apsp(
            pb.ops.ApspRequest(dense=matrix_pb(w)), timeout=30))
        self.assertRegex(details, r"\b[234]\b", "the message names no vertex of the cycle")
        edges = pb.ops.EdgeList(num_vertices=3, src=[0, 1, 2], dst=[1, 2, 0], weight=[1, 1, -5])
        self.expect_code(grpc.StatusCode.FAILED_PRECONDITION, lambda: self.stub.Apsp(
            pb.ops.ApspRequest(edges=edges), timeout=30))

    def upload(self, a, chunk=1 << 20):
        a = np.ascontiguousarray(a)
        data = a.tobytes()

        def parts():
            m = matrix_pb(a)
            yield pb.mat.UploadMatrixRequest(header=pb.mat.UploadMatrixRequest.Header(
                shape=pb.types.MatrixShape(rows=m.rows, cols=m.cols, dtype=m.dtype)))
            for off in range(0, len(data), chunk):
                yield pb.mat.UploadMatrixRequest(chunk=pb.mat.UploadMatrixRequest.Chunk(
                    offset=off, data=data[off:off + chunk]))

        return self.stub.UploadMatrix(parts(), timeout=60).matrix

    def test_resource_exhausted(self):
        RE = grpc.StatusCode.RESOURCE_EXHAUSTED
        # Over --max_matrix_elements (4 Mi): 2100 x 2000 elements, sent in 1 MiB chunks.
        self.expect_code(RE, lambda: self.upload(np.zeros((2100, 2000), np.float32)))
        # Over the 32 MiB stored-matrix quota: 7.2 MB uploads, the fifth cannot fit.
        refs = []
        try:
            with self.assertRaises(grpc.RpcError) as cm:
                for _ in range(6):
                    refs.append(self.upload(np.ones((1800, 1000), np.float32)).ref)
            self.assertEqual(cm.exception.code(), RE, cm.exception.details())
            self.assertEqual(len(refs), 4)
            # The stored matrices are intact and usable.
            got = b"".join(p.chunk.data for p in self.stub.DownloadMatrix(
                pb.mat.DownloadMatrixRequest(ref=refs[0]), timeout=60) if p.HasField("chunk"))
            self.assertEqual(got, np.ones((1800, 1000), np.float32).tobytes())
        finally:
            for ref in refs:
                self.stub.DeleteMatrix(pb.mat.DeleteMatrixRequest(ref=ref), timeout=30)
        # PLACEMENT_INLINE for a result over the 8 MiB max message size: a 9 MB transpose.
        ref = self.upload(np.zeros((1500, 1500), np.float32)).ref
        try:
            out = pb.types.OutputOptions(placement=pb.types.OutputOptions.PLACEMENT_INLINE)
            self.expect_code(RE, lambda: self.stub.Transpose(pb.ops.TransposeRequest(
                a=pb.types.Operand(ref=ref), output=out), timeout=60))
        finally:
            self.stub.DeleteMatrix(pb.mat.DeleteMatrixRequest(ref=ref), timeout=30)

    def test_deadline_exceeded(self):
        a = matrix_pb(self.rng.standard_normal((800, 800)))
        before = time.time()
        self.expect_code(grpc.StatusCode.DEADLINE_EXCEEDED, lambda: self.stub.Svd(
            pb.ops.SvdRequest(a=pb.types.Operand(inline=a)), timeout=0.05))
        self.assertLess(time.time() - before, 10)
        # The server recovers: a small SVD right after works.
        r = self.stub.Svd(pb.ops.SvdRequest(a=pb.types.Operand(inline=matrix_pb(np.diag([3.0, 1.0, 2.0])))),
                          timeout=60)
        s = np.frombuffer(r.s.inline.data, dtype=np.float64)
        np.testing.assert_allclose(s, [3, 2, 1], rtol=1e-12)

    def test_metrics_move(self):
        before = scrape_metrics()
        a = matrix_pb(self.rng.standard_normal((20, 30)).astype(np.float32))
        for _ in range(3):
            self.stub.Transpose(pb.ops.TransposeRequest(a=pb.types.Operand(inline=a)), timeout=30)
        with self.assertRaises(grpc.RpcError):
            self.stub.GetGraph(pb.graphs.GetGraphRequest(graph_id="metrics-missing"), timeout=30)
        after = scrape_metrics()
        key = dict(method="Transpose")
        self.assertEqual(metric_sum(after, "gcompute_requests_total", code="OK", **key)
                         - metric_sum(before, "gcompute_requests_total", code="OK", **key), 3)
        self.assertEqual(metric_sum(after, "gcompute_request_duration_seconds_count", **key)
                         - metric_sum(before, "gcompute_request_duration_seconds_count", **key), 3)
        self.assertGreater(metric_sum(after, "gcompute_request_duration_seconds_sum", **key),
                           metric_sum(before, "gcompute_request_duration_seconds_sum", **key))
        self.assertGreaterEqual(metric_sum(after, "gcompute_received_bytes_total", **key)
                                - metric_sum(before, "gcompute_received_bytes_total", **key), 3 * 20 * 30 * 4)
        self.assertGreater(metric_sum(after, "gcompute_requests_total", method="GetGraph", code="NOT_FOUND"),
                           metric_sum(before, "gcompute_requests_total", method="GetGraph", code="NOT_FOUND"))


def health_check(channel):
    """grpc.health.v1.Health/Check with an empty service name, encoded by hand (Debian ships no
    grpc_health module): the request is empty; the response's field 1 is the serving status."""
    call = channel.unary_unary("/grpc.health.v1.Health/Check",
                               request_serializer=lambda x: x, response_deserializer=lambda x: x)
    raw = call(b"", timeout=10)
    if raw == b"":
        return 0  # UNKNOWN (proto3 default)
    if len(raw) != 2 or raw[0] != 0x08:
        raise AssertionError(f"unexpected health response {raw!r}")
    return raw[1]


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-bin", required=True)
    parser.add_argument("--cli-bin", required=True)
    parser.add_argument("--proto-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    ARGS, rest = parser.parse_known_args()
    try:
        unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
    finally:
        stop_server()  # also after an interrupt or an error in the harness


if __name__ == "__main__":
    main()
