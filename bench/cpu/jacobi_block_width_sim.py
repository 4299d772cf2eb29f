#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Outer sweeps of the GPU's blocked one-sided Jacobi, emulated on the CPU, by block width.

The emulation follows kernels/cuda/svd.cu's blocked driver: columns in blocks of `width`, de
Rijk ordering before every sweep, block pairs in round-robin rounds, each pair set tested on
its Gram matrix G at tol = sqrt(n) eps and, when it fails, one inner sweep of one-sided Jacobi
on G's Cholesky factor (inner tolerance 4 eps) whose rotations are applied to the pair's
columns. It answers one question before a narrower-pair GPU design is built: does a narrower
block pair (more pairs a round, a shorter inner solve, more rounds) cost outer sweeps? It prints
the sweeps until a sweep rotates nothing, per width, matrix and type.

usage: /usr/bin/python3 bench/cpu/jacobi_block_width_sim.py [--n 256] [--widths 4,8,16]
           [--seeds 1,2] [--dtypes f64,f32]
(n = 256 at three widths, two seeds and both types: about a minute on the development VM;
n = 512 at widths 8 and 16: about four minutes.)
"""
import argparse

import numpy as np


def round_robin(blocks, r):
    """Pairs of round r of the circle method on `blocks` (even) players."""
    ring = [0] + [1 + (i + r) % (blocks - 1) for i in range(blocks - 1)]
    return [(ring[p], ring[blocks - 1 - p]) for p in range(blocks // 2)]


def inner_sweep(g, tol):
    """One cyclic sweep of one-sided Jacobi on the Cholesky factor of g: the rotations (Q)."""
    n = g.shape[0]
    r = np.linalg.cholesky(g.astype(np.float64)).T.astype(g.dtype)
    q = np.eye(n, dtype=g.dtype)
    for i in range(n - 1):
        for j in range(i + 1, n):
            a, b, c = r[:, i] @ r[:, i], r[:, j] @ r[:, j], r[:, i] @ r[:, j]
            if abs(c) <= tol * np.sqrt(a * b):
                continue
            zeta = (b - a) / (2 * c)
            t = (1.0 if zeta >= 0 else -1.0) / (abs(zeta) + np.sqrt(1 + zeta * zeta))
            cs = 1 / np.sqrt(1 + t * t)
            sn = cs * t
            for m in (r, q):
                x = m[:, i].copy()
                m[:, i] = cs * x - sn * m[:, j]
                m[:, j] = sn * x + cs * m[:, j]
    return q


def sweeps_to_converge(a, width, max_sweeps=40):
    w = a.copy()
    n = w.shape[1]
    blocks = n // width
    eps = np.finfo(w.dtype).eps
    tol = np.sqrt(n) * eps
    for sweep in range(1, max_sweeps + 1):
        w = w[:, np.argsort(-np.linalg.norm(w, axis=0))]
        rotated = False
        for r in range(blocks - 1):
            for i, j in round_robin(blocks, r):
                cols = np.r_[i * width:(i + 1) * width, j * width:(j + 1) * width]
                x = w[:, cols]
                g = x.T @ x
                d = np.sqrt(np.diag(g))
                cos = np.abs(g / np.outer(d, d))
                np.fill_diagonal(cos, 0)
                if cos.max() <= tol:
                    continue
                rotated = True
                w[:, cols] = x @ inner_sweep(g, 4 * eps)
        if not rotated:
            return sweep
    return max_sweeps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--widths", default="4,8,16")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--dtypes", default="f64,f32")
    args = ap.parse_args()
    print("n     seed type width sweeps")
    for seed in (int(s) for s in args.seeds.split(",")):
        a = np.random.default_rng(seed).standard_normal((args.n, args.n))
        for name in args.dtypes.split(","):
            dtype = np.float64 if name == "f64" else np.float32
            for width in (int(x) for x in args.widths.split(",")):
                sweeps = sweeps_to_converge(a.astype(dtype), width)
                print(f"{args.n:<5} {seed:<4} {name:<4} {width:<5} {sweeps}", flush=True)


if __name__ == "__main__":
    main()
