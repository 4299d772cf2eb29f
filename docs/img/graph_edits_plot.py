#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Plots bench_graph_edits' CSV: left, batch-edit throughput per graph size; right, the
# crossover (wall time per batch, GPU incl. H2D vs the CPU twin).
# usage: /usr/bin/python3 docs/img/graph_edits_plot.py docs/img/graph_edits_h100.csv out.png
import sys

from plot_common import plt, read_rows, save

rows = read_rows(sys.argv[1])
device = rows[0]["device"] if rows else "?"
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))

thr = [r for r in rows if r["kind"] == "throughput"]
sizes = sorted({int(r["graph_edges"]) for r in thr})
ops = ["insert", "update", "delete"]
width = 0.8 / len(sizes)
for k, e in enumerate(sizes):
    vals = [next((float(r["edges_per_s"]) / 1e9 for r in thr
                  if int(r["graph_edges"]) == e and r["op"] == op), 0.0) for op in ops]
    xs = [i + (k - (len(sizes) - 1) / 2) * width for i in range(len(ops))]
    bars = a.bar(xs, vals, width, label=f"graph {e:.0e} edges")
    for x, v in zip(xs, vals):
        a.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=8)
a.axhline(1.0, color="gray", ls="--", lw=1)
a.text(len(ops) - 0.5, 1.02, "target 1 G/s", ha="right", fontsize=8, color="gray")
a.set_xticks(range(len(ops)))
a.set_xticklabels([f"{op} (batch 1e6)" for op in ops])
a.set_ylabel("G edges / s (incl. device-side sort + dedupe)")
a.set_title(f"DeviceGraph batch edits, {device}")
a.set_ylim(0, max(float(r["edges_per_s"]) for r in thr) / 1e9 * 1.25)
a.legend(fontsize=8, loc="upper right")

cx = [r for r in rows if r["kind"] == "crossover"]
for backend, style in (("gpu+h2d", "o-"), ("cpu", "s--")):
    pts = sorted((int(r["batch"]), float(r["ms"]) * 1e3) for r in cx if r["backend"] == backend)
    if pts:
        b.loglog([p[0] for p in pts], [p[1] for p in pts], style,
                 label="GPU: H2D + insert_edges" if backend == "gpu+h2d" else "CPU twin (1 thread < 32k edges, 16 above)")
b.set_xlabel("edges per batch")
b.set_ylabel("wall time per batch (us), median")
b.set_title("crossover, 1e7-edge graph")
b.grid(True, which="both", alpha=0.3)
b.legend(fontsize=8)
save(fig, sys.argv[2], dpi=110)
