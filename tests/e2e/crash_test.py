#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Crash test of the graph store's persistence: the real gcompute-server with --data-dir,
killed with SIGKILL at random moments while clients stream edit batches at it.

After every restart each graph must equal exactly what was acknowledged: every acknowledged
batch present, and a batch that was in flight when the server died either wholly present or
wholly absent. The expected graphs come from an independent Python model of the edit
semantics (graphs.proto). Graph creation and deletion must survive restarts too. Small
--graph-snapshot-bytes make snapshots (and log rotation) happen during the run, so kills
land in them as well. At the end, Apsp/ShortestPath on a stored graph (served from the APSP
cache, updated incrementally after edge additions and lowered weights) are checked against
SciPy.

Independent of the machine's speed: each iteration kills the server only after a random
number of acknowledged batches (40 to 120, then 0 to 0.3 s more), not after a fixed time, so
a loaded machine with slow fsyncs still writes enough log for snapshots to happen; and the
server picks its own port (--listen=127.0.0.1:0, read back from its start-up line), so no
other process can take the port between choosing and binding it. On failure it prints the
seed (replay with --seed), the iteration, the data directory and the server's log.

Usage: crash_test.py --server-bin PATH --proto-dir DIR --work-dir DIR [--iterations N] [--seed S]
"""

import argparse
import copy
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import scipy.sparse.csgraph

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (stub generation)

ARGS = None
pb = None
grpc = None


class Model:
    """One graph, as graphs.proto defines the edits."""

    def __init__(self, n):
        self.vertices = set(range(n))
        self.edges = {}  # id -> (tails, heads, weight)
        self.next_v, self.next_e, self.version = n, 0, 1

    def apply(self, batch):
        """batch: list of (kind, args); ids refer to the graph as the batch goes."""
        for kind, a in batch:
            if kind == "add_vertex":
                self.vertices.add(self.next_v)
                self.next_v += 1
            elif kind == "add_edge":
                self.edges[self.next_e] = (list(a[0]), list(a[1]), a[2])
                self.next_e += 1
            elif kind == "set_weight":
                t, h, _ = self.edges[a[0]]
                self.edges[a[0]] = (t, h, a[1])
            elif kind == "delete_edge":
                del self.edges[a[0]]
            elif kind == "delete_vertex":
                v = a[0]
                for eid in sorted(self.edges):
                    t, h, w = self.edges[eid]
                    if v in t or v in h:
                        t = [x for x in t if x != v]
                        h = [x for x in h if x != v]
                        if t and h:
                            self.edges[eid] = (t, h, w)
                        else:
                            del self.edges[eid]
                self.vertices.remove(v)
        self.version += 1

    def random_batch(self, rng):
        """A valid batch, computed against a scratch copy so ids stay consistent."""
        scratch = copy.deepcopy(self)
        batch = []
        for _ in range(rng.randint(1, 4)):
            vs = sorted(scratch.vertices)
            r = rng.random()
            if r < 0.25 or len(vs) < 2:
                op = ("add_vertex", ())
            elif r < 0.65:
                tails = rng.sample(vs, rng.randint(1, min(2, len(vs))))
                heads = rng.sample(vs, rng.randint(1, min(2, len(vs))))
                op = ("add_edge", (tails, heads, float(rng.randint(1, 40)) / 4))
            elif r < 0.8 and scratch.edges:
                op = ("set_weight", (rng.choice(sorted(scratch.edges)), float(rng.randint(1, 40)) / 4))
            elif r < 0.9 and scratch.edges:
                op = ("delete_edge", (rng.choice(sorted(scratch.edges)),))
            else:
                op = ("delete_vertex", (rng.choice(vs),))
            batch.append(op)
            scratch.apply([op])
        return batch

    def matches(self, resp):
        if resp.info.version != self.version or list(resp.vertices) != sorted(self.vertices):
            return False
        got = {e.id: (list(e.tails), list(e.heads), e.weight) for e in resp.edges}
        return got == self.edges


def edit_pb(kind, a):
    E = pb.graphs.Edit
    if kind == "add_vertex":
        return E(add_vertex=E.AddVertex())
    if kind == "add_edge":
        return E(add_edge=E.AddEdge(tails=a[0], heads=a[1], weight=a[2]))
    if kind == "set_weight":
        return E(set_weight=E.SetWeight(edge_id=a[0], weight=a[1]))
    if kind == "delete_edge":
        return E(delete_edge=E.DeleteEdge(edge_id=a[0]))
    return E(delete_vertex=E.DeleteVertex(vertex_id=a[0]))


class Server:
    def __init__(self, data_dir, log_path, extra=()):
        self.addr = None
        self.log_path = log_path
        self.log = open(log_path, "a")
        self.log_start = self.log.tell()  # this start's lines follow
        self.proc = subprocess.Popen(
            [ARGS.server_bin, "--listen=127.0.0.1:0", "--metrics_listen=", "--device=cpu",
             f"--data_dir={data_dir}", "--graph_snapshot_bytes=6000", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)

    def own_log(self):
        """What this server wrote to the (shared, appended) log so far."""
        with open(self.log_path, errors="replace") as f:
            f.seek(self.log_start)
            return f.read()

    def wait_ready(self):
        deadline = time.time() + 60
        while self.addr is None:  # the bound port, from the start-up line
            m = re.search(r"listening on \S+ \(port (\d+)\)", self.own_log())
            if m:
                self.addr = f"127.0.0.1:{m.group(1)}"
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"gcompute-server exited with {self.proc.returncode} at start-up")
            if time.time() > deadline:
                raise RuntimeError("gcompute-server did not report its port within 60 s")
            time.sleep(0.05)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gcompute-server exited with {self.proc.returncode} at start-up")
            try:
                with grpc.insecure_channel(self.addr) as ch:
                    pb.grpc.ComputeStub(ch).ListGraphs(pb.graphs.ListGraphsRequest(), timeout=2)
                return
            except grpc.RpcError:
                if time.time() > deadline:
                    raise RuntimeError("gcompute-server did not answer within 60 s")
                time.sleep(0.1)

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.log.close()

    def stop(self):
        e2e_test.stop_process(self.proc, 30)
        if not self.log.closed:
            self.log.close()


def writer(addr, gid, model, rng, stop, state):
    """Streams batches until the server dies or stop is set. state[gid] = in-flight batch."""
    with grpc.insecure_channel(addr) as ch:
        stub = pb.grpc.ComputeStub(ch)
        while not stop.is_set():
            batch = model.random_batch(rng)
            state[gid] = batch
            req = pb.graphs.ApplyEditsRequest(graph_id=gid, expected_version=model.version,
                                              edits=[edit_pb(k, a) for k, a in batch])
            try:
                resp = stub.ApplyEdits(req, timeout=10)
            except grpc.RpcError as e:
                if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                                grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN,
                                grpc.StatusCode.INTERNAL):
                    return  # the server died: the batch stays "in flight"
                state["error"] = f"{gid}: {e.code()} {e.details()}"
                return
            if resp.version != model.version + 1:
                state["error"] = f"{gid}: version {resp.version}, expected {model.version + 1}"
                return
            model.apply(batch)  # acknowledged
            state[gid] = None
            state["acked"] += 1


def check_graphs(addr, models, inflight, extra_graphs):
    """Each graph equals its model, or its model plus the whole in-flight batch (adopted)."""
    with grpc.insecure_channel(addr) as ch:
        stub = pb.grpc.ComputeStub(ch)
        listed = sorted(g.graph_id for g in stub.ListGraphs(pb.graphs.ListGraphsRequest()).graphs)
        want = sorted(list(models) + list(extra_graphs))
        assert listed == want, f"graphs after restart: {listed}, expected {want}"
        adopted = 0
        for gid, model in models.items():
            resp = stub.GetGraph(pb.graphs.GetGraphRequest(graph_id=gid), timeout=10)
            if model.matches(resp):
                continue
            batch = inflight.get(gid)
            assert batch is not None, f"{gid} differs from the acknowledged batches " \
                                      f"(version {resp.info.version}, model {model.version})"
            with_batch = copy.deepcopy(model)
            with_batch.apply(batch)
            assert with_batch.matches(resp), \
                f"{gid} is neither the acknowledged state nor it plus the whole in-flight batch " \
                f"(version {resp.info.version}, model {model.version}): a partial batch?"
            models[gid] = with_batch
            adopted += 1
        return adopted


def dense_of(resp):
    ids = list(resp.vertices)
    idx = {v: i for i, v in enumerate(ids)}
    w = np.full((len(ids), len(ids)), np.inf)
    for e in resp.edges:
        for t in e.tails:
            for h in e.heads:
                w[idx[t], idx[h]] = min(w[idx[t], idx[h]], np.float32(e.weight))
    return ids, w


def check_apsp(addr, gid):
    with grpc.insecure_channel(addr) as ch:
        stub = pb.grpc.ComputeStub(ch)
        resp = stub.GetGraph(pb.graphs.GetGraphRequest(graph_id=gid), timeout=10)
        ids, w = dense_of(resp)
        n = len(ids)
        want = scipy.sparse.csgraph.floyd_warshall(np.where(np.isinf(w), 0, w), directed=True) \
            if n else np.zeros((0, 0))
        # csgraph treats 0 as "no edge"; the weights here are all positive.
        r = stub.Apsp(pb.ops.ApspRequest(graph_id=gid, next_hop=True), timeout=60)
        got = np.frombuffer(r.distances.inline.data, dtype=np.float32).reshape(n, n)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        if n >= 2:
            s, t = ids[0], ids[-1]
            p = stub.ShortestPath(pb.ops.ShortestPathRequest(
                graph=pb.ops.ApspRequest(graph_id=gid), source=s, target=t), timeout=60)
            assert p.reachable == np.isfinite(want[0, n - 1]), (p, want[0, n - 1])
            if p.reachable:
                assert abs(p.length - want[0, n - 1]) <= 1e-4 * (1 + abs(p.length))
                assert list(p.vertices)[0] == s and list(p.vertices)[-1] == t
        return n


def main():
    global ARGS, pb, grpc
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server-bin", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ARGS = ap.parse_args()
    import grpc as grpc_module

    grpc = grpc_module
    e2e_test.grpc = grpc_module
    shutil.rmtree(ARGS.work_dir, ignore_errors=True)
    os.makedirs(ARGS.work_dir)
    e2e_test.generate_stubs(ARGS.proto_dir, os.path.join(ARGS.work_dir, "gen"))
    pb = e2e_test.Stubs()
    rng = random.Random(ARGS.seed)
    print(f"seed {ARGS.seed}", flush=True)
    data_dir = os.path.join(ARGS.work_dir, "data")
    log_path = os.path.join(ARGS.work_dir, "server.log")

    models = {}
    extra = set()  # graphs created outside the writers (must survive; some deleted later)
    inflight = {}
    total_acked = total_adopted = 0
    server = None
    it = 0
    try:
        for it in range(ARGS.iterations + 1):
            server = Server(data_dir, log_path)
            server.wait_ready()
            total_adopted += check_graphs(server.addr, models, inflight, extra)
            if it == ARGS.iterations:
                break
            with grpc.insecure_channel(server.addr) as ch:
                stub = pb.grpc.ComputeStub(ch)
                # Create and delete graphs (acknowledged before the kill window).
                gid = f"w{it}"
                n = rng.randint(1, 6)
                stub.CreateGraph(pb.graphs.CreateGraphRequest(graph_id=gid, num_vertices=n))
                models[gid] = Model(n)
                name = f"extra{it}"
                stub.CreateGraph(pb.graphs.CreateGraphRequest(
                    graph_id=name, num_vertices=3,
                    edges=[pb.graphs.Hyperedge(tails=[0], heads=[1, 2], weight=1.5)]))
                extra.add(name)
                if it >= 2:
                    old = f"extra{it - 2}"
                    stub.DeleteGraph(pb.graphs.DeleteGraphRequest(graph_id=old))
                    extra.discard(old)
            stop = threading.Event()
            state = {"acked": 0}
            threads = [threading.Thread(target=writer, args=(server.addr, g, m, random.Random(rng.random()),
                                                             stop, state))
                       for g, m in models.items()]
            for t in threads:
                t.start()
            # Kill after a number of acknowledged batches rather than after a fixed time: on a
            # loaded machine (slow fsyncs) a fixed window acknowledged too few batches for any
            # snapshot to happen. The cap keeps a stuck server from hanging the test.
            target, started = rng.randint(40, 120), time.time()
            while state["acked"] < target and "error" not in state and time.time() - started < 60:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.3))
            server.kill9()
            stop.set()
            for t in threads:
                t.join(timeout=30)
            assert "error" not in state, state["error"]
            inflight = {g: b for g, b in state.items() if g in models and b is not None}
            total_acked += state["acked"]
            print(f"iteration {it}: {state['acked']} batches acknowledged "
                  f"in {time.time() - started:.1f} s, {len(inflight)} in flight at the kill",
                  flush=True)
        # The last start may be taking a snapshot of the log it recovered: give it time.
        deadline = time.time() + 30
        while not any(f.startswith("snap-") for f in os.listdir(data_dir)) and time.time() < deadline:
            time.sleep(0.1)
        snaps = [f for f in os.listdir(data_dir) if f.startswith("snap-")]
        assert snaps, f"no snapshot was taken: {sorted(os.listdir(data_dir))}"
        assert total_acked > 50, f"only {total_acked} batches were acknowledged: the test ran too little"
        # APSP of stored graphs, then again after edge additions and a lowered weight (served
        # incrementally from the cache) against SciPy.
        gid = max(models, key=lambda g: len(models[g].vertices))
        check_apsp(server.addr, gid)
        with grpc.insecure_channel(server.addr) as ch:
            stub = pb.grpc.ComputeStub(ch)
            for step in range(3):
                m = models[gid]
                vs = sorted(m.vertices)
                batch = [("add_edge", ([rng.choice(vs)], [rng.choice(vs)], 0.25))]
                if m.edges:
                    e = rng.choice(sorted(m.edges))
                    batch.append(("set_weight", (e, max(0.125, m.edges[e][2] / 2))))
                stub.ApplyEdits(pb.graphs.ApplyEditsRequest(
                    graph_id=gid, edits=[edit_pb(k, a) for k, a in batch]))
                m.apply(batch)
                check_apsp(server.addr, gid)
        print(f"ok: {ARGS.iterations} kills, {total_acked} acknowledged batches, "
              f"{total_adopted} in-flight batches found applied whole", flush=True)
    except BaseException:
        sys.stderr.write(f"FAILED at iteration {it} (seed {ARGS.seed}: replay with --seed "
                         f"{ARGS.seed}); work directory {ARGS.work_dir}\n")
        if os.path.isdir(data_dir):
            sys.stderr.write("data directory: " + ", ".join(
                f"{f} ({os.path.getsize(os.path.join(data_dir, f))} B)"
                for f in sorted(os.listdir(data_dir))) + "\n")
        with open(log_path, errors="replace") as f:
            log = f.read()
        split = server.log_start if server is not None else len(log)
        sys.stderr.write("earlier starts (server log tail):\n" +
                         "".join(log[:split].splitlines(True)[-30:]))
        sys.stderr.write("this start (server log):\n" + log[split:][-20000:])
        raise
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
