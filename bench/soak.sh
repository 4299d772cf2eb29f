#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak test (docs/reliability.md): starts gcompute-server on 127.0.0.1 (a free port) and drives
# it with gcompute_soak, or drives a server already running. Prints the driver's summary table
# last and exits with its status (1: an unexpected status code, RSS growth >= 5 %, or health
# p99 >= 50 ms; the driver says which), or 1 when the server it started does not stop cleanly.
#
#   bench/soak.sh [--device cpu|cuda] [--clients 64] [--seconds 600] [--seed 1] [--out FILE.json]
#                 [--max-rss-growth-percent 5] [--max-health-p99-ms 50] [--ops NAME,...]
#                 [--server HOST:PORT --server-pid PID]
#                 [-- SERVER FLAGS...]
#
# Binaries: $GC_BIN_DIR/{gcompute-server,gcompute_soak} (a device bundle's bin), else
# $GC_SERVER_BIN and $GC_SOAK_BIN, else build/server/gcompute-server and build/bench/gcompute_soak.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n ${GC_BIN_DIR:-} ]]; then
  server_bin=$GC_BIN_DIR/gcompute-server
  soak_bin=$GC_BIN_DIR/gcompute_soak
else
  server_bin=${GC_SERVER_BIN:-$root/build/server/gcompute-server}
  soak_bin=${GC_SOAK_BIN:-$root/build/bench/gcompute_soak}
fi

device=cpu clients=64 seconds=600 seed=1 out="" server="" server_pid="" max_rss_growth=5 max_health_p99=50 only=""
server_flags=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --device) device=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --max-rss-growth-percent) max_rss_growth=$2; shift 2 ;;
    --max-health-p99-ms) max_health_p99=$2; shift 2 ;;
    --ops) only=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --server-pid) server_pid=$2; shift 2 ;;
    --) shift; server_flags=("$@"); break ;;
    *) echo "soak.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -x $soak_bin ]] || { echo "soak.sh: no driver at $soak_bin (build gcompute_soak)" >&2; exit 2; }

work=$(mktemp -d)
started_pid=""
cleanup() {
  if [[ -n $started_pid ]]; then kill "$started_pid" 2>/dev/null; wait "$started_pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -z $server ]]; then
  [[ -x $server_bin ]] || { echo "soak.sh: no server at $server_bin" >&2; exit 2; }
  # Port 0: the server picks free ports and logs the gRPC one as "(port N)". OpenBLAS as
  # deploy/serve.sh and the container run it: one thread per request unless set otherwise.
  OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} "$server_bin" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --device "$device" \
    "${server_flags[@]}" >"$work/server.log" 2>&1 &
  started_pid=$!
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$work/server.log" | head -1)
    [[ -n $port ]] && break
    kill -0 "$started_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $port ]]; then
    echo "soak.sh: the server did not start:" >&2
    cat "$work/server.log" >&2
    exit 2
  fi
  server=127.0.0.1:$port
  server_pid=$started_pid
  echo "soak.sh: started $server_bin --device $device ${server_flags[*]} (pid $server_pid) on $server"
fi

driver_args=(--server "$server" --clients "$clients" --seconds "$seconds" --seed "$seed"
  --max-rss-growth-percent "$max_rss_growth" --max-health-p99-ms "$max_health_p99")
[[ -n $server_pid ]] && driver_args+=(--server-pid "$server_pid")
[[ -n $out ]] && driver_args+=(--out "$out")
[[ -n $only ]] && driver_args+=(--ops "$only")
# The summary (from the table on) is printed once, after the server has stopped.
"$soak_bin" "${driver_args[@]}" >"$work/driver.txt" 2>&1 &
driver_pid=$!
tail -n +1 --pid "$driver_pid" -f "$work/driver.txt" | sed -u '/^| operation/,$d'
wait "$driver_pid"
rc=$?

server_failure=""
if [[ -n $started_pid ]]; then
  if kill -0 "$started_pid" 2>/dev/null; then
    kill -TERM "$started_pid"
    wait "$started_pid"
    server_rc=$?
    echo "soak.sh: server stopped with status $server_rc after SIGTERM"
    [[ $server_rc != 0 ]] && server_failure="the server exited with status $server_rc after SIGTERM"
  else
    wait "$started_pid"
    server_failure="the server exited during the run (status $?)"
  fi
  started_pid=""
  [[ -n $server_failure ]] && tail -n 40 "$work/server.log"
fi
echo
sed -n '/^| operation/,$p' "$work/driver.txt"
if [[ -n $server_failure ]]; then
  echo "soak.sh: FAIL: $server_failure"
  rc=1
fi
exit "$rc"
