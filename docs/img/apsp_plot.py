#!/usr/bin/python3
# Regenerates apsp_h200.png from apsp_h200.csv (bench_apsp output): /usr/bin/python3 apsp_plot.py
import os

from plot_common import here, plt, read_rows, save

rows = read_rows(os.path.join(here, "apsp_h200.csv"))
fig, ax = plt.subplots(figsize=(6.4, 3.8))
# (dtype, next_hop, streams): two streams is the server's configuration (look-ahead).
styles = {("f32", "0", "2"): ("tab:blue", "o-"), ("i32", "0", "2"): ("tab:red", "o-"),
          ("f32", "0", "1"): ("tab:blue", "o:"), ("i32", "0", "1"): ("tab:red", "o:"),
          ("f32", "1", "2"): ("tab:blue", "s--"), ("i32", "1", "2"): ("tab:red", "s--")}
for (dt, nh, st), (color, fmt) in styles.items():
    sel = [r for r in rows
           if r["dtype"] == dt and r["next_hop"] == nh and r.get("streams", "2") == st]
    if not sel:
        continue
    label = (f"{dt}{' (DPX)' if dt == 'i32' and nh == '0' else ''}, "
             f"{'next-hop' if nh == '1' else 'distances'}"
             f"{', one stream' if st == '1' else ''}")
    ax.plot([int(r["n"]) for r in sel], [float(r["t_relax_per_s"]) for r in sel], fmt,
            color=color, label=label)
naive_n, naive_ms = int(rows[0]["naive_n"]), float(rows[0]["naive_ms"])
naive = naive_n ** 3 / (naive_ms * 1e-3) / 1e12
ax.axhline(naive, color="gray", linestyle=":", label=f"naive f32 (n={naive_n})")
ax.axhline(12, color="black", linestyle="-.", linewidth=0.8, label="target 12 T/s")
ax.set_xscale("log", base=2)
ax.set_xlabel("n")
ax.set_ylabel("T relaxations / s")
ax.set_title(f"Blocked Floyd-Warshall, {rows[0]['device']}")
ax.legend(fontsize=7)
save(fig, os.path.join(here, "apsp_h200.png"), dpi=100)
