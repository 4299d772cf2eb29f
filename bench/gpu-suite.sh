#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs ON the GPU machine: every test_cuda_* and bench_* program in the bundle's bin folder,
# one after the other, each under a time limit; logs and benchmark CSVs go to $OUT; a short
# table comes last.
#
#   bash .device/run.sh bash bench/gpu-suite.sh [FILTER]   # FILTER: extended regex on names
#
# Conventions for programs found here: tests are gtest binaries; a benchmark writes its CSV to
# the path given as its first argument. What comes back from $OUT is at most 8 files, so the
# per-program logs and CSVs travel as one archive (results.tar.gz) next to suite.log (all
# output) and summary.txt (the table).
set -uo pipefail

filter=${1:-}
bin_dir=${GC_BIN_DIR:-/tmp/gbundle/bin}
out=${OUT:-/tmp/gsuite-out}
test_limit=${GC_TEST_TIMEOUT:-240}
bench_limit=${GC_BENCH_TIMEOUT:-300}
work=$(mktemp -d /tmp/gsuite.XXXXXX)
mkdir -p "$work/logs" "$work/csv" "$out"
log=$out/suite.log
: >"$log"

{
  echo "== gpu-suite on $(hostname) at $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv 2>&1 || true
} | tee -a "$log"

rows=()
run_one() {  # kind name limit command...
  local kind=$1 name=$2 limit=$3
  shift 3
  local plog=$work/logs/$name.log start end rc
  start=$(date +%s.%N)
  echo "== $kind $name" | tee -a "$log"
  timeout --kill-after=10 "$limit" "$@" >"$plog" 2>&1
  rc=$?
  end=$(date +%s.%N)
  cat "$plog" >>"$log"
  local secs detail
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
  if [[ $kind == test ]]; then
    local passed failed skipped
    passed=$(grep -oP '\[  PASSED  \] \K[0-9]+' "$plog" | tail -1)
    failed=$(grep -oP '\[  FAILED  \] \K[0-9]+(?= test)' "$plog" | tail -1)
    skipped=$(grep -oP '\[  SKIPPED \] \K[0-9]+(?= test)' "$plog" | tail -1)
    detail="passed ${passed:-0} failed ${failed:-0} skipped ${skipped:-0}"
    grep -E '^\[  FAILED  \] [A-Za-z]' "$plog" | sort -u | sed 's/^/    /' | tee -a "$log"
  else
    local csv_rows=0
    [[ -f $work/csv/$name.csv ]] && csv_rows=$(($(wc -l <"$work/csv/$name.csv") - 1))
    detail="csv rows $csv_rows"
    # A benchmark's own table is the end of its output: show it.
    tail -n 60 "$plog"
  fi
  [[ $rc == 124 || $rc == 137 ]] && detail="$detail (TIMED OUT after ${limit}s)"
  rows+=("$(printf '%-5s %-34s rc=%-3s %7ss  %s' "$kind" "$name" "$rc" "$secs" "$detail")")
}

shopt -s nullglob
for exe in "$bin_dir"/test_cuda_*; do
  name=$(basename "$exe")
  [[ -n $filter && ! $name =~ $filter ]] && continue
  run_one test "$name" "$test_limit" "$exe" --gtest_color=no
done
for exe in "$bin_dir"/bench_*; do
  name=$(basename "$exe")
  [[ -n $filter && ! $name =~ $filter ]] && continue
  run_one bench "$name" "$bench_limit" "$exe" "$work/csv/$name.csv"
done

tar -C "$work" -czf "$out/results.tar.gz" logs csv
{
  echo
  echo "== summary ($(date -u +%FT%TZ)); logs and CSVs in results.tar.gz"
  if [[ ${#rows[@]} -eq 0 ]]; then echo "no test_cuda_* or bench_* programs in $bin_dir"; fi
  printf '%s\n' "${rows[@]}"
} | tee "$out/summary.txt" | tee -a "$log"
rm -rf "$work"
