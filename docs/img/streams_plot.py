#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Plots UploadMatrix and DownloadMatrix as a fraction of the raw gRPC stream of the same bytes
# in the same run (bench_data_plane's CSVs): before the hand-coded chunk streams (dashed) and
# after (solid, one line per run), for the CUDA backend (left) and the CPU backend (right).
# usage: /usr/bin/python3 docs/img/streams_plot.py [--host H200] [--before LABEL --after LABEL]
#            PNG BEFORE_CUDA BEFORE_CPU AFTER_CUDA,AFTER_CPU...
import sys

from plot_common import plt, read_rows, save


def ratios(path, name):
    pts = sorted((int(r["size_mib"]), float(r["vs_raw"])) for r in read_rows(path)
                 if r["kind"] == "bulk" and r["name"] == name)
    return [p[0] for p in pts], [p[1] for p in pts]


args = sys.argv[1:]
labels = {"--host": "H100", "--before": "before", "--after": "after"}
while args and args[0] in labels:
    labels[args[0]] = args[1]
    args = args[2:]
png, before = args[0], args[1:3]
after = [pair.split(",") for pair in args[3:]]
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
for col, (ax, backend) in enumerate(zip(axes, ["CUDA backend", "CPU backend"])):
    for name, color in [("UploadMatrix", "C0"), ("DownloadMatrix", "C1"),
                        ("DownloadMatrix into a reused matrix", "C2")]:
        xs, ys = ratios(before[col], name)
        if xs:
            ax.plot(xs, ys, "--", color=color, marker="x", label=f"{name}, {labels['--before']}")
        for run, paths in enumerate(after):
            xs, ys = ratios(paths[col], name)
            ax.plot(xs, ys, "-", color=color, marker="o", alpha=max(0.3, 1.0 - 0.2 * run),
                    label=f"{name}, {labels['--after']} (run {run + 1})")
    ax.axhline(0.9, color="gray", ls=":", lw=1)
    ax.text(16, 0.92, "goal 0.9x", fontsize=8, color="gray")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("MiB moved (4 MiB chunks)")
    ax.set_ylim(0, 1.5)
    ax.set_title(f"{backend}: fraction of a raw gRPC stream ({labels['--host']})")
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel("GB/s of the gcompute stream / GB/s of the raw stream")
axes[1].legend(fontsize=7, loc="lower right")
save(fig, png, 110)
