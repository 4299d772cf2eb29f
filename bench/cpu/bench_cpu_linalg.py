#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The CPU backend's SVD and Eigh against numpy.linalg on the same OpenBLAS, in one run.

For each type and size it makes one square N(0,1) matrix A (and S = (A + A^T) / 2 for Eigh),
then alternates, rep after rep: numpy.linalg.svd(A, full_matrices=False), our three SVD
methods (bench_cpu_linalg, the C++ side, kept running) and the plain LAPACK ?gesdd call with
its workspace ready (what both wrap), numpy.linalg.eigh(S), our eigh and plain ?syevd.
numpy.linalg computes in double for f32 input (its _commonType) and rounds the results: its f32
times are those of dgesdd / dsyevd.
Every timing is one call's wall time; the table shows medians and numpy/ours speedups (above
1.0: ours is faster). Accuracy columns come from the first rep: residual |A - U S Vt|_F / |A|_F,
orthogonality max |Q^T Q - I|. Numpy and the C++ side run with the same OPENBLAS_NUM_THREADS
(--threads; default: OpenBLAS's own choice, one thread per core). Every timed call follows
a pause (--pause): a multi-threaded OpenBLAS leaves its threads spinning for a while after a
call, and in the other process they would compete with the next call.

usage: /usr/bin/python3 bench/cpu/bench_cpu_linalg.py --binary build/bench/bench_cpu_linalg
           [--sizes 500,1000,2000] [--dtypes f64,f32] [--reps 3] [--warmup 1] [--threads N]
           [--methods auto,jacobi,polar] [--batch 32:1000] [--concurrent 500] [--csv FILE]
"""
import argparse
import os
import sys


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--binary", required=True, help="path of bench_cpu_linalg")
    p.add_argument("--sizes", default="500,1000,2000")
    p.add_argument("--dtypes", default="f64,f32")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1, help="unmeasured rounds before the reps")
    p.add_argument("--pause", type=float, default=0.3,
                   help="seconds of rest before every timed call (see below)")
    p.add_argument("--threads", type=int, default=0, help="OPENBLAS_NUM_THREADS (0: unset)")
    p.add_argument("--methods", default="auto,jacobi,polar")
    p.add_argument("--batch", default="", help="N:COUNT, e.g. 32:1000: also a batch of small SVDs")
    p.add_argument("--concurrent", type=int, default=0,
                   help="N: also 2 concurrent f64 SVDs of N x N, through cpu::svd and raw dgesdd")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--csv", default="")
    return p.parse_args()


ARGS = parse_args()
# Before numpy loads OpenBLAS, so that both sides use the same thread count.
if ARGS.threads > 0:
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)

import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


class Ours:
    """The C++ side: one command per line, one answer per line."""

    def __init__(self, binary):
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def ask(self, command):
        time.sleep(ARGS.pause)
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ok":
            sys.exit(f"bench_cpu_linalg: {command!r} -> {' '.join(line)}")
        return [float(x) for x in line[1:]]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def timed(f):
    time.sleep(ARGS.pause)
    start = time.perf_counter()
    out = f()
    return time.perf_counter() - start, out


def numpy_svd_accuracy(a, u, s, vt):
    a64 = a.astype(np.float64)
    u64, s64, vt64 = u.astype(np.float64), s.astype(np.float64), vt.astype(np.float64)
    residual = np.linalg.norm(a64 - (u64 * s64) @ vt64) / np.linalg.norm(a64)
    eye = np.eye(len(s))
    orth = max(np.abs(u64.T @ u64 - eye).max(), np.abs(vt64 @ vt64.T - eye).max())
    return residual, orth


def numpy_eigh_accuracy(s, w, v):
    s64, w64, v64 = s.astype(np.float64), w.astype(np.float64), v.astype(np.float64)
    residual = np.linalg.norm(s64 @ v64 - v64 * w64) / np.linalg.norm(s64)
    orth = np.abs(v64.T @ v64 - np.eye(len(w))).max()
    return residual, orth


def main():
    rng = np.random.default_rng(ARGS.seed)
    ours = Ours(ARGS.binary)
    methods = [m for m in ARGS.methods.split(",") if m]
    rows = []
    tmp = tempfile.mkdtemp(prefix="bench_cpu_linalg_")
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(f"# OPENBLAS_NUM_THREADS={threads}, numpy {np.__version__}, "
          f"load average at start {os.getloadavg()[0]:.2f}, reps {ARGS.reps}", flush=True)
    for dtype in ARGS.dtypes.split(","):
        npt = np.float32 if dtype == "f32" else np.float64
        for n in [int(x) for x in ARGS.sizes.split(",")]:
            a = rng.standard_normal((n, n)).astype(npt)
            sym = ((a.astype(np.float64) + a.astype(np.float64).T) / 2).astype(npt)
            a_path, s_path = f"{tmp}/a_{dtype}_{n}.bin", f"{tmp}/s_{dtype}_{n}.bin"
            a.tofile(a_path)
            sym.tofile(s_path)
            times = {k: [] for k in ["np_svd", "gesdd", "np_eigh", "eigh", "syevd"] + methods}
            acc, sweeps = {}, {}
            for rep in range(-ARGS.warmup, ARGS.reps):
                check = 1 if rep == 0 else 0
                t, (u, s, vt) = timed(lambda: np.linalg.svd(a, full_matrices=False))
                times["np_svd"].append(t)
                if rep == 0:
                    acc["np_svd"] = numpy_svd_accuracy(a, u, s, vt)
                for m in methods:
                    r = ours.ask(f"svd {m} {dtype} 1 {n} {n} {a_path} {check}")
                    times[m].append(r[0])
                    sweeps[m] = int(r[1])
                    if rep == 0:
                        acc[m] = (r[3], r[4])
                times["gesdd"].append(ours.ask(f"lapack gesdd {dtype} {n} {a_path}")[0])
                t, (w, v) = timed(lambda: np.linalg.eigh(sym))
                times["np_eigh"].append(t)
                if rep == 0:
                    acc["np_eigh"] = numpy_eigh_accuracy(sym, w, v)
                r = ours.ask(f"eigh {dtype} 1 {n} {s_path} {check}")
                times["eigh"].append(r[0])
                if rep == 0:
                    acc["eigh"] = (r[1], r[2])
                times["syevd"].append(ours.ask(f"lapack syevd {dtype} {n} {s_path}")[0])
            times = {k: v[ARGS.warmup:] for k, v in times.items()}
            med = {k: statistics.median(v) for k, v in times.items()}
            row = {"dtype": dtype, "n": n, "median_s": med, "min_s": {k: min(v) for k, v in times.items()},
                   "acc": acc, "sweeps": sweeps}
            rows.append(row)
            line = f"{dtype} n={n}: numpy svd {med['np_svd']:.3f} s, plain gesdd {med['gesdd']:.3f} s"
            for m in methods:
                line += f", {m} {med[m]:.3f} s ({med['np_svd'] / med[m]:.2f}x)"
            line += (f"; numpy eigh {med['np_eigh']:.3f} s, eigh {med['eigh']:.3f} s "
                     f"({med['np_eigh'] / med['eigh']:.2f}x), plain syevd {med['syevd']:.3f} s")
            print(line, flush=True)
            os.remove(a_path)
            os.remove(s_path)

    batch_rows = []
    if ARGS.batch:
        n, count = (int(x) for x in ARGS.batch.split(":"))
        for dtype in ARGS.dtypes.split(","):
            npt = np.float32 if dtype == "f32" else np.float64
            a = rng.standard_normal((count, n, n)).astype(npt)
            path = f"{tmp}/batch_{dtype}.bin"
            a.tofile(path)
            t_np, t_ours = [], []
            for rep in range(-ARGS.warmup, ARGS.reps):
                t_np.append(timed(lambda: np.linalg.svd(a, full_matrices=False))[0])
                t_ours.append(ours.ask(f"svd auto {dtype} {count} {n} {n} {path} 0")[0])
            t_np, t_ours = t_np[ARGS.warmup:], t_ours[ARGS.warmup:]
            batch_rows.append((dtype, n, count, statistics.median(t_np), statistics.median(t_ours)))
            print(f"batch {count} x {n}x{n} {dtype}: numpy svd {batch_rows[-1][3]:.3f} s, "
                  f"auto {batch_rows[-1][4]:.3f} s ({batch_rows[-1][3] / batch_rows[-1][4]:.2f}x)",
                  flush=True)
            os.remove(path)

    concurrent = None
    if ARGS.concurrent:
        n = ARGS.concurrent
        path = f"{tmp}/concurrent.bin"
        rng.standard_normal((n, n)).tofile(path)
        runs = [ours.ask(f"concurrent 2 {n} {path}") for _ in range(ARGS.warmup + ARGS.reps)]
        runs = runs[ARGS.warmup:]
        concurrent = (n, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        print(f"2 concurrent f64 SVDs of {n}x{n}: cpu::svd (taking turns) {concurrent[1]:.3f} s, "
              f"plain dgesdd at once {concurrent[2]:.3f} s", flush=True)
        os.remove(path)
    ours.close()
    os.rmdir(tmp)

    print()
    print(f"OPENBLAS_NUM_THREADS={threads}; load average at end {os.getloadavg()[0]:.2f}")
    head = "| type | n | numpy svd s | plain gesdd s |"
    sep = "|---|---|---|---|"
    for m in methods:
        head += f" {m} s | speedup |"
        sep += "---|---|"
    if "polar" in methods:
        head += " polar iterations |"
        sep += "---|"
    head += (" numpy eigh s | eigh s | speedup | plain syevd s | residual numpy / " +
             " / ".join(methods) + " / eigh |")
    sep += "---|---|---|---|---|"
    print(head)
    print(sep)
    for r in rows:
        med = r["median_s"]
        line = f"| {r['dtype']} | {r['n']} | {med['np_svd']:.3f} | {med['gesdd']:.3f} |"
        for m in methods:
            line += f" {med[m]:.3f} | {med['np_svd'] / med[m]:.2f} |"
        if "polar" in methods:
            line += f" {r['sweeps']['polar']} |"
        line += (f" {med['np_eigh']:.3f} | {med['eigh']:.3f} | {med['np_eigh'] / med['eigh']:.2f} |"
                 f" {med['syevd']:.3f} |")
        res = [r["acc"]["np_svd"][0]] + [r["acc"][m][0] for m in methods] + [r["acc"]["eigh"][0]]
        line += " " + " / ".join(f"{x:.1e}" for x in res) + " |"
        print(line)
    print()
    print("| type | n | orthogonality numpy svd / " + " / ".join(methods) + " / numpy eigh / eigh |")
    print("|---|---|---|")
    for r in rows:
        orth = ([r["acc"]["np_svd"][1]] + [r["acc"][m][1] for m in methods] +
                [r["acc"]["np_eigh"][1], r["acc"]["eigh"][1]])
        print(f"| {r['dtype']} | {r['n']} | " + " / ".join(f"{x:.1e}" for x in orth) + " |")

    if ARGS.csv:
        with open(ARGS.csv, "w") as f:
            f.write("dtype,n,what,median_s,min_s,residual,orthogonality,iterations,threads\n")
            for r in rows:
                for k in ["np_svd", "gesdd"] + methods + ["np_eigh", "eigh", "syevd"]:
                    res, orth = r["acc"].get(k, (float("nan"), float("nan")))
                    f.write(f"{r['dtype']},{r['n']},{k},{r['median_s'][k]:.6f},{r['min_s'][k]:.6f},"
                            f"{res:.3e},{orth:.3e},{r['sweeps'].get(k, '')},{threads}\n")


if __name__ == "__main__":
    main()
