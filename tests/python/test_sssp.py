# SPDX-License-Identifier: Apache-2.0
"""Single-source shortest paths (Client.sssp) through the Python client: edge lists with
negative weights (from potentials, so without negative cycles), scipy.sparse matrices and
stored graphs with non-contiguous vertex ids, checked against a float64 Bellman-Ford
(oracle.py) and scipy.sparse.csgraph.bellman_ford, and exactly against the contract of the
f32 answer: every parent edge gives its vertex's distance (dist[p] + w in f32) and no edge
improves any distance. Negative cycles reachable or not, bad arguments, jobs, stored results."""
import re
import uuid

import grpc
import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

import gcompute
from gcompute import AddEdge, AddVertex, DeleteVertex
from gcompute.v1 import operations_pb2, service_pb2_grpc, types_pb2

from oracle import bellman_ford


def fresh_id(prefix="sssp"):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def potential_edges(rng, n, m, *, lo=0.5, hi=10.0, spread=20.0, root=None):
    """m random edges over 0..n-1 (parallel edges and self-loops included) with weights
    c + p[u] - p[v], c in [lo, hi]: many negative, yet every cycle is longer than lo per edge.
    With a root, n - 1 more edges (a random tree) make every vertex reachable from it.
    Weights are rounded to float32, as they travel."""
    p = rng.uniform(-spread, spread, n)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    if root is not None and n > 1:
        order = np.concatenate([[root], rng.permutation(np.delete(np.arange(n), root))])
        up = order[(rng.random(n - 1) * np.arange(1, n)).astype(np.int64)]
        src, dst = np.concatenate([src, up]), np.concatenate([dst, order[1:]])
        m += n - 1
    w = (rng.uniform(lo, hi, m) + p[src] - p[dst]).astype(np.float32).astype(np.float64)
    return src, dst, w


def tolerance(n, ref, w):
    """How far an f32 distance may be from float64's: up to n - 1 additions, each rounding
    by half an ulp of a partial sum, and the partial sums are themselves distances."""
    big = float(np.max(np.abs(ref[np.isfinite(ref)]), initial=0))
    return n * 2.0**-22 * (1 + big + float(np.max(np.abs(w[np.isfinite(w)]), initial=0)))


def check_sssp(r, n, src, dst, w, source_row, ids=None):
    """Checks an SsspResult over rows 0..n-1 (edges given by rows) against the float64 oracle
    and the exact f32 contract; ids maps rows to the vertex ids path_to returns."""
    d, par = r.distances, r.parents
    assert d.dtype == np.float32 and d.shape == (n,)
    assert par.dtype == np.int32 and par.shape == (n,)
    ref = bellman_ford(n, src, dst, w, source_row)
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(d), finite)
    assert r.reachable == int(finite.sum())
    assert np.all(par[~finite] == -1)
    assert par[source_row] == source_row and d[source_row] == 0
    tol = tolerance(n, ref, w)
    assert np.all(np.abs(d[finite].astype(np.float64) - ref[finite]) <= tol), \
        np.max(np.abs(d[finite] - ref[finite]))
    # The f32 answer is a fixpoint: no edge improves a distance (dist[u] + w as f32) ...
    w32 = w.astype(np.float32)
    reach = np.isfinite(d[src])
    assert np.all(d[src[reach]] + w32[reach] >= d[dst[reach]])
    # ... and each parent edge (the least of parallel ones) gives its vertex's distance.
    least = {}
    for u, v, x in zip(src.tolist(), dst.tolist(), w32.tolist()):
        least[u, v] = min(least.get((u, v), np.inf), x)
    for v in np.nonzero(finite)[0].tolist():
        if v == source_row:
            continue
        p = int(par[v])
        assert (p, v) in least, f"parent {p} of {v} is no edge"
        assert d[v] == np.float32(d[p]) + np.float32(least[p, v]), (v, p)
    # Parents form a tree rooted at the source; path_to walks it.
    label = (lambda row: row) if ids is None else (lambda row: int(ids[row]))
    for v in range(n):
        path = r.path_to(label(v))
        if not finite[v]:
            assert path is None
            continue
        assert path[0] == label(source_row) and path[-1] == label(v) and len(path) <= n
        rows = path if ids is None else [int(np.searchsorted(ids, x)) for x in path]
        length = sum(least[a, b] for a, b in zip(rows, rows[1:]))
        assert abs(length - ref[v]) <= tol


