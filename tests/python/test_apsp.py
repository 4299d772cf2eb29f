# SPDX-License-Identifier: Apache-2.0
"""APSP and shortest paths through the Python client: dense float32 / int32 matrices,
scipy.sparse matrices, edge lists and stored results, checked against a float64 Floyd-Warshall
(oracle.py) and against scipy.sparse.csgraph, with every next-hop path walked."""
import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph

import gcompute

from oracle import floyd_warshall

I32_NO_EDGE = 2147483647


def random_dense(rng, n, density, integer=False):
    if integer:
        w = rng.integers(1, 1000, (n, n)).astype(np.float64)
    else:
        w = rng.uniform(0.5, 10, (n, n))
    w[rng.random((n, n)) > density] = np.inf
    return w


def walk(next_hop, w, i, j):
    """The path next_hop gives from i to j and its float64 length (w: +inf = no edge)."""
    path, length = [i], 0.0
    while path[-1] != j:
        v = int(next_hop[path[-1], j])
        assert v >= 0 and len(path) <= len(w), f"broken path {path} -> {v}"
        length += w[path[-1], v]
        path.append(v)
    return path, length


def check_apsp(d, nh, w, tol):
    ref = floyd_warshall(w)
    n = len(w)
    finite = np.isfinite(ref)
    assert np.array_equal(np.isfinite(d.astype(np.float64)) if d.dtype != np.int32 else d != I32_NO_EDGE, finite)
    got = d.astype(np.float64)
    assert np.all(np.abs(got[finite] - ref[finite]) <= tol * (1 + np.abs(ref[finite])))
    if nh is None:
        return
    assert nh.dtype == np.int32 and nh.shape == (n, n)
    assert np.array_equal(np.diag(nh), np.arange(n))
    assert np.all(nh[~finite] == -1)
    for i, j in zip(*np.nonzero(finite)):
        if i != j:
            _, length = walk(nh, w, i, j)
            assert abs(length - ref[i, j]) <= tol * (1 + abs(ref[i, j]))


@pytest.mark.parametrize("n", [1, 2, 7, 31, 64, 97])
def test_dense_float32(client, rng, n):
    w = random_dense(rng, n, 0.3)
    d, nh = client.apsp(w.astype(np.float32), next_hop=True)
    assert d.dtype == np.float32 and d.shape == (n, n)
    check_apsp(d, nh, w.astype(np.float32), tol=n * 2.0**-23)
    assert np.array_equal(client.apsp(w.astype(np.float32)), d)  # without next hops


@pytest.mark.parametrize("n", [1, 5, 64])
def test_dense_int32_is_exact(client, rng, n):
    w = random_dense(rng, n, 0.2, integer=True)
    wi = np.where(np.isfinite(w), w, I32_NO_EDGE).astype(np.int64)
    d, nh = client.apsp(wi, next_hop=True)  # int64 input travels as int32
    assert d.dtype == np.int32
    check_apsp(d, nh, w, tol=0)


def test_negative_weights_and_negative_cycles(client, rng):
    n = 12
    w = random_dense(rng, n, 0.4, integer=True)
    w[np.isfinite(w)] -= 100  # many negative edges
    # Keep it acyclic (upper triangle only) so that no negative cycle exists.
    w[np.tril_indices(n)] = np.inf
    d, nh = client.apsp(np.where(np.isfinite(w), w, I32_NO_EDGE).astype(np.int32), next_hop=True)
    check_apsp(d, nh, w, tol=0)
    w[n - 1, 0] = -1000  # close a negative cycle through vertex 0
    w[0, n - 1] = 1
    with pytest.raises(gcompute.FailedPrecondition, match="negative cycle"):
        client.apsp(w.astype(np.float32))


