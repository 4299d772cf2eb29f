# SPDX-License-Identifier: Apache-2.0
"""Replica selection without servers: the hash vectors shared with the C++ client's
tests/client/test_balance.cc (so both clients agree on every graph's owner), rendezvous
properties, and target expansion."""
import collections

import pytest

import gcompute
from gcompute.routing import expand_target, fmix64, fnv1a64, graph_owner, rendezvous_score


def test_fnv1a64_published_vectors():
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8


# The same literals as RendezvousScore.FixedVectorsSharedWithThePythonClient in
# tests/client/test_balance.cc.
SCORES = [
    ("10.0.0.1:50051", "graph-0", 0x18D73BF2F5167026),
    ("10.0.0.2:50051", "graph-0", 0xC4C41F71C51F29C5),
    ("a:1", "x", 0x312849B6243B51DD),
    ("[::1]:50051", "g-00000000000000ff", 0x865FF663DC69B8BE),
    ("127.0.0.1:7", "roads", 0xF8D005F5898A60BC),
    ("", "", 0x080E795202020C51),
    ("h\u00f6st:1", "g", 0xF3485FC09DC12EBD),  # hashed as UTF-8 bytes
]
OWNERS = [("graph-0", 1), ("graph-1", 0), ("graph-2", 1), ("graph-3", 0), ("affinity-0", 0),
          ("affinity-1", 2), ("roads", 0), ("g-0123456789abcdef", 1)]


@pytest.mark.parametrize("replica,graph_id,score", SCORES)
def test_rendezvous_score_matches_the_cpp_client(replica, graph_id, score):
    assert rendezvous_score(replica, graph_id) == score
    assert gcompute.rendezvous_score(replica, graph_id) == score


def test_graph_owner_matches_the_cpp_client():
    replicas = ["10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"]
    for graph_id, owner in OWNERS:
        assert graph_owner(replicas, graph_id) == owner, graph_id


def test_score_is_fmix64_of_fnv1a64_of_name_pipe_id():
    # docs/deployment.md's formula, step by step, against an independent bit-level fmix64.
    def fmix(h):
        for shift, mult in ((33, 0xFF51AFD7ED558CCD), (33, 0xC4CEB9FE1A85EC53)):
            h = ((h ^ (h >> shift)) * mult) % (1 << 64)
        return h ^ (h >> 33)

    for name, gid, _ in SCORES:
        h = fnv1a64(f"{name}|{gid}".encode())
        assert fmix64(h) == fmix(h) == rendezvous_score(name, gid)


def test_owner_spreads_and_moves_only_the_removed_replicas_graphs():
    three, two = ["a:1", "b:1", "c:1"], ["a:1", "c:1"]
    counts = collections.Counter()
    n = 3000
    for g in range(n):
        gid = f"g-{g}"
        before = three[graph_owner(three, gid)]
        counts[before] += 1
        if before != "b:1":
            assert two[graph_owner(two, gid)] == before, gid
    for r in three:
        assert n / 3 - n / 10 < counts[r] < n / 3 + n / 10, counts


def test_owner_does_not_depend_on_list_order():
    a, b = ["x:1", "y:2", "z:3", "w:4"], ["z:3", "w:4", "x:1", "y:2"]
    for g in range(100):
        assert a[graph_owner(a, str(g))] == b[graph_owner(b, str(g))]


def test_expand_target_lists():
    assert expand_target("127.0.0.1:50051") == ["127.0.0.1:50051"]
    assert expand_target("a:1, b:2 ,c:3") == ["a:1", "b:2", "c:3"]
    with pytest.raises(gcompute.InvalidArgument, match="empty entry"):
        expand_target("a:1,,b:2")
    with pytest.raises(gcompute.InvalidArgument, match="twice"):
        expand_target("a:1,a:1")
    with pytest.raises(gcompute.InvalidArgument, match="no port"):
        expand_target("dns:///nohostport")
    with pytest.raises(gcompute.InvalidArgument):
        gcompute.Client("a:1,,b:2")


def test_expand_target_dns_resolves_every_address():
    local = expand_target("dns:///localhost:50051")
    assert local == sorted(local)
    assert "127.0.0.1:50051" in local or "[::1]:50051" in local
    assert expand_target("dns:///127.0.0.1:7") == ["127.0.0.1:7"]
    assert expand_target("dns://8.8.8.8/127.0.0.1:7") == ["127.0.0.1:7"]  # authority ignored
    assert expand_target("dns:///[::1]:7") == ["[::1]:7"]
    with pytest.raises(gcompute.Unavailable, match="cannot resolve"):
        expand_target("dns:///no-such-host.invalid:1")


def test_client_routes_graphs_to_their_owner():
    with gcompute.Client("10.0.0.1:50051,10.0.0.2:50051,10.0.0.3:50051") as c:
        assert c.replicas == ["10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"]
        for graph_id, owner in OWNERS:
            assert c.replica_for_graph(graph_id) == c.replicas[owner]