@pytest.mark.parametrize("n, m", [(1, 0), (1, 3), (2, 3), (7, 20), (97, 400), (500, 3000)])
def test_edge_lists_with_negative_weights(client, rng, n, m):
    source = int(rng.integers(0, n))
    src, dst, w = potential_edges(rng, n, m, root=source)
    assert n < 97 or np.any(w < 0)
    edges = gcompute.EdgeList(src=src, dst=dst, weight=w, num_vertices=n)
    r = client.sssp(edges, source)
    assert isinstance(r, gcompute.SsspResult) and r.vertex_ids is None and r.reachable == n
    assert r.stats.device == "cpu"
    check_sssp(r, n, src, dst, w, source)


def test_non_negative_weights_and_parallel_edges(client, rng):
    n = 61
    src, dst, w = potential_edges(rng, n, 300, lo=0.0, hi=5.0, spread=0.0, root=3)  # Dijkstra's
    w[:10] = 0.0
    src = np.concatenate([src, src[:40]])  # parallel edges: the least weight counts
    dst = np.concatenate([dst, dst[:40]])
    w = np.concatenate([w, w[:40] + 3.0])
    r = client.sssp(gcompute.EdgeList(src=src, dst=dst, weight=w, num_vertices=n), 3)
    check_sssp(r, n, src, dst, w, 3)


def test_scipy_sparse_matches_csgraph(client, rng):
    n = 97
    src, dst, w = potential_edges(rng, n, 500, root=5)
    keep = np.unique(src * n + dst, return_index=True)[1]  # csgraph would sum duplicates
    src, dst, w = src[keep], dst[keep], w[keep]
    keep = w != 0  # csgraph would drop explicit zeros of a dense conversion; keep it simple
    src, dst, w = src[keep], dst[keep], w[keep]
    g = scipy.sparse.csr_matrix((w, (src, dst)), shape=(n, n))
    r = client.sssp(g, 5)
    ref = scipy.sparse.csgraph.bellman_ford(g, directed=True, indices=5)
    assert np.array_equal(np.isinf(r.distances), np.isinf(ref))
    f = np.isfinite(ref)
    assert np.all(np.abs(r.distances[f] - ref[f]) <= tolerance(n, ref, w))
    check_sssp(r, n, src, dst, w, 5)
    # Integer weights travel as float32 as well.
    gi = scipy.sparse.csr_matrix((np.arange(1, len(src) + 1), (src, dst)), shape=(n, n))
    ri = client.sssp(gi, 5)
    np.testing.assert_array_equal(ri.distances, scipy.sparse.csgraph.bellman_ford(
        gi, directed=True, indices=5).astype(np.float32))


def test_unreachable_vertices(client):
    # 0 -> 1 -> 2, 3 -> 1 (3 cannot be reached), 4 isolated, 5 <- 4.
    edges = gcompute.EdgeList([(0, 1, 2.0), (1, 2, -1.5), (3, 1, -100.0), (4, 5, 1.0)],
                              num_vertices=7)
    r = client.sssp(edges, 0)
    np.testing.assert_array_equal(r.distances, np.array([0, 2, 0.5] + [np.inf] * 4, np.float32))
    np.testing.assert_array_equal(r.parents, np.array([0, 0, 1, -1, -1, -1, -1], np.int32))
    assert r.reachable == 3
    assert r.path_to(2) == [0, 1, 2] and r.path_to(0) == [0]
    assert r.path_to(3) is None and r.path_to(6) is None
    with pytest.raises(gcompute.InvalidArgument, match="7"):
        r.path_to(7)
    # +inf weights are no edges.
    r = client.sssp(gcompute.EdgeList([(0, 1, np.inf), (1, 0, 1.0)]), 0)
    assert r.distances.tolist() == [0, np.inf] and r.parents.tolist() == [0, -1]