def test_scipy_sparse_matches_csgraph(client, rng):
    n = 40
    rows = rng.integers(0, n, 150)
    cols = rng.integers(0, n, 150)
    vals = rng.uniform(0.5, 10, 150)
    vals[:10] = 0  # explicit zeros are zero-weight edges, for csgraph as for the client
    for fmt in ("csr", "coo", "csc", "lil"):
        g = scipy.sparse.coo_matrix((vals, (rows, cols)), shape=(n, n)).asformat(fmt)
        assert g.tocsr().nnz == len(set(zip(rows.tolist(), cols.tolist())))  # zeros stay stored
        d, nh = client.apsp(g, next_hop=True)
        ref = scipy.sparse.csgraph.floyd_warshall(g.tocsr(), directed=True)
        assert np.array_equal(np.isinf(d), np.isinf(ref))
        f = np.isfinite(ref)
        assert np.all(np.abs(d[f] - ref[f]) <= n * 2.0**-23 * (1 + ref[f]))
    ints = scipy.sparse.csr_matrix((rng.integers(1, 50, 150), (rows, cols)), shape=(n, n))
    di = client.apsp(ints)
    ref = scipy.sparse.csgraph.floyd_warshall(ints, directed=True)
    assert di.dtype == np.int32
    assert np.array_equal(np.where(di == I32_NO_EDGE, np.inf, di), ref)
    with pytest.raises(gcompute.InvalidArgument, match="square"):
        client.apsp(scipy.sparse.csr_matrix((3, 4)))


def test_edge_lists(client, rng):
    edges = [(0, 1, 4.0), (1, 2, 1.5), (0, 2, 9.0), (2, 3, 2.0), (0, 1, 3.0)]  # parallel 0->1 keeps 3
    d = client.apsp(gcompute.EdgeList(edges, num_vertices=5))
    w = np.full((5, 5), np.inf)
    for u, v, x in edges:
        w[u, v] = min(w[u, v], x)
    assert np.array_equal(d, floyd_warshall(w).astype(np.float32))
    el = gcompute.EdgeList(src=[0, 1], dst=[1, 0], weight=[7, -2], dtype="i32")
    assert el.num_vertices == 2
    assert np.array_equal(client.apsp(el), np.array([[0, 7], [-2, 0]], dtype=np.int32))
    assert client.apsp(gcompute.EdgeList([], num_vertices=3)).shape == (3, 3)
    with pytest.raises(gcompute.InvalidArgument, match="triples"):
        gcompute.EdgeList([(0, 1)])
    with pytest.raises(gcompute.InvalidArgument, match="integer weights"):
        gcompute.EdgeList([(0, 1, 2.5)], dtype="i32")
    with pytest.raises(gcompute.InvalidArgument, match="non-integer vertex ids"):
        gcompute.EdgeList([(0.5, 1, 2.5)])


def test_shortest_path_from_a_graph_and_from_stored_results(client, rng):
    n = 30
    w = random_dense(rng, n, 0.15)
    w32 = w.astype(np.float32)
    ref = floyd_warshall(w32)
    stored = client.apsp(w32, next_hop=True, store=True)
    assert isinstance(stored, gcompute.StoredApsp)
    assert stored.distances.shape == (n, n) and stored.distances.dtype == "f32"
    assert stored.next_hop.dtype == "i32"
    try:
        pairs = [(0, n - 1), (3, 3), (n - 1, 0)] + [tuple(rng.integers(0, n, 2)) for _ in range(5)]
        for s, t in pairs:
            for p in (client.shortest_path(w32, s, t), client.shortest_path(stored, s, t)):
                assert p.reachable == bool(np.isfinite(ref[s, t]))
                if p.reachable:
                    assert p.vertices[0] == s and p.vertices[-1] == t
                    length = sum(float(w32[a, b]) for a, b in zip(p.vertices, p.vertices[1:]))
                    assert abs(length - ref[s, t]) <= n * 2.0**-23 * (1 + ref[s, t])
                    assert abs(p.length - ref[s, t]) <= n * 2.0**-23 * (1 + ref[s, t])
                else:
                    assert p.vertices == []
        assert np.array_equal(client.download(stored.distances), client.apsp(w32))
    finally:
        client.delete(stored.distances)
        client.delete(stored.next_hop)
    with pytest.raises(gcompute.NotFound):
        client.shortest_path(stored, 0, 1)
    with pytest.raises(gcompute.InvalidArgument, match="source|target|vertex"):
        client.shortest_path(w32, 0, n)


def test_dense_graph_from_a_ref(client, rng):
    w = random_dense(rng, 20, 0.3).astype(np.float32)
    ref = client.upload(w)
    try:
        assert np.array_equal(client.apsp(ref), client.apsp(w))
    finally:
        client.delete(ref)


def test_bad_graphs(client):
    with pytest.raises(gcompute.InvalidArgument, match="square"):
        client.apsp(np.zeros((3, 4), np.float32))
    with pytest.raises(gcompute.InvalidArgument, match="int32"):
        client.apsp(np.array([[0, 2**40], [1, 0]]))
    with pytest.raises(gcompute.NotFound):
        client.apsp("no-such-graph")
