#!/usr/bin/env bash
# Runs ON the GPU machine from a device bundle: starts gcompute-server --device cuda on
# loopback and drives it with the CLI (info, transpose, matmul, svd, apsp, path), checking the
# results with NumPy (the device machine's python3 has it). Prints PASS/FAIL lines.
set -uo pipefail
bin=${GC_BIN_DIR:-/tmp/gbundle/bin}
work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
"$bin/gcompute-server" --listen 127.0.0.1:$port --metrics-listen 127.0.0.1:$((port + 1)) --device cuda \
  >"$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 50); do "$bin/gcompute" --server 127.0.0.1:$port info >/dev/null 2>&1 && break; sleep 0.2; done
cli() { "$bin/gcompute" --server 127.0.0.1:$port "$@"; }
fails=0
check() { if "$@"; then echo "PASS: ${desc}"; else echo "FAIL: ${desc}"; fails=$((fails + 1)); fi; }

desc="info reports the cuda backend"; check bash -c "$(declare -f); '$bin/gcompute' --server 127.0.0.1:$port info | tee $work/info.txt | grep -qi cuda"
cat "$work/info.txt"
python3 - "$work" <<'PY'
import numpy as np, sys
w = sys.argv[1]; r = np.random.default_rng()
np.save(f"{w}/a.npy", r.standard_normal((1500, 700)).astype(np.float32))
np.save(f"{w}/b.npy", r.standard_normal((700, 900)).astype(np.float32))
np.save(f"{w}/s.npy", r.standard_normal((300, 200)))
g = np.where(r.random((400, 400)) < 0.05, r.integers(1, 20, (400, 400)).astype(np.float32), np.inf)
np.fill_diagonal(g, 0); np.save(f"{w}/g.npy", g.astype(np.float32))
PY
desc="transpose"; check cli transpose $work/a.npy $work/at.npy
desc="matmul"; check cli matmul $work/a.npy $work/b.npy $work/c.npy
desc="svd"; check cli svd $work/s.npy --out $work/svd
desc="apsp"; check cli apsp $work/g.npy $work/d.npy --next-hop $work/n.npy
desc="results match numpy/scipy-free oracles"; check python3 - "$work" <<'PY'
import numpy as np, sys
w = sys.argv[1]
a, b = np.load(f"{w}/a.npy"), np.load(f"{w}/b.npy")
assert np.array_equal(np.load(f"{w}/at.npy"), a.T)
c = np.load(f"{w}/c.npy"); ref = a.astype(np.float64) @ b
assert np.linalg.norm(c - ref) / np.linalg.norm(ref) < 1e-5, "matmul"
s = np.load(f"{w}/s.npy"); S = np.load(f"{w}/svd.S.npy"); U = np.load(f"{w}/svd.U.npy"); Vt = np.load(f"{w}/svd.Vt.npy")
assert np.allclose(S, np.linalg.svd(s, compute_uv=False), rtol=1e-10), "svd values"
assert np.linalg.norm(U * S @ Vt - s) / np.linalg.norm(s) < 1e-12, "svd reconstruction"
g = np.load(f"{w}/g.npy").astype(np.float64); d = g.copy(); n = len(d)
for k in range(n): d = np.minimum(d, d[:, k:k+1] + d[k:k+1, :])
np.fill_diagonal(d, np.minimum(np.diag(d), 0))
assert np.array_equal(np.load(f"{w}/d.npy").astype(np.float64), d), "apsp"
print("all results match")
PY
# Jobs across processes: an APSP of 16384 vertices with next hops submitted by one CLI process,
# watched by a second (one line per progress change) and collected by a third. On an H100 the
# watcher, started once submit had returned, ran 0.36 s and saw 14 changes (20 ms ticks); at 8192
# vertices it saw one, the job being nearly done by then. Five or more show the stream working
# with some room for a faster card; the count still depends on how much of the job is left when
# the watch starts.
python3 -c "
import numpy as np; r = np.random.default_rng(3); n = 16384
g = np.where(r.random((n, n)) < 0.001, r.integers(1, 10, (n, n)), np.inf).astype(np.float32)
np.save('$work/g16384.npy', g)"
job=$(cli submit apsp $work/g16384.npy --next-hop)
desc="submit prints a job id ($job)"; check bash -c "[[ '$job' == j-* ]]"
watch_start=$(date +%s.%N)
cli jobs watch "$job" >"$work/watch.txt"
echo "watch returned after $(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 3))" "$watch_start") s"
running=$(grep -c '^RUNNING' "$work/watch.txt")
desc="watch saw >= 5 progress events ($running RUNNING lines)"; check test "$running" -ge 5
tail -3 "$work/watch.txt"
desc="wait collects the results"; check cli wait "$job" --out $work/j16384
desc="the job's distances agree with Dijkstra from 4 sources"; check python3 - "$work" <<'PY'
import heapq, numpy as np, sys
w = sys.argv[1]; g = np.load(f"{w}/g16384.npy"); d = np.load(f"{w}/j16384.dist.npy"); n = len(g)
nbrs = [np.nonzero(np.isfinite(g[i]))[0] for i in range(n)]
for s in (0, 17, 8191, 16383):
    dist = np.full(n, np.inf); dist[s] = 0; q = [(0.0, s)]
    while q:
        dv, v = heapq.heappop(q)
        if dv > dist[v]: continue
        for u in nbrs[v]:
            if dv + g[v, u] < dist[u]: dist[u] = dv + g[v, u]; heapq.heappush(q, (dist[u], u))
    assert np.array_equal(d[s].astype(np.float64), dist), s
print("job distances match")
PY
desc="server log names the cuda backend"; check grep -q "backend cuda" "$work/server.log"
desc="metrics export device and phase series"; check bash -c "curl -sf 127.0.0.1:$((port + 1))/metrics > $work/metrics.txt || python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(\"http://127.0.0.1:$((port + 1))/metrics\").read().decode())' > $work/metrics.txt; grep -q 'gcompute_device_healthy{gpu=\"0\"} 1' $work/metrics.txt && grep -q 'gcompute_phase_duration_seconds_count{method=\"MatMul\",phase=\"h2d\"}' $work/metrics.txt"
kill -TERM $pid; wait $pid; rc=$?
desc="SIGTERM drains and exits 0 (rc=$rc)"; check test "$rc" = 0
cat "$work/server.log"
echo "service smoke: $fails failed"
exit $fails
