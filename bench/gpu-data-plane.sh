#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs ON the GPU machine from a device bundle: the data plane of issue 16 in one call. Tests
# first (shared memory and CUDA IPC regions on the CUDA backend, uploads and downloads of
# device-resident matrices, the backend contract, the CUDA backend, jobs on the GPU), then
# bench_data_plane on the CUDA and the CPU backend, each against its raw gRPC baselines in the
# same process: per-call p50/p99 against a raw echo, uploads/downloads against raw streams, and
# Transpose end to end over the wire, through the client's shared-memory arena, zero copy and
# from another process's GPU memory (CUDA IPC; cuda_ipc_exporter must be in the bundle).
# Logs and CSVs go to $OUT (results.tar.gz beside data-plane.log); a short table comes last.
#
#   bash .device/run.sh bash bench/gpu-data-plane.sh [quick]
set -uo pipefail
bin=${GC_BIN_DIR:-/tmp/gbundle/bin}
out=${OUT:-/tmp/gdp-out}
quick=${1:-}
work=$(mktemp -d /tmp/gdp.XXXXXX)
mkdir -p "$out" "$work/csv"
log=$out/data-plane.log
: >"$log"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee -a "$log"

rows=()
# shellcheck source=bench/gpu-step.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-step.sh"

step test_service_shared_memory_gpu 240 "$bin/test_service_shared_memory_gpu"
step test_service_transfers_gpu 240 "$bin/test_service_transfers_gpu"
step test_cuda_backend 240 "$bin/test_cuda_backend"
step test_backend_contract 400 "$bin/test_backend_contract"
[[ $quick == quick ]] || step test_service_jobs_gpu 420 "$bin/test_service_jobs_gpu"
sizes=16,64,256,1024
[[ $quick == quick ]] && sizes=16,256
step bench_data_plane_cuda 420 "$bin/bench_data_plane" --device cuda --sizes-mib "$sizes" \
  --reps 3 --calls 2000 --csv "$work/csv/data_plane_cuda.csv"
step bench_data_plane_cpu 420 "$bin/bench_data_plane" --device cpu --sizes-mib 16,256 \
  --reps 3 --calls 1000 --csv "$work/csv/data_plane_cpu.csv"

tar -C "$work" -czf "$out/results.tar.gz" csv $(cd "$work" && ls ./*.log)
{
  echo
  echo "== summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
  printf '%s\n' "${rows[@]}"
  for f in "$work"/bench_data_plane_*.log; do
    echo "-- $(basename "$f" .log)"
    sed -n '/^| call |/,$p' "$f"
  done
} | tee -a "$log" | tee "$out/summary.txt"
