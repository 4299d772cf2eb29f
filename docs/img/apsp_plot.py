#!/usr/bin/python3
# Plots bench_apsp output: /usr/bin/python3 apsp_plot.py [CSV [PNG]]
# (default: apsp_h200.csv -> apsp_h200.png). CSVs with a next_hop_method column show next hops
# from the distances ("pass") and by the fused kernel separately.
import os
import sys

from plot_common import here, plt, read_rows, save

csv_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "apsp_h200.csv")
png_path = sys.argv[2] if len(sys.argv) > 2 else os.path.splitext(csv_path)[0] + ".png"
rows = read_rows(csv_path)
for r in rows:  # older CSVs: next_hop 0/1 only, and "1" was the fused kernel
    r.setdefault("next_hop_method", "fused" if r["next_hop"] == "1" else "no")
fig, ax = plt.subplots(figsize=(8.4, 3.8))
# (dtype, method, streams): two streams is the server's configuration (look-ahead).
colors = {"f32": "tab:blue", "i32": "tab:red"}
formats = {("no", "2"): "o-", ("no", "1"): "o:", ("pass", "2"): "^-.", ("fused", "2"): "s--"}
names = {"no": "distances", "pass": "next hops from distances", "fused": "next hops, fused"}
for dt in ("f32", "i32"):
    for (method, st), fmt in formats.items():
        sel = [r for r in rows if r["dtype"] == dt and r["next_hop_method"] == method
               and r.get("streams", "2") == st]
        if not sel:
            continue
        label = (f"{dt}{' (DPX)' if dt == 'i32' and method != 'fused' else ''}, {names[method]}"
                 f"{', one stream' if st == '1' else ''}")
        ax.plot([int(r["n"]) for r in sel], [float(r["t_relax_per_s"]) for r in sel], fmt,
                color=colors[dt], label=label)
naive_n, naive_ms = int(rows[0]["naive_n"]), float(rows[0]["naive_ms"])
naive = naive_n ** 3 / (naive_ms * 1e-3) / 1e12
ax.axhline(naive, color="gray", linestyle=":", label=f"naive f32 (n={naive_n})")
ax.axhline(12, color="black", linestyle="-.", linewidth=0.8, label="target 12 T/s")
ax.axhline(6, color="green", linestyle="-.", linewidth=0.8, label="next-hop target 6 T/s")
ax.set_xscale("log", base=2)
ax.set_xlabel("n")
ax.set_ylabel("T relaxations / s")
ax.set_title(f"Blocked Floyd-Warshall, {rows[0]['device']}")
ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
save(fig, png_path, dpi=100)