def test_negative_cycles(client, rng):
    # 0 -> 1 -> 2 -> 3 -> 1 with the cycle 1 2 3 of length -1.
    cyc = [(0, 1, 1.0), (1, 2, 2.0), (2, 3, -4.0), (3, 1, 1.0), (3, 4, 1.0)]
    with pytest.raises(gcompute.FailedPrecondition, match="negative cycle") as info:
        client.sssp(gcompute.EdgeList(cyc, num_vertices=6), 0)
    assert int(re.search(r"vertex (\d+)", info.value.message).group(1)) in (1, 2, 3)
    # A negative self-loop, and a negative edge back into the source.
    for edges in ([(0, 1, 1.0), (1, 1, -0.5)], [(0, 1, 1.0), (1, 0, -2.0)]):
        with pytest.raises(gcompute.FailedPrecondition, match="negative cycle"):
            client.sssp(gcompute.EdgeList(edges), 0)
    # From 5 (isolated) or 4 (after the cycle) the cycle is not reachable: no error.
    r = client.sssp(gcompute.EdgeList(cyc, num_vertices=6), 5)
    assert r.reachable == 1 and r.parents.tolist() == [-1] * 5 + [5]
    r = client.sssp(gcompute.EdgeList(cyc + [(5, 0, -1.0)], num_vertices=7), 4)
    assert r.reachable == 1 and r.distances[4] == 0
    # A larger graph: a reachable part without negative cycles, and a negative cycle behind a
    # vertex that only leads into it.
    n = 50
    src, dst, w = potential_edges(rng, 40, 200, root=0)
    src = np.concatenate([src, [40, 41, 42, 43, 45]])
    dst = np.concatenate([dst, [41, 42, 43, 41, 0]])
    w = np.concatenate([w, [1.0, 1.0, -5.0, 1.0, 2.0]])
    r = client.sssp(gcompute.EdgeList(src=src, dst=dst, weight=w, num_vertices=n), 0)
    check_sssp(r, n, src, dst, w, 0)
    assert not np.any(np.isfinite(r.distances[40:]))
    with pytest.raises(gcompute.FailedPrecondition, match="negative cycle"):
        client.sssp(gcompute.EdgeList(src=src, dst=dst, weight=w, num_vertices=n), 40)


