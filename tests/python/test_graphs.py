# SPDX-License-Identifier: Apache-2.0
"""The graph store through the Python client: create, every kind of edit (checked against a
model kept here), snapshots, versions, listing, deletion, and APSP / shortest paths of a stored
graph against a float64 Floyd-Warshall of the snapshot."""
import json
import subprocess
import uuid

import numpy as np
import pytest

import gcompute
from gcompute import AddEdge, AddVertex, DecomposeVertex, DeleteEdge, DeleteVertex, SetWeight

from oracle import floyd_warshall


def fresh_id(prefix="py"):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def dense_of(snapshot):
    """n x n float64 weights of a snapshot (a hyperedge joins each tail to each head; parallel
    edges keep the smallest weight; vertex ids index the matrix)."""
    n = max(snapshot.vertices, default=-1) + 1
    w = np.full((n, n), np.inf)
    for e in snapshot.edges:
        for t in e.tails:
            for h in e.heads:
                w[t, h] = min(w[t, h], e.weight)
    return w


def test_create_edit_snapshot_delete(client):
    gid = fresh_id()
    info = client.create_graph(4, [(0, 1, 1.5), ([1, 2], 3, 2.0), gcompute.Hyperedge(3, [0, 2], 0.5)],
                               graph_id=gid)
    assert info == gcompute.GraphInfo(gid, 1, 4, 3)
    snap = client.graph(gid)
    assert snap.info == info and snap.vertices == [0, 1, 2, 3]
    assert [(e.id, e.tails, e.heads, e.weight) for e in snap.edges] == [
        (0, (0,), (1,), 1.5), (1, (1, 2), (3,), 2.0), (2, (3,), (0, 2), 0.5)]

    r = client.apply_edits(gid, [
        AddVertex(),                       # vertex 4
        AddEdge(4, [0, 1], 7.0),           # edge 3
        SetWeight(0, 0.25),
        DeleteEdge(2),
        DecomposeVertex(1, move_edge_ids=[1], joining_weight=3.0),  # vertex 5, edge 4: 1 -> 5
        DeleteVertex(0),                   # edge 0 (0 -> 1) loses its only tail: deleted
    ], expected_version=1)
    assert r.version == 2 and len(r.results) == 6
    assert r.results[0].vertex_id == 4
    assert r.results[1].edge_id == 3
    assert (r.results[4].vertex_id, r.results[4].edge_id) == (5, 4)
    assert 0 in r.results[5].deleted_edge_ids
    snap = client.graph(gid)
    assert snap.info.version == 2 and snap.vertices == [1, 2, 3, 4, 5]
    edges = {e.id: (e.tails, e.heads, e.weight) for e in snap.edges}
    assert edges[1] == ((5, 2), (3,), 2.0)  # vertex 1 replaced by 5 in the moved edge
    assert edges[3] == ((4,), (1,), 7.0)    # vertex 0 removed from its heads
    assert edges[4] == ((1,), (5,), 3.0)
    assert 0 not in edges and 2 not in edges
    assert gid in [g.graph_id for g in client.list_graphs()]

    client.delete_graph(gid)
    with pytest.raises(gcompute.NotFound):
        client.graph(gid)
    assert gid not in [g.graph_id for g in client.list_graphs()]


def test_versions_and_atomicity(client):
    gid = fresh_id()
    client.create_graph(3, [(0, 1, 1.0)], graph_id=gid)
    with pytest.raises(gcompute.AlreadyExists):
        client.create_graph(1, graph_id=gid)
    with pytest.raises(gcompute.Aborted, match="version"):
        client.apply_edits(gid, [AddVertex()], expected_version=7)
    # A failing edit in a batch applies nothing, and the message names the edit's index.
    with pytest.raises(gcompute.NotFound, match=r"edits\[1\]\.delete_edge\.edge_id = 99"):
        client.apply_edits(gid, [AddVertex(), DeleteEdge(99)])
    assert client.graph(gid).info == gcompute.GraphInfo(gid, 1, 3, 1)
    with pytest.raises(gcompute.InvalidArgument):
        client.apply_edits(gid, [AddEdge([], [1], 1.0)])
    assert client.apply_edits(gid, [AddVertex()]).version == 2
    client.delete_graph(gid)
    with pytest.raises(gcompute.NotFound):
        client.delete_graph(gid)


def test_server_picks_an_id(client):
    info = client.create_graph(2, [(0, 1, 1.0)])
    assert info.graph_id and info.version == 1
    client.delete_graph(info.graph_id)


def test_apsp_and_paths_of_a_stored_graph(client, rng):
    gid = fresh_id("apsp")
    n = 40
    edges = []
    for _ in range(160):
        tails = sorted(set(rng.integers(0, n, rng.integers(1, 3)).tolist()))
        heads = sorted(set(rng.integers(0, n, rng.integers(1, 3)).tolist()))
        edges.append((tails, heads, float(rng.uniform(0.5, 10))))
    client.create_graph(n, edges, graph_id=gid)
    try:
        for step in range(3):
            snap = client.graph(gid)
            ref = floyd_warshall(dense_of(snap))
            d, nh = client.apsp(gid, next_hop=True)
            f = np.isfinite(ref)
            assert np.array_equal(np.isfinite(d), f)
            assert np.all(np.abs(d[f] - ref[f]) <= len(ref) * 2.0**-23 * (1 + ref[f]))
            s, t = 0, len(ref) - 1
            p = client.shortest_path(gid, s, t)
            assert p.reachable == bool(f[s, t])
            if p.reachable:
                assert p.vertices[0] == s and p.vertices[-1] == t
                assert abs(p.length - ref[s, t]) <= len(ref) * 2.0**-23 * (1 + ref[s, t])
            # Edits change the answers: add a shortcut and raise a weight.
            client.apply_edits(gid, [AddEdge(s, t, 0.125 * (step + 1)), SetWeight(step, 1000.0)])
        assert client.apsp(gid)[0, n - 1] == np.float32(0.125)  # the first shortcut
    finally:
        client.delete_graph(gid)


def test_a_graph_larger_than_one_message_is_read_in_pages(start_server, cli_bin):
    """400000 vertices (about 1.2 MB) under a 1 MiB message limit: several GetGraph pages, which
    the Python client and the C++ CLI join into the whole graph."""
    server = start_server("--max-message-bytes=1048576", name="small-messages")
    with gcompute.Client(server.addr, timeout=120, max_message_bytes=1 << 20) as c:
        c.create_graph(400000, [(0, 399999, 2.5), ([5, 6], 7, 1.0)], graph_id="big")
        g = c.graph("big")
    assert g.vertices == list(range(400000))
    assert [(e.tails, e.heads, e.weight) for e in g.edges] == [((0,), (399999,), 2.5),
                                                                ((5, 6), (7,), 1.0)]
    r = subprocess.run([cli_bin, "--server", server.addr, "--max-message-bytes", "1048576", "graph",
                        "show", "big", "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["vertices"] == list(range(400000))
    assert [(e["tails"], e["heads"], e["weight"]) for e in shown["edges"]] == [([0], [399999], 2.5),
                                                                            ([5, 6], [7], 1.0)]
