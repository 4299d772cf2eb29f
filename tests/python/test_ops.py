# SPDX-License-Identifier: Apache-2.0
"""Transpose, matmul and SVD through the Python client against a real server, checked with
NumPy in higher precision (float64 for float32/float16 inputs, long double for float64) on
fresh random inputs of ragged shapes."""
import numpy as np
import pytest

import gcompute

RAGGED = [(1, 1), (1, 7), (7, 1), (2, 3), (13, 17), (31, 1), (64, 33), (127, 131)]
EPS = {np.float16: 2.0**-11, np.float32: 2.0**-24, np.float64: 2.0**-53}


def random_array(rng, shape, dtype):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-(2**31), 2**31 - 1, size=shape, dtype=np.int64).astype(dtype)
    return rng.uniform(-1, 1, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
@pytest.mark.parametrize("shape", RAGGED + [(3, 5, 7), (1, 1, 9), (4, 1, 1)])
def test_transpose(client, rng, shape, dtype):
    a = random_array(rng, shape, dtype)
    at = client.transpose(a)
    assert at.dtype == a.dtype and at.shape == np.swapaxes(a, -1, -2).shape
    assert np.array_equal(at, np.swapaxes(a, -1, -2))  # bitwise: a permutation
    assert at.flags.writeable and at.flags.c_contiguous


def test_transpose_accepts_any_layout_and_byte_order(client, rng):
    base = rng.uniform(size=(6, 10))
    for a in (base[::2, 1::3], np.asfortranarray(base), base.astype(">f8"), base.T):
        assert np.array_equal(client.transpose(a), np.asarray(a, dtype=np.float64).T)


def matmul_bound(a, b, k, eps, out_eps=0.0):
    """|fl(a @ b) - a @ b| <= (gamma_k + out_eps) * (|a| @ |b|) elementwise (Higham 3.5)."""
    gamma = k * eps / (1 - k * eps)
    return (gamma + out_eps) * (np.abs(a) @ np.abs(b)) + np.finfo(np.float64).tiny


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (1, 7, 1), (7, 1, 5), (13, 17, 11), (64, 33, 127),
                                   (129, 65, 3)])
def test_matmul(client, rng, m, k, n, dtype):
    a, b = random_array(rng, (m, k), dtype), random_array(rng, (k, n), dtype)
    c = client.matmul(a, b)
    assert c.dtype == dtype and c.shape == (m, n)
    wide = np.longdouble if dtype == np.float64 else np.float64
    ref = a.astype(wide) @ b.astype(wide)
    assert np.all(np.abs(c - ref) <= matmul_bound(a.astype(wide), b.astype(wide), k, EPS[dtype]))


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_matmul_transposes_alpha_beta(client, rng, ta, tb):
    m, k, n = 17, 23, 5
    a = rng.uniform(-1, 1, (k, m) if ta else (m, k))
    b = rng.uniform(-1, 1, (n, k) if tb else (k, n))
    c0 = rng.uniform(-1, 1, (m, n))
    alpha, beta = -1.5, 0.25
    c = client.matmul(a, b, transpose_a=ta, transpose_b=tb, alpha=alpha, beta=beta, c=c0)
    oa, ob = (a.T if ta else a).astype(np.longdouble), (b.T if tb else b).astype(np.longdouble)
    ref = alpha * (oa @ ob) + beta * c0.astype(np.longdouble)
    bound = matmul_bound(abs(alpha) * oa, ob, k + 2, EPS[np.float64]) + 4 * EPS[np.float64] * abs(beta * c0)
    assert np.all(np.abs(c - ref) <= bound)


def test_matmul_batched_and_broadcast(client, rng):
    a = rng.uniform(-1, 1, (4, 9, 6)).astype(np.float32)
    b1 = rng.uniform(-1, 1, (6, 3)).astype(np.float32)
    b4 = rng.uniform(-1, 1, (4, 6, 3)).astype(np.float32)
    for b in (b1, b1[None], b4):
        c = client.matmul(a, b)
        assert c.shape == (4, 9, 3)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        assert np.all(np.abs(c - ref) <= matmul_bound(a.astype(np.float64), np.broadcast_to(b, (4, 6, 3)), 6, EPS[np.float32]))
    # 2-D operands give a 2-D result; a batch of one given as 3-D stays 3-D.
    assert client.matmul(a[0], b1).shape == (9, 3)
    assert client.matmul(a[:1], b1).shape == (1, 9, 3)


