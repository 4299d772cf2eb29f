# SPDX-License-Identifier: Apache-2.0
"""Jobs through the Python client: Client.submit for each operation returns a Job whose result
equals what the operation's method returns (checked with NumPy and a float64 Floyd-Warshall);
a job submitted by one client is watched and collected by another; cancel, idempotent keys,
errors at submit and of the operation."""
import numpy as np
import pytest

import gcompute

from oracle import floyd_warshall


def random_graph(rng, n, density=0.3):
    w = rng.integers(1, 10, (n, n)).astype(np.float32)
    w[rng.random((n, n)) > density] = np.inf
    return w


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (13, 17), (3, 5, 7)])
def test_transpose_and_matmul_jobs(client, rng, shape):
    a = rng.uniform(-1, 1, size=shape).astype(np.float32)
    job = client.submit("transpose", a)
    assert isinstance(job, gcompute.Job) and job.id.startswith("j-") and len(job.id) == 34
    assert np.array_equal(job.result(), np.swapaxes(a, -1, -2))
    assert job.status().state == "SUCCEEDED" and job.status().fraction == 1.0
    b = rng.uniform(-1, 1, size=shape[:-2] + (shape[-1], 5)).astype(np.float32)
    got = client.submit("matmul", a, b, priority="high").result()
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_svd_job_matches_numpy(client, rng):
    a = rng.standard_normal((23, 11))
    u, s, vt = client.submit("svd", a, full_matrices=False).result()
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(u @ np.diag(s) @ vt, a, atol=1e-10)


def test_apsp_job_watched_and_collected_by_another_client(server, client, rng):
    n = 301  # 5 rounds of 64
    w = random_graph(rng, n)
    job = client.submit("apsp", w, next_hop=True)
    with gcompute.Client(server.addr) as other:
        assert other.job(job.id).method == "Apsp"
        seen = list(gcompute.jobs.Job(other, job.id, 0, "Apsp", None).watch())
    assert seen and seen[-1].state == "SUCCEEDED"
    assert all(a.fraction <= b.fraction for a, b in zip(seen, seen[1:]))
    d, nxt = job.result()
    np.testing.assert_array_equal(d, floyd_warshall(w).astype(np.float32))
    assert nxt.shape == (n, n) and nxt.dtype == np.int32


def test_idempotent_key_and_cancel(client, rng):
    a = rng.uniform(-1, 1, size=(4, 4)).astype(np.float32)
    first = client.submit("transpose", a, client_job_key="py-key")
    again = client.submit("transpose", a, client_job_key="py-key")
    assert first.id == again.id
    # Seconds of Floyd-Warshall on the CPU backend: the cancel reaches it queued or running.
    big = client.submit("apsp", random_graph(rng, 1500))
    assert big.cancel().state in ("CANCELLED", "RUNNING")
    states = [s.state for s in big.watch()]
    assert states[-1] == "CANCELLED", states
    with pytest.raises(gcompute.Cancelled):
        big.result()


def test_errors_at_submit_and_of_the_operation(client):
    with pytest.raises(gcompute.InvalidArgument, match="not one of"):
        client.submit("upload", np.zeros((2, 2)))
    with pytest.raises(gcompute.InvalidArgument, match="priority"):
        client.submit("transpose", np.zeros((2, 2)), priority="urgent")
    with pytest.raises(gcompute.InvalidArgument):
        client.submit("apsp", np.zeros((2, 3), dtype=np.float32))  # validated at submit
    w = np.array([[0, -1], [-1, 0]], dtype=np.float32)  # a negative cycle: fails when run
    job = client.submit("apsp", w)
    with pytest.raises(gcompute.FailedPrecondition):
        job.result()
    assert job.status().state == "FAILED"
    with pytest.raises(gcompute.NotFound):
        client.job("j-nope")
