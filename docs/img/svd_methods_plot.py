#!/usr/bin/python3
# Regenerates svd_methods_h200.png, svd_methods_h200_2026-11-28.png and
# svd_methods_h200_2026-11-29.png, svd_methods_h200_2026-11-29b.png and
# svd_methods_h200_2026-11-29c.png from the CSVs of the same
# names (bench_svd_methods output),
# eigh_h200.png from eigh_h200.csv (bench_eigh output),
# svd_polar_cholqr2_h200.png from the three runs svd_polar_cholqr2_h200_2026-11-28_{new,base,
# new2}.csv, and svd_jacobi_warp_h200.png from svd_jacobi_warp_h200_2026-11-29_{new,base1,
# base2}.csv and svd_jacobi_split_h200.png from svd_jacobi_split_h200_2026-11-29_{new,base}.csv
# (bench_svd output): /usr/bin/python3 svd_methods_plot.py
import os

from plot_common import here, plt, read_rows, save, time_axes

styles = {
    "ours polar": ("o-", "tab:blue"),
    "ours jacobi": ("o--", "tab:cyan"),
    "cusolver gesvdp": ("s-", "tab:red"),
    "cusolver gesvdj": ("s--", "tab:orange"),
    "cusolver gesvd": ("s:", "tab:gray"),
}


def plot_methods(csv_name, png_name, title):
    rows = read_rows(os.path.join(here, csv_name))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, dtype in zip(axes, ("f32", "f64")):
        for method, (style, color) in styles.items():
            sel = [r for r in rows if r["method"] == method and r["dtype"] == dtype]
            n = [int(r["n"]) for r in sel]
            ax.plot(n, [float(r["ms"]) for r in sel], style, color=color, label=method)
            bad = [r for r in sel if r["within_bound"] == "0"]
            ax.plot([int(r["n"]) for r in bad], [float(r["ms"]) for r in bad], "x", color="black",
                    markersize=10)
        time_axes(ax, "n (square, vectors)", f"SVD {dtype}, {title} (x: outside 50·n·eps)",
                  ylabel=None)
    axes[0].set_ylabel("ms")  # the axes share y
    axes[0].legend(fontsize=8)
    save(fig, os.path.join(here, png_name), dpi=110)


plot_methods("svd_methods_h200.csv", "svd_methods_h200.png", "H200")
plot_methods("svd_methods_h200_2026-11-28.csv", "svd_methods_h200_2026-11-28.png",
             "H200, 2026-11-28")
plot_methods("svd_methods_h200_2026-11-29.csv", "svd_methods_h200_2026-11-29.png",
             "H200, 2026-11-29")
plot_methods("svd_methods_h200_2026-11-29b.csv", "svd_methods_h200_2026-11-29b.png",
             "H200, 2026-11-29 later")
plot_methods("svd_methods_h200_2026-11-29c.csv", "svd_methods_h200_2026-11-29c.png",
             "H200, 2026-11-29c")

rows = read_rows(os.path.join(here, "eigh_h200.csv"))
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
for dtype, color in (("f32", "tab:blue"), ("f64", "tab:red")):
    sel = [r for r in rows if r["what"] == "square" and r["dtype"] == dtype]
    n = [int(r["n"]) for r in sel]
    ax.plot(n, [float(r["ours_ms"]) for r in sel], "o-", color=color, label=f"ours {dtype}")
    ax.plot(n, [float(r["ref_ms"]) for r in sel], "s--", color=color, label=f"syevd {dtype}")
    j = [r for r in sel if r["syevj_ms"] != "nan"]
    ax.plot([int(r["n"]) for r in j], [float(r["syevj_ms"]) for r in j], "^:", color=color,
            label=f"syevj {dtype}")
time_axes(ax, "n (vectors)", "Eigh, one matrix, H200")
ax.legend(fontsize=8)
# Batches of small matrices: ours against syevjBatched, one pair of bars per case.
batched = [r for r in rows if r["what"] == "batched"]
labels = [f"{r['dtype']} {r['batch']}×{r['n']}²" for r in batched]
x = range(len(batched))
bx.bar([i - 0.2 for i in x], [float(r["ours_ms"]) for r in batched], 0.4, color="tab:green",
       label="ours (register Jacobi)")
bx.bar([i + 0.2 for i in x], [float(r["ref_ms"]) for r in batched], 0.4, color="tab:gray",
       label="syevjBatched")
for i, r in zip(x, batched):
    bx.text(i, float(r["ref_ms"]), f"{float(r['ref_over_ours']):.1f}×", ha="center", va="bottom",
            fontsize=9)
