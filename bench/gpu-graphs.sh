#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs ON the GPU machine from a device bundle: the stored-graph and shortest-path work of
# issue 13 in one call. Tests first (APSP and SSSP kernels, the backend contract, the graph
# mirror, the incremental APSP, the service on the CUDA backend), then the benchmarks, each with its baseline in the same run:
#   bench_sssp          frontier Bellman-Ford vs CPU Dijkstra (10^6 / 10^7 vertices, 10 edges each)
#   bench_sssp_service  Sssp of one stored graph on the CPU and the CUDA backend
#   bench_apsp_update   incremental APSP vs the full recomputation (kernels)
#   bench_stored_apsp   the same through the service (cache counters checked)
#   bench_stored_apsp_host  the same with --device-graph-copies=false (the host densify path)
#   bench_apsp          next hops (from the distances, and fused) vs distance-only at 8192, 16384
# Logs and CSVs go to $OUT (as results.tar.gz beside graphs.log); a short table comes last.
#
#   bash .device/run.sh bash bench/gpu-graphs.sh [quick]
set -uo pipefail
bin=${GC_BIN_DIR:-/tmp/gbundle/bin}
out=${OUT:-/tmp/ggraphs-out}
quick=${1:-}
work=$(mktemp -d /tmp/ggraphs.XXXXXX)
mkdir -p "$out" "$work/csv"
log=$out/graphs.log
: >"$log"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$log"

rows=()
# shellcheck source=bench/gpu-step.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-step.sh"

step test_cuda_apsp 300 "$bin/test_cuda_apsp"
step test_backend_contract 400 "$bin/test_backend_contract"
step test_cuda_sssp 240 "$bin/test_cuda_sssp"
step test_cuda_graph_mirror 240 "$bin/test_cuda_graph_mirror"
step test_cuda_apsp_update 300 "$bin/test_cuda_apsp_update"
step test_service_jobs_gpu 420 "$bin/test_service_jobs_gpu"
step bench_sssp 400 "$bin/bench_sssp" "$work/csv/sssp.csv"
step bench_sssp_service 400 "$bin/bench_sssp_service" "$work/csv/sssp_service.csv" 1000000 10 3
if [[ $quick != quick ]]; then
  step bench_apsp_update 400 "$bin/bench_apsp_update" "$work/csv/apsp_update.csv" 8192 1,10,100
  step bench_stored_apsp 400 "$bin/bench_stored_apsp" cuda "$work/csv/stored_apsp.csv" 8192 1,10,100 3
  step bench_stored_apsp_host 400 "$bin/bench_stored_apsp" cuda-host "$work/csv/stored_apsp_host.csv" 8192 1 3
  step bench_apsp 500 "$bin/bench_apsp" "$work/csv/apsp.csv" 8192,16384 4096
fi

tar -C "$work" -czf "$out/results.tar.gz" csv $(cd "$work" && ls ./*.log)
{
  echo
  echo "== summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
  printf '%s\n' "${rows[@]}"
} | tee -a "$log" | tee "$out/summary.txt"