@pytest.mark.parametrize("precision,unit", [("tf32", 2.0**-11), ("bf16", 2.0**-8), ("f16", 2.0**-11),
                                            ("f32", 2.0**-24), ("default", 2.0**-24)])
def test_matmul_precisions(client, rng, precision, unit):
    m, k, n = 33, 47, 19
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    c = client.matmul(a, b, precision=precision)
    assert c.dtype == np.float32
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # Inputs rounded to the precision (relative error <= unit each), products exact in f32,
    # sums in f32.
    bound = (2 * unit + unit**2) * (np.abs(a) @ np.abs(b)) + matmul_bound(a.astype(np.float64), b.astype(np.float64), k, EPS[np.float32])
    assert np.all(np.abs(c - ref) <= bound)
    if precision in ("bf16", "f16"):
        # A reduced precision must actually be used: the error exceeds f32's on some entry.
        assert np.max(np.abs(c - ref)) > np.max(matmul_bound(a.astype(np.float64), b.astype(np.float64), k, EPS[np.float32]))


def test_matmul_float16_operands(client, rng):
    a = rng.uniform(-1, 1, (20, 30)).astype(np.float16)
    b = rng.uniform(-1, 1, (30, 10)).astype(np.float16)
    c = client.matmul(a, b)
    assert c.dtype == np.float16
    ref = a.astype(np.float64) @ b.astype(np.float64)
    bound = matmul_bound(a.astype(np.float64), b.astype(np.float64), 30, EPS[np.float32]) + EPS[np.float16] * np.abs(ref) + 2.0**-24
    assert np.all(np.abs(c.astype(np.float64) - ref) <= bound)


def test_matmul_integers_are_sent_as_float64(client, rng):
    a = rng.integers(-5, 5, (4, 6))
    b = rng.integers(-5, 5, (6, 3))
    c = client.matmul(a, b)
    assert c.dtype == np.float64 and np.array_equal(c, (a @ b).astype(np.float64))


def check_svd(a, u, s, vt, full_matrices, eps):
    m, n = a.shape
    p = min(m, n)
    a64 = a.astype(np.float64)
    ref = np.linalg.svd(a64, compute_uv=False)
    scale = max(ref[0] if p else 0.0, np.finfo(np.float64).tiny)
    tol = 20 * max(m, n) * eps
    assert s.shape == (p,) and np.all(np.diff(s.astype(np.float64)) <= 0), "s not descending"
    assert np.all(np.abs(s - ref) <= tol * scale)
    if u is None:
        return
    assert u.shape == ((m, m) if full_matrices else (m, p))
    assert vt.shape == ((n, n) if full_matrices else (p, n))
    uu, vv = u.astype(np.float64), vt.astype(np.float64)
    assert np.max(np.abs(uu.T @ uu - np.eye(uu.shape[1]))) <= tol
    assert np.max(np.abs(vv @ vv.T - np.eye(vv.shape[0]))) <= tol
    recon = uu[:, :p] @ np.diag(s.astype(np.float64)) @ vv[:p, :]
    assert np.max(np.abs(recon - a64)) <= tol * scale


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", RAGGED + [(5, 5), (97, 89)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(client, rng, shape, dtype, full_matrices):
    a = rng.uniform(-1, 1, shape).astype(dtype)
    u, s, vt = client.svd(a, full_matrices=full_matrices)
    assert u.dtype == s.dtype == vt.dtype == dtype
    check_svd(a, u, s, vt, full_matrices, EPS[dtype])
    s_only = client.svd(a, compute_uv=False)
    assert isinstance(s_only, np.ndarray)
    check_svd(a, None, s_only, None, full_matrices, EPS[dtype])


def test_svd_defaults_follow_numpy(client, rng):
    a = rng.uniform(-1, 1, (9, 4))
    u, s, vt = client.svd(a)
    nu, ns, nvt = np.linalg.svd(a)
    assert (u.shape, s.shape, vt.shape) == (nu.shape, ns.shape, nvt.shape)  # full_matrices=True
    assert np.allclose(s, ns, rtol=0, atol=1e-12)


