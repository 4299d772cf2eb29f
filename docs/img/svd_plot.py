#!/usr/bin/python3
# Regenerates svd_h200.png from svd_h200.csv (bench_svd output): /usr/bin/python3 svd_plot.py
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

here = os.path.dirname(os.path.abspath(__file__))
rows = list(csv.DictReader(open(os.path.join(here, "svd_h200.csv"))))
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
for dt, color in (("f32", "tab:blue"), ("f64", "tab:red")):
    sq = [r for r in rows if r["what"] == "square" and r["dtype"] == dt]
    n = [int(r["n"]) for r in sq]
    ax1.plot(n, [float(r["ours_ms"]) for r in sq], "o-", color=color, label=f"ours {dt}")
    ax1.plot(n, [float(r["cusolver_ms"]) for r in sq], "s--", color=color,
             label=f"cuSOLVER gesvdj {dt}")
ax1.set_xscale("log", base=2)
ax1.set_yscale("log")
ax1.set_xlabel("n (square)")
ax1.set_ylabel("ms")
ax1.set_title("SVD with vectors, H200")
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
fig.tight_layout()
fig.savefig(os.path.join(here, "svd_h200.png"), dpi=100)
