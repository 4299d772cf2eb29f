#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs HERE (no GPU needed): configures a CUDA build, builds every test_cuda_* and bench_*
# target, packs the programs that built into a device bundle, and prints the device command.
#
#   bash bench/gpu-build.sh            # build dir build-gpu, bundle .device
#   GC_BUILD_DIR=build-x GC_BUNDLE=.device-x JOBS=2 bash bench/gpu-build.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${GC_BUILD_DIR:-build-gpu}
bundle=${GC_BUNDLE:-.device}
jobs=${JOBS:-2}
bundler=${GC_DEVICE_BUNDLE:-$root/../shared/tools/device-bundle}
[[ -x $bundler ]] || bundler=/work/shared/tools/device-bundle

cmake -S . -B "$build" -G Ninja -DGCOMPUTE_CUDA=ON -DGCOMPUTE_BUILD_SERVICE=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
mapfile -t targets < <(ninja -C "$build" -t targets all | sed -n 's/^\(\(test_cuda_\|bench_\)[A-Za-z0-9_]*\): .*/\1/p' | sort -u)
[[ ${#targets[@]} -gt 0 ]] || { echo "gpu-build: no test_cuda_* or bench_* targets" >&2; exit 1; }
echo "gpu-build: ${targets[*]}"
# Keep going past a target that does not build: the others still go to the GPU.
ninja -C "$build" -j "$jobs" -k 0 "${targets[@]}" || echo "gpu-build: some targets failed (above)" >&2

programs=()
for t in "${targets[@]}"; do
  exe=$(find "$build" -path '*/CMakeFiles' -prune -o -type f -name "$t" -perm -u+x -print | head -1)
  if [[ -n $exe ]]; then programs+=("$exe"); else echo "gpu-build: $t did not build" >&2; fi
done
[[ ${#programs[@]} -gt 0 ]] || { echo "gpu-build: nothing built" >&2; exit 1; }
"$bundler" -o "$bundle" "${programs[@]}"
cp bench/gpu-suite.sh "$bundle/gpu-suite.sh"
cat <<MSG

Device call (from $root; one call runs every test and benchmark):
  carry:   ["$bundle"]
  command: bash $bundle/run.sh bash $bundle/gpu-suite.sh
MSG
