# SPDX-License-Identifier: Apache-2.0
"""Three real servers behind one Python client: round robin for stateless calls, each graph on
exactly its rendezvous owner (the same replica the C++ CLI picks), stored matrices on the
replica that created them, failover when a replica stops, and dns:/// targets."""
import re
import subprocess

import numpy as np
import pytest

import gcompute
from gcompute.routing import graph_owner


@pytest.fixture(scope="module")
def replicas(start_server):
    return [start_server("--workers=1", name=f"replica{i}") for i in range(3)]


@pytest.fixture
def balanced(replicas):
    with gcompute.Client(",".join(s.addr for s in replicas), timeout=60) as c:
        yield c


def singles(replicas):
    return [gcompute.Client(s.addr, timeout=30) for s in replicas]


def test_stateless_calls_go_round_robin(balanced, replicas, rng):
    seen = [balanced.info().replica for _ in range(9)]
    assert sorted(seen) == sorted([s.addr for s in replicas] * 3)
    a = rng.uniform(size=(5, 3))
    for _ in range(6):
        assert np.array_equal(balanced.transpose(a), a.T)


def test_graphs_live_on_their_owner_as_the_cpp_cli_places_them(balanced, replicas, cli_bin):
    names = [s.addr for s in replicas]
    # Ids until every replica owns at least two (the owners depend on the ports).
    ids, per_owner = [], [0, 0, 0]
    for k in range(1000):
        if min(per_owner) >= 2:
            break
        ids.append(f"py-owner-{k}")
        per_owner[graph_owner(names, ids[-1])] += 1
    for k, gid in enumerate(ids):
        if k % 2:  # half through the C++ CLI, half through this client
            subprocess.run([cli_bin, "--server", ",".join(names), "graph", "create", gid, "--vertices", "3"],
                           check=True, capture_output=True, timeout=60)
        else:
            balanced.create_graph(3, [(0, 1, 1.0)], graph_id=gid)
    clients = singles(replicas)
    try:
        per_replica = [{g.graph_id for g in c.list_graphs()} for c in clients]
        for gid in ids:
            owner = graph_owner(names, gid)
            assert balanced.replica_for_graph(gid) == names[owner]
            assert [gid in p for p in per_replica] == [i == owner for i in range(3)], gid
            # Later calls reach the owner: edits are visible through the owner's own client.
            balanced.apply_edits(gid, [gcompute.AddVertex()])
            assert clients[owner].graph(gid).info.version == 2
            assert balanced.apsp(gid).shape == (4, 4)
        listed = {g.graph_id for g in balanced.list_graphs()}
        assert set(ids) <= listed
        for gid in ids:
            balanced.delete_graph(gid)
    finally:
        for c in clients:
            c.close()


def test_the_client_names_graphs_when_there_are_several_replicas(balanced, replicas):
    names = [s.addr for s in replicas]
    info = balanced.create_graph(2, [(0, 1, 1.0)])
    assert re.fullmatch(r"g-[0-9a-f]{16}", info.graph_id), info.graph_id
    owner = graph_owner(names, info.graph_id)
    with gcompute.Client(names[owner], timeout=30) as c:
        assert c.graph(info.graph_id).info == info
    balanced.delete_graph(info.graph_id)


def test_stored_matrices_stay_on_their_creator(balanced, replicas, rng):
    names = [s.addr for s in replicas]
    a = rng.uniform(size=(4, 6))
    refs = [balanced.upload(a) for _ in range(3)]
    assert sorted(r.replica for r in refs) == sorted(names)  # round robin spread them
    clients = singles(replicas)
    try:
        for r in refs:
            holder = names.index(r.replica)
            for i, c in enumerate(clients):
                if i == holder:
                    assert np.array_equal(c.download(r.id), a)
                else:
                    with pytest.raises(gcompute.NotFound):
                        c.download(r.id)
            for _ in range(4):  # every call with the ref goes to its holder
                assert np.array_equal(balanced.transpose(r), a.T)
            # A Ref rebuilt from its id alone is routed by the client's memory of it.
            assert np.array_equal(balanced.download(gcompute.Ref(r.id)), a)
        with pytest.raises(gcompute.InvalidArgument, match="different servers"):
            balanced.matmul(refs[0], gcompute.Ref(refs[1].id, replica=refs[1].replica))
    finally:
        for c in clients:
            c.close()
        for r in refs:
            balanced.delete(r)


def test_dns_target_fails_over_to_the_address_that_listens(replicas):
    port = replicas[0].port
    with gcompute.Client(f"dns:///localhost:{port}", timeout=30) as c:
        assert f"127.0.0.1:{port}" in c.replicas
        for _ in range(4):  # [::1] (if localhost has it) refuses: UNAVAILABLE, next replica
            assert c.info().replica == f"127.0.0.1:{port}"


def test_failover_when_a_replica_stops(start_server, rng):
    servers = [start_server("--workers=1", name=f"failover{i}") for i in range(3)]
    names = [s.addr for s in servers]
    with gcompute.Client(",".join(names), timeout=60) as c:
        gone = names[1]
        owned_by_gone = next(g for g in (f"f-{k}" for k in range(1000)) if graph_owner(names, g) == 1)
        c.create_graph(2, graph_id=owned_by_gone)
        assert servers[1].stop() == 0
        a = rng.uniform(size=(3, 4))
        for _ in range(9):  # stateless calls skip the stopped replica
            assert np.array_equal(c.transpose(a), a.T)
            assert c.info().replica != gone
        with pytest.raises(gcompute.Unavailable) as info:
            c.graph(owned_by_gone)  # bound to its owner: not retried elsewhere
        assert info.value.replica == gone
        with pytest.raises(gcompute.Unavailable):
            c.list_graphs()