def test_stored_graph_with_non_contiguous_vertex_ids(client, rng):
    gid = fresh_id()
    n = 30
    # Potentials of ids 0 .. n+1: every tail-head pair costs at least 1 more than their
    # difference, so weights are often negative but no cycle is. Integer weights are exact.
    p = rng.integers(-20, 20, n + 2)
    p[n], p[n + 1] = p[3] - 5, p[3] - 8
    edges = []
    for _ in range(120):
        tails = sorted(set(rng.integers(0, n, rng.integers(1, 3)).tolist()))
        heads = sorted(set(rng.integers(0, n, rng.integers(1, 3)).tolist()))
        c = int(rng.integers(1, 10)) + max(int(p[h] - p[t]) for t in tails for h in heads)
        edges.append((tails, heads, float(c)))
    client.create_graph(n, edges, graph_id=gid)
    try:
        client.apply_edits(gid, [
            DeleteVertex(0), DeleteVertex(7), DeleteVertex(8),
            AddVertex(), AddVertex(),                               # ids n, n + 1
            AddEdge(3, n, -4.0),                                    # the only edge into n
            AddEdge(n, [n + 1, 5], float(max(-3, p[5] - p[n]) + 1)),  # the only one into n + 1
        ])
        snap = client.graph(gid)
        ids = np.array(snap.vertices, dtype=np.int64)
        assert 0 not in ids and 7 not in ids and ids[-1] == n + 1
        row = {int(v): i for i, v in enumerate(ids)}
        src, dst, w = [], [], []
        for e in snap.edges:
            for t in e.tails:
                for h in e.heads:
                    src.append(row[t])
                    dst.append(row[h])
                    w.append(e.weight)
        src, dst, w = np.array(src), np.array(dst), np.array(w)
        assert np.any(w < 0)
        for source in (3, n, n + 1, int(ids[1]), int(ids[-4])):
            r = client.sssp(gid, source)
            np.testing.assert_array_equal(r.vertex_ids, ids)
            assert r.row_of(source) == row[source]
            check_sssp(r, len(ids), src, dst, w, row[source], ids=ids)
        r = client.sssp(gid, 3)
        assert r.path_to(n + 1) == [3, n, n + 1] and r.distances[row[n]] == -4
        assert r.path_to(3) == [3]
        with pytest.raises(gcompute.InvalidArgument, match="not a vertex"):
            r.path_to(0)
        with pytest.raises(gcompute.NotFound, match="source"):
            client.sssp(gid, 7)  # deleted
        with pytest.raises(gcompute.NotFound, match="source"):
            client.sssp(gid, n + 100)
        # Close a negative cycle 3 -> n -> 5 -> 3: it fails from 3, naming a vertex id on it,
        # but not from n + 1, which reaches nothing.
        client.apply_edits(gid, [AddEdge(5, 3, -1000.0)])
        with pytest.raises(gcompute.FailedPrecondition, match="negative cycle") as info:
            client.sssp(gid, 3)
        assert int(re.search(r"vertex (\d+)", info.value.message).group(1)) in (3, 5, n)
        r = client.sssp(gid, n + 1)
        assert r.reachable == 1 and r.path_to(n + 1) == [n + 1] and r.path_to(3) is None
    finally:
        client.delete_graph(gid)
    with pytest.raises(gcompute.NotFound):
        client.sssp(gid, 3)


def test_stored_graph_with_ids_0_to_n_minus_1_has_no_vertex_ids(client):
    gid = fresh_id()
    client.create_graph(4, [(0, 1, 1.0), ([1, 2], 3, -0.5), (3, 2, 2.0)], graph_id=gid)
    try:
        r = client.sssp(gid, 0)
        assert r.vertex_ids is None
        assert r.distances.tolist() == [0, 1, 2.5, 0.5] and r.parents.tolist() == [0, 0, 3, 1]
        assert r.path_to(2) == [0, 1, 3, 2] and r.reachable == 4
        # The same as the edge list of its pairs.
        e = client.sssp(gcompute.EdgeList([(0, 1, 1), (1, 3, -0.5), (2, 3, -0.5), (3, 2, 2)]), 0)
        np.testing.assert_array_equal(e.distances, r.distances)
    finally:
        client.delete_graph(gid)


def raw_sssp(addr, request):
    """The status a raw stub gets for Sssp(request)."""
    with grpc.insecure_channel(addr) as ch:
        with pytest.raises(grpc.RpcError) as info:
            service_pb2_grpc.ComputeStub(ch).Sssp(request, timeout=30)
        return info.value.code(), info.value.details()


