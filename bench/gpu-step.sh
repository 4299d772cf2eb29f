# SPDX-License-Identifier: Apache-2.0
# Sourced by the GPU scripts that run a list of programs (gpu-data-plane.sh, gpu-graphs.sh):
#   step NAME LIMIT COMMAND...
# runs COMMAND under a time limit, its output into $work/NAME.log and appended to $log, and adds
# one line to the array `rows` (exit status, seconds, gtest's passed / failed counts or else the
# last line of output). The caller sets `work`, `log` and `rows=()`.
step() {
  local name=$1 limit=$2
  shift 2
  local start rc
  start=$(date +%s)
  echo "== $name" | tee -a "$log"
  timeout --kill-after=10 "$limit" "$@" >"$work/$name.log" 2>&1
  rc=$?
  cat "$work/$name.log" >>"$log"
  local detail
  detail=$(grep -oP '\[  PASSED  \] \K[0-9]+ tests?' "$work/$name.log" | tail -1)
  local failed
  failed=$(grep -oP '\[  FAILED  \] \K[0-9]+(?= tests?)' "$work/$name.log" | tail -1)
  [[ -n $failed ]] && detail="$detail, FAILED $failed"
  [[ -z $detail ]] && detail=$(tail -n 1 "$work/$name.log" | cut -c1-70)
  [[ $rc == 124 || $rc == 137 ]] && detail="TIMED OUT after ${limit}s"
  rows+=("$(printf '%-30s rc=%-3s %5ss  %s' "$name" "$rc" "$(($(date +%s) - start))" "$detail")")
}
