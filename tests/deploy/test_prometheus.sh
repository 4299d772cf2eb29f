#!/usr/bin/env bash
# Prometheus configuration and alerts, statically and live:
#  1. promtool check config / check rules / test rules (deploy/prometheus/alerts_test.yml);
#  2. a real Prometheus (Debian's binary, loopback, 1 s scrapes, storage in a temp dir)
#     scraping a real gcompute-server --device=cpu while the CLI sends requests; the p99
#     query of the dashboard must return a number, and every query of the Grafana dashboard
#     (deploy/grafana/dashboards/gcompute.json) must be accepted by Prometheus.
# Exits 77 (ctest: Skipped) without promtool/prometheus (Debian package prometheus).
# Usage: test_prometheus.sh --server-bin PATH --cli-bin PATH --source REPO_ROOT
set -euo pipefail
server_bin="" cli="" src=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --server-bin) server_bin=$2; shift 2 ;;
    --cli-bin) cli=$2; shift 2 ;;
    --source) src=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "SKIP: promtool/prometheus not installed (apt-get install prometheus)"
  exit 77
fi
cfg=$src/deploy/prometheus
echo "== promtool"
promtool check config "$cfg/prometheus.yml"
promtool check rules "$cfg/alerts.yml"
(cd "$cfg" && promtool test rules alerts_test.yml)

echo "== live scrape"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
mport=$(free_port)
pport=$(free_port)
"$server_bin" --listen=127.0.0.1:$port --metrics-listen=127.0.0.1:$mport --device=cpu \
  --drain-seconds=2 >"$work/server.log" 2>&1 &
pids+=($!)
cat >"$work/prometheus.yml" <<CFG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $cfg/alerts.yml
scrape_configs:
  - job_name: gcompute
    static_configs:
      - targets: ["127.0.0.1:$mport"]
CFG
promtool check config "$work/prometheus.yml" >/dev/null
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address=127.0.0.1:$pport >"$work/prometheus.log" 2>&1 &
pids+=($!)

for _ in $(seq 1 100); do
  "$cli" --server 127.0.0.1:$port --timeout 2 health >/dev/null 2>&1 && break
  sleep 0.2
done
/usr/bin/python3 -c "import numpy as np; np.save('$work/a.npy', np.ones((64, 48), np.float32)); np.save('$work/s.npy', np.eye(12))"

# Prometheus must be scraping before the traffic starts: rate() needs two scrapes that see
# the counters move. On a loaded CI machine its start-up can take longer than the traffic
# itself, so wait for readiness and for a first successful scrape of the server.
query() {
  /usr/bin/python3 -c 'import sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?%s" % (sys.argv[1], urllib.parse.urlencode({"query": sys.argv[2]}))
print(urllib.request.urlopen(url, timeout=5).read().decode())' "$pport" "$1" 2>/dev/null
}
show_logs() {
  echo "-- prometheus.log (tail)"; tail -20 "$work/prometheus.log"
  echo "-- server.log (tail)"; tail -20 "$work/server.log"
  echo "-- traffic.log (tail)"; tail -5 "$work/traffic.log"
}
scraping=0
for _ in $(seq 1 240); do
  if query 'up{job="gcompute"} == 1' | grep -q '"value"'; then scraping=1; break; fi
  sleep 0.5
done
if [[ $scraping != 1 ]]; then
  echo "FAIL: Prometheus did not scrape the server within 120 s"
  show_logs
  exit 1
fi

# Traffic keeps flowing in the background until the checks below finish (bounded: 240
# requests), so rate() over 30 s always sees several scrapes with moving counters.
(
  for i in $(seq 1 200); do
    "$cli" --server 127.0.0.1:$port --timeout 10 transpose "$work/a.npy" "$work/at.npy" >/dev/null
    ((i % 5)) || "$cli" --server 127.0.0.1:$port --timeout 10 svd "$work/s.npy" --out "$work/s" >/dev/null
    sleep 0.25
  done
) >"$work/traffic.log" 2>&1 &
pids+=($!)

if ! /usr/bin/python3 - "$pport" "$src/deploy/grafana/dashboards/gcompute.json" <<'PY'
import json, math, sys, time, urllib.parse, urllib.request
port, dashboard = sys.argv[1], sys.argv[2]
def query(q):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        return json.load(urllib.request.urlopen(url, timeout=5))
    except urllib.error.HTTPError as e:
        return json.load(e)
p99 = 'histogram_quantile(0.99, sum by (le, method) (rate(gcompute_request_duration_seconds_bucket[30s])))'
deadline = time.time() + 90
last = None
while True:
    r = query(p99) if time.time() < deadline else None
    if r is None:
        sys.exit(f"FAIL: no p99 from Prometheus within 90 s; last answer: {last}")
    last = r
    values = {s["metric"].get("method"): float(s["value"][1]) for s in r.get("data", {}).get("result", [])}
    if r.get("status") == "success" and math.isfinite(values.get("Transpose", math.nan)):
        break
    time.sleep(1)
print("p99 by method (s):", {k: v for k, v in values.items() if math.isfinite(v)})
assert 0 < values["Transpose"] < 10, values
up = query('up{job="gcompute"}')["data"]["result"]
assert up and up[0]["value"][1] == "1", up
# Every dashboard query, with Grafana's variables given plain values, must parse and run.
d = json.load(open(dashboard))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
assert len(exprs) >= 15, len(exprs)
nonempty = 0
for e in exprs:
    q = e.replace("$__rate_interval", "30s").replace("$instance", ".*").replace("$method", ".*")
    r = query(q)
    assert r.get("status") == "success", (e, r)
    nonempty += bool(r["data"]["result"])
print(f"dashboard: {len(exprs)} queries accepted, {nonempty} with data")
assert nonempty >= len(exprs) // 2, "most dashboard queries return nothing"
PY
then
  show_logs
  exit 1
fi
echo "PASS"
