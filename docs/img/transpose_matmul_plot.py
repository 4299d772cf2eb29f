#!/usr/bin/python3
# Regenerates transpose_matmul_h200.png from transpose_matmul_h200.csv (bench_transpose_matmul
# output): /usr/bin/python3 transpose_matmul_plot.py
import os

from plot_common import here, plt, read_rows, save

rows = read_rows(os.path.join(here, "transpose_matmul_h200.csv"))
copy = [r for r in rows if r["section"] == "transpose" and r["case"] == "ours/copy"]
geam = {(r["dtype"], r["shape"]): r for r in rows
        if r["section"] == "transpose" and r["case"] == "ours/geam"}
gemm = [r for r in rows if r["section"] == "matmul"]

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
labels = [f"{r['dtype']} {r['shape']}" for r in copy]
x = range(len(copy))
w = 0.27
ax1.bar([i - w for i in x], [float(r["ours_rate"]) for r in copy], w, label="ours")
ax1.bar(list(x), [float(r["baseline_rate"]) for r in copy], w, label="D2D copy")
gx = [i + w for i, r in enumerate(copy) if (r["dtype"], r["shape"]) in geam]
gy = [float(geam[(r["dtype"], r["shape"])]["baseline_rate"]) for r in copy
      if (r["dtype"], r["shape"]) in geam]
ax1.bar(gx, gy, w, label="cuBLAS geam")
ax1.set_xticks(list(x))
ax1.set_xticklabels(labels, rotation=35, ha="right", fontsize=7)
ax1.set_ylabel("GB/s (read + written)")
ax1.set_title("Transpose")
ax1.legend(fontsize=7)

glabels = [f"{r['dtype']} {r['shape'].split('x')[0]}" for r in gemm]
ax2.bar(range(len(gemm)), [float(r["ratio"]) for r in gemm], color="tab:green")
ax2.axhline(1.0, color="black", linewidth=0.8)
ax2.axhline(0.98, color="gray", linestyle=":", linewidth=0.8, label="-2%")
ax2.set_xticks(range(len(gemm)))
ax2.set_xticklabels(glabels, rotation=35, ha="right", fontsize=7)
ax2.set_ylim(0.9, 1.1)
ax2.set_ylabel("cuBLAS time / ours (ratio)")
ax2.set_title("Matmul against a direct cuBLAS call")
ax2.legend(fontsize=7)
fig.suptitle(rows[0]["device"], fontsize=9)
save(fig, os.path.join(here, "transpose_matmul_h200.png"), dpi=100)
