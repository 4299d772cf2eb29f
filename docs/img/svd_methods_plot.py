#!/usr/bin/python3
# Regenerates svd_methods_h200.png from svd_methods_h200.csv (bench_svd_methods output) and
# eigh_h200.png from eigh_h200.csv (bench_eigh output): /usr/bin/python3 svd_methods_plot.py
import os

from plot_common import here, plt, read_rows, save, time_axes

rows = read_rows(os.path.join(here, "svd_methods_h200.csv"))
styles = {
    "ours polar": ("o-", "tab:blue"),
    "ours jacobi": ("o--", "tab:cyan"),
    "cusolver gesvdp": ("s-", "tab:red"),
    "cusolver gesvdj": ("s--", "tab:orange"),
    "cusolver gesvd": ("s:", "tab:gray"),
}
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, dtype in zip(axes, ("f32", "f64")):
    for method, (style, color) in styles.items():
        sel = [r for r in rows if r["method"] == method and r["dtype"] == dtype]
        n = [int(r["n"]) for r in sel]
        ax.plot(n, [float(r["ms"]) for r in sel], style, color=color, label=method)
        bad = [r for r in sel if r["within_bound"] == "0"]
        ax.plot([int(r["n"]) for r in bad], [float(r["ms"]) for r in bad], "x", color="black",
                markersize=10)
    time_axes(ax, "n (square, vectors)", f"SVD {dtype}, H200 (x: outside 50·n·eps)", ylabel=None)
axes[0].set_ylabel("ms")  # the axes share y
axes[0].legend(fontsize=8)
save(fig, os.path.join(here, "svd_methods_h200.png"), dpi=110)

rows = read_rows(os.path.join(here, "eigh_h200.csv"))
fig, ax = plt.subplots(figsize=(6, 4))
for dtype, color in (("f32", "tab:blue"), ("f64", "tab:red")):
    sel = [r for r in rows if r["what"] == "square" and r["dtype"] == dtype]
    n = [int(r["n"]) for r in sel]
    ax.plot(n, [float(r["ours_ms"]) for r in sel], "o-", color=color, label=f"ours {dtype}")
    ax.plot(n, [float(r["ref_ms"]) for r in sel], "s--", color=color, label=f"syevd {dtype}")
    j = [r for r in sel if r["syevj_ms"] != "nan"]
    ax.plot([int(r["n"]) for r in j], [float(r["syevj_ms"]) for r in j], "^:", color=color,
            label=f"syevj {dtype}")
time_axes(ax, "n (vectors)", "Eigh, H200")
ax.legend(fontsize=8)
save(fig, os.path.join(here, "eigh_h200.png"), dpi=110)
