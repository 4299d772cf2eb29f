#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Plots bench_data_plane's CSV: left, a Transpose per size over the wire, through the client's
# shared-memory arena, zero copy and (CUDA) from another process's GPU memory (GB/s, log
# scale); right,
# uploads and downloads against the raw gRPC streams of the same run.
# usage: /usr/bin/python3 docs/img/data_plane_plot.py CSV PNG [TITLE]
import sys

from plot_common import plt, read_rows, save

rows = read_rows(sys.argv[1])
title = sys.argv[3] if len(sys.argv) > 3 else ""
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))


def series(kind, name):
    pts = sorted((int(r["size_mib"]), float(r["gb_per_s"])) for r in rows
                 if r["kind"] == kind and r["name"] == name)
    return [p[0] for p in pts], [p[1] for p in pts]


paths = [p for p in ["wire", "client arena", "zero copy", "cuda ipc"]
         if any(r["kind"] == "transpose" and r["name"] == p for r in rows)]
sizes = series("transpose", "wire")[0]
width = 0.8 / len(paths)
for k, name in enumerate(paths):
    xs_mib, ys = series("transpose", name)
    xs = [i + (k - (len(paths) - 1) / 2) * width for i in range(len(xs_mib))]
    a.bar(xs, ys, width, label=name)
    for x, y in zip(xs, ys):
        a.text(x, y, f"{y:.2f}" if y < 10 else f"{y:.0f}", ha="center", va="bottom", fontsize=8)
a.set_yscale("log")
a.axhline(10, color="gray", ls="--", lw=1)
a.text(len(sizes) - 0.5, 10.5, "goal 10 GB/s", ha="right", fontsize=8, color="gray")
a.set_xticks(range(len(sizes)))
a.set_xticklabels([f"{s} MiB" for s in sizes])
a.set_ylabel("GB/s (matrix bytes / end-to-end time)")
a.set_title(f"Transpose end to end {title}")
a.legend(fontsize=8, loc="upper left")

for name, style in [("raw sink", "k--"), ("UploadMatrix", "C0-o"), ("raw source", "k:"),
                    ("DownloadMatrix", "C1-s"), ("DownloadMatrix into a reused matrix", "C2-^")]:
    xs, ys = series("bulk", name)
    b.plot(xs, ys, style, label=name)
b.set_xscale("log", base=2)
b.set_xlabel("MiB moved (4 MiB chunks)")
b.set_ylabel("GB/s")
b.set_ylim(bottom=0)
b.set_title("Chunked transfers vs raw gRPC streams")
b.grid(True, alpha=0.3)
b.legend(fontsize=8)
save(fig, sys.argv[2], 110)
