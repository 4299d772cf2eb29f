#!/usr/bin/python3
# Regenerates svd_h200.png from svd_h200.csv (bench_svd output): /usr/bin/python3 svd_plot.py
import os

from plot_common import here, plt, read_rows, save, time_axes

rows = read_rows(os.path.join(here, "svd_h200.csv"))
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
for dt, color in (("f32", "tab:blue"), ("f64", "tab:red")):
    sq = [r for r in rows if r["what"] == "square" and r["dtype"] == dt]
    n = [int(r["n"]) for r in sq]
    ax1.plot(n, [float(r["ours_ms"]) for r in sq], "o-", color=color, label=f"ours {dt}")
    ax1.plot(n, [float(r["cusolver_ms"]) for r in sq], "s--", color=color,
             label=f"cuSOLVER gesvdj {dt}")
time_axes(ax1, "n (square)", "SVD with vectors, H200", grid=False)
ax1.legend(fontsize=7)
bt = [r for r in rows if r["what"] == "batched"]
labels = [f'{r["n"]}x{r["n"]}' for r in bt]
x = range(len(bt))
ours = [float(r["ours_ms"]) * 1e3 / int(r["batch"]) for r in bt]
ref = [float(r["cusolver_ms"]) * 1e3 / int(r["batch"]) if r["cusolver_ms"] not in ("nan", "")
       else float("nan") for r in bt]
ax2.bar([i - 0.2 for i in x], ours, 0.4, label="ours")
ax2.bar([i + 0.2 for i in x], ref, 0.4, label="gesvdjBatched")
ax2.set_xticks(list(x))
ax2.set_xticklabels(labels)
ax2.set_yscale("log")
ax2.set_ylabel("us / matrix (log)")
# 64x64 has no gesvdjBatched bar (it takes n <= 32).
ax2.set_title(f"batched f32, {int(bt[0]['batch'])} matrices" if bt else "batched")
ax2.legend()
save(fig, os.path.join(here, "svd_h200.png"), dpi=100)