def test_svd_of_rank_deficient_and_zero_matrices(client, rng):
    x = rng.uniform(-1, 1, (12, 3))
    a = x @ rng.uniform(-1, 1, (3, 10))  # rank 3
    u, s, vt = client.svd(a, full_matrices=False)
    check_svd(a, u, s, vt, False, EPS[np.float64])
    assert np.all(s[3:] <= 1e-12 * s[0])
    z = client.svd(np.zeros((4, 6)), compute_uv=False)
    assert np.array_equal(z, np.zeros(4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_svd(client, rng, dtype):
    a = rng.uniform(-1, 1, (5, 11, 7)).astype(dtype)
    for full in (False, True):
        u, s, vt = client.batched_svd(a, full_matrices=full)
        assert u.shape == ((5, 11, 11) if full else (5, 11, 7)) and s.shape == (5, 7) and vt.shape == (5, 7, 7)
        for i in range(5):
            check_svd(a[i], u[i], s[i], vt[i], full, EPS[dtype])
    # svd of a 3-D array is the batched call, as numpy.linalg.svd treats stacks.
    s3 = client.svd(a, compute_uv=False)
    assert s3.shape == (5, 7)
    assert np.allclose(s3, np.linalg.svd(a.astype(np.float64), compute_uv=False), rtol=0, atol=1e-4 if dtype == np.float32 else 1e-12)
    with pytest.raises(gcompute.InvalidArgument, match="3-D"):
        client.batched_svd(a[0])


@pytest.mark.parametrize("method", ["auto", "jacobi", "polar"])
def test_svd_methods_agree_with_numpy(client, rng, method):
    a = rng.standard_normal((13, 8))
    u, s, vt = client.svd(a, full_matrices=False, method=method)
    check_svd(a, u, s, vt, False, EPS[np.float64])
    assert np.allclose(s, np.linalg.svd(a, compute_uv=False), rtol=0, atol=1e-12)


def test_svd_unknown_method_is_invalid(client):
    with pytest.raises(gcompute.InvalidArgument, match="method"):
        client.svd(np.eye(3), method="qr")


def test_svd_not_converged_raises_linalg_error(client, rng):
    a = rng.uniform(-1, 1, (40, 30))
    with pytest.raises(np.linalg.LinAlgError) as info:
        client.svd(a, method="polar", max_sweeps=1)
    e = info.value
    assert isinstance(e, gcompute.SvdNotConverged) and e.sweeps == 1
    u, s, vt = e.result
    assert s.shape == (30,)


def test_empty_matrices(client):
    assert client.transpose(np.zeros((0, 5), np.float32)).shape == (5, 0)
    c = client.matmul(np.ones((3, 0)), np.ones((0, 4)))
    assert c.shape == (3, 4) and np.array_equal(c, np.zeros((3, 4)))
    assert client.matmul(np.ones((0, 2)), np.ones((2, 4))).shape == (0, 4)
    u, s, vt = client.svd(np.zeros((0, 3)))
    assert (u.shape, s.shape, vt.shape) == ((0, 0), (0,), (3, 3))
    assert np.allclose(vt @ vt.T, np.eye(3))
    assert client.apsp(np.zeros((0, 0), np.float32)).shape == (0, 0)


def test_inputs_the_client_rejects_name_the_argument(client):
    with pytest.raises(gcompute.InvalidArgument, match=r"a must be 2-D .* got shape \(5,\)"):
        client.transpose(np.zeros(5))
    with pytest.raises(gcompute.InvalidArgument, match="b has dtype complex128"):
        client.matmul(np.zeros((2, 2)), np.zeros((2, 2), dtype=complex))
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError
        client.svd(np.zeros((2, 2, 2, 2)))
    with pytest.raises(gcompute.InvalidArgument, match="precision 'f8'"):
        client.matmul(np.zeros((2, 2)), np.zeros((2, 2)), precision="f8")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eigh_follows_numpy(client, rng, dtype):
    x = rng.standard_normal((9, 9))
    a = ((x + x.T) / 2).astype(dtype)
    w, v = client.eigh(a)
    nw = np.linalg.eigh(a.astype(np.float64))[0]
    tol = 1e-4 if dtype == np.float32 else 1e-12
    assert w.shape == (9,) and v.shape == (9, 9) and w.dtype == dtype
    assert np.allclose(w, nw, rtol=0, atol=tol * np.abs(nw).max())
    assert np.allclose(a @ v, v * w, rtol=0, atol=10 * tol * np.abs(nw).max())
    assert np.allclose(v.T @ v, np.eye(9), rtol=0, atol=10 * tol)
    # A stack, values only.
    stack = np.stack([a, 2 * a])
    ws = client.eigh(stack, compute_vectors=False)
    assert ws.shape == (2, 9)
    assert np.allclose(ws[1], 2 * ws[0], rtol=0, atol=10 * tol * np.abs(nw).max())


def test_eigh_asymmetric_is_invalid(client):
    a = np.arange(9.0).reshape(3, 3)
    with pytest.raises(gcompute.InvalidArgument, match="not symmetric"):
        client.eigh(a)
