#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Plots bench_apsp_update's CSV: the update's time per batch size against the full
# recomputation it replaces (dashed, same n and next-hop setting), with the 5 % line of
# issue 13's goal.
# usage: /usr/bin/python3 docs/img/apsp_update_plot.py docs/img/apsp_update_h100.csv out.png
import sys

from plot_common import plt, read_rows, save

rows = read_rows(sys.argv[1])
device = rows[0]["device"] if rows else "?"
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=False)
for ax, next_hop in zip(axes, ("0", "1")):
    sel = [r for r in rows if r["next_hop"] == next_hop]
    for n in sorted({int(r["n"]) for r in sel}):
        pts = sorted((int(r["edges"]), float(r["update_ms"]), float(r["full_ms"]))
                     for r in sel if int(r["n"]) == n)
        line, = ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"update, n = {n}")
        full = sum(p[2] for p in pts) / len(pts)
        ax.axhline(full, color=line.get_color(), ls="--", lw=1)
        ax.axhline(0.05 * full, color=line.get_color(), ls=":", lw=1)
        ax.text(pts[0][0], full * 1.08, f"full recomputation, n = {n}", fontsize=8,
                color=line.get_color())
        ax.text(pts[0][0], 0.05 * full * 1.08, "5 % of it", fontsize=8, color=line.get_color())
    ax.set_xlabel("edges inserted in the batch")
    ax.set_ylabel("ms (median, CUDA events)")
    what = "with next hops (one pass per edge)" if next_hop == "1" else "distances (one batched pass)"
    ax.set_title(f"APSP update {what}\n{device}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
save(fig, sys.argv[2], dpi=110)