bx.set_xticks(list(x), labels, fontsize=8)
bx.set_ylabel("ms")
bx.set_title("Eigh, batched, H200 (labels: syevjBatched / ours)")
bx.legend(fontsize=8)
save(fig, os.path.join(here, "eigh_h200.png"), dpi=110)


def plot_ratio_runs(runs, points, title, ylabel, png_name, goal=None):
    """One panel per type: for each run (label -> (run, style, color)), points(run, dtype) gives
    the sizes, the ratios and the (n, ratio) pairs to cross out."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, dtype in zip(axes, ("f32", "f64")):
        for label, (run, style, color) in runs.items():
            n, ratio, bad = points(run, dtype)
            ax.plot(n, ratio, style, color=color, label=label)
            ax.plot([k for k, _ in bad], [q for _, q in bad], "x", color="black", markersize=9)
        if goal is not None:
            ax.axhline(goal, color="tab:green", linewidth=0.8, label=f"goal ({goal:g}x)")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n (square, vectors)")
        ax.set_title(title.format(dtype=dtype))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(ylabel)
    axes[0].legend(fontsize=8)
    save(fig, os.path.join(here, png_name), dpi=110)


def gesvdp_over_polar(run, dtype):
    rows = read_rows(os.path.join(here, f"svd_polar_cholqr2_h200_2026-11-28_{run}.csv"))
    ours = {int(r["n"]): float(r["ms"]) for r in rows
            if r["method"] == "ours polar" and r["dtype"] == dtype}
    gesvdp = [r for r in rows if r["method"] == "cusolver gesvdp" and r["dtype"] == dtype]
    n = [int(r["n"]) for r in gesvdp]
    ratio = [float(r["ms"]) / ours[int(r["n"])] for r in gesvdp]
    bad = [(k, q) for k, q, r in zip(n, ratio, gesvdp) if r["within_bound"] == "0"]
    return n, ratio, bad


def gesvdj_over_jacobi(run, dtype):
    rows = read_rows(os.path.join(here, f"svd_jacobi_warp_h200_2026-11-29_{run}.csv"))
    sel = [r for r in rows if r["what"] == "square" and r["dtype"] == dtype]
    return [int(r["n"]) for r in sel], [float(r["speedup"]) for r in sel], []


# gesvdp's time over ours, per run: with the CholeskyQR2 step (runs 1 and 3) and without (run 2,
# the previous commit), all in one call. A cross: gesvdp outside 50·n·eps in that run.
plot_ratio_runs(
    {
        "CholeskyQR2 step (run 1)": ("new", "o-", "tab:blue"),
        "CholeskyQR2 step (run 3)": ("new2", "o--", "tab:cyan"),
        "previous commit (run 2)": ("base", "s:", "tab:gray"),
    },
    gesvdp_over_polar, "polar SVD {dtype}, H200: gesvdp ms / ours ms",
    "gesvdp / ours (above 1: ours faster)", "svd_polar_cholqr2_h200.png")

# gesvdj's time over the Jacobi's, per run of one call: the register inner solver (run 2) and the
# previous commit before and after it (runs 1 and 3).
plot_ratio_runs(
    {
        "register inner solver (run 2)": ("new", "o-", "tab:blue"),
        "previous commit (run 1)": ("base1", "s:", "tab:gray"),
        "previous commit (run 3)": ("base2", "s--", "tab:gray"),
    },
    gesvdj_over_jacobi, "Jacobi SVD {dtype}, H200: gesvdj ms / ours ms",
    "gesvdj / ours (above 1: ours faster)", "svd_jacobi_warp_h200.png", goal=2.0)


def gesvdj_over_split_runs(run, dtype):
    """gesvdj's time of the run with the reference (the same call) over each run's Jacobi."""
    def rows_of(name):
        rows = read_rows(os.path.join(here, f"svd_jacobi_split_h200_2026-11-29_{name}.csv"))
        return {int(r["n"]): r for r in rows if r["what"] == "square" and r["dtype"] == dtype}
    ref = rows_of("new")
    ours = rows_of(run)
    n = sorted(ours)
    return n, [float(ref[k]["cusolver_ms"]) / float(ours[k]["ours_ms"]) for k in n], []


# gesvdj's time over the Jacobi's in one call: the split Gram GEMM and the 64-column solver in
# float (run 2) against the code before this work (run 1, 50be7c6), gesvdj timed in run 2.
plot_ratio_runs(
    {
        "split Gram GEMM, float 64-column solver (run 2)": ("new", "o-", "tab:blue"),
        "previous code, 50be7c6 (run 1)": ("base", "s:", "tab:gray"),
    },
    gesvdj_over_split_runs, "Jacobi SVD {dtype}, H200: gesvdj ms / ours ms",
    "gesvdj / ours (above 1: ours faster)", "svd_jacobi_split_h200.png", goal=2.0)