def test_bad_arguments(client, server):
    edges = gcompute.EdgeList([(0, 1, 1.0), (1, 2, 1.0)], num_vertices=5)
    for source in (5, -1, 2**40):
        with pytest.raises(gcompute.InvalidArgument, match=r"source = %d\b" % source):
            client.sssp(edges, source)
    # f32 weights only: the client refuses i32 edge lists, and so does the server.
    with pytest.raises(gcompute.InvalidArgument, match="f32"):
        client.sssp(gcompute.EdgeList([(0, 1, 1)], dtype="i32"), 0)
    req = operations_pb2.SsspRequest(source=0)
    req.edges.num_vertices = 2
    req.edges.src.append(0)
    req.edges.dst.append(1)
    req.edges.weight.append(1.0)
    req.edges.dtype = types_pb2.DTYPE_I32
    code, details = raw_sssp(server.addr, req)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "dtype" in details, details
    # No graph at all; no vertices; edges outside the vertices; NaN weights.
    code, details = raw_sssp(server.addr, operations_pb2.SsspRequest(source=0))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "graph" in details, details
    with pytest.raises(gcompute.InvalidArgument, match="num_vertices"):
        client.sssp(gcompute.EdgeList([], num_vertices=0), 0)
    with pytest.raises(gcompute.InvalidArgument, match=r"edges\.dst\[1\]"):
        client.sssp(gcompute.EdgeList([(0, 1, 1.0), (1, 9, 1.0)], num_vertices=3), 0)
    with pytest.raises(gcompute.InvalidArgument, match="weight"):
        client.sssp(gcompute.EdgeList([(0, 1, np.nan)]), 0)
    # Dense matrices (arrays, stored ones, APSP results) are refused before anything is sent.
    with pytest.raises(gcompute.InvalidArgument, match="apsp"):
        client.sssp(np.zeros((3, 3), np.float32), 0)
    with pytest.raises(gcompute.InvalidArgument, match="stored dense matrix"):
        client.sssp(gcompute.Ref("m-anything"), 0)
    with pytest.raises(gcompute.InvalidArgument, match="EdgeList"):
        client.sssp([(0, 1, 1.0)], 0)
    with pytest.raises(gcompute.InvalidArgument, match="empty"):
        client.sssp("", 0)
    with pytest.raises(gcompute.NotFound):
        client.sssp("no-such-graph", 0)


def test_stored_results(client, rng):
    src, dst, w = potential_edges(rng, 40, 160, root=0)
    edges = gcompute.EdgeList(src=src, dst=dst, weight=w, num_vertices=40)
    r = client.sssp(edges, 0)
    s = client.sssp(edges, 0, store=True, ttl_seconds=60)
    try:
        assert isinstance(s.distances, gcompute.Ref) and isinstance(s.parents, gcompute.Ref)
        assert s.distances.shape == (1, 40) and s.distances.dtype == "f32"
        assert s.parents.dtype == "i32" and s.reachable == r.reachable
        np.testing.assert_array_equal(client.download(s.distances)[0], r.distances)
        np.testing.assert_array_equal(client.download(s.parents)[0], r.parents)
        with pytest.raises(gcompute.InvalidArgument, match="store"):
            s.path_to(1)
    finally:
        client.delete(s.distances)
        client.delete(s.parents)


def test_jobs(client, rng):
    n = 97
    src, dst, w = potential_edges(rng, n, 400, root=11)
    edges = gcompute.EdgeList(src=src, dst=dst, weight=w, num_vertices=n)
    job = client.submit("sssp", edges, 11, priority="high")
    assert isinstance(job, gcompute.Job) and job.method == "Sssp"
    got, direct = job.result(), client.sssp(edges, 11)
    assert job.status().state == "SUCCEEDED"
    np.testing.assert_array_equal(got.distances, direct.distances)
    np.testing.assert_array_equal(got.parents, direct.parents)
    assert got.reachable == direct.reachable and got.vertex_ids is None
    check_sssp(got, n, src, dst, w, 11)

    gid = fresh_id()
    client.create_graph(3, [(0, 1, 1.0), (1, 2, -0.5)], graph_id=gid)
    try:
        client.apply_edits(gid, [DeleteVertex(0), AddEdge(2, 1, 4.0)])
        got = client.submit("sssp", gid, 2).result()
        assert got.vertex_ids.tolist() == [1, 2] and got.distances.tolist() == [4.0, 0.0]
        assert got.path_to(1) == [2, 1]
    finally:
        client.delete_graph(gid)

    # Errors: validated at submit, or raised by result() once the job failed.
    with pytest.raises(gcompute.InvalidArgument):
        client.submit("sssp", np.zeros((2, 2), np.float32), 0)
    job = client.submit("sssp", gcompute.EdgeList([(0, 1, -1.0), (1, 0, -1.0)]), 0)
    with pytest.raises(gcompute.FailedPrecondition, match="negative cycle"):
        job.result()
    assert job.status().state == "FAILED"
