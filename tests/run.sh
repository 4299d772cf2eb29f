#!/usr/bin/env bash
# Builds gcompute with its tests and runs them (unit, kernel, store, service, end-to-end).
# GPU tests are labelled 'gpu' and report Skipped where no GPU is usable.
# With CI=true (or --sanitize) it also builds and runs the CPU tests under AddressSanitizer
# and UndefinedBehaviorSanitizer. Installs missing Debian packages first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GCOMPUTE_BUILD_DIR:-$root/build}
jobs=${GCOMPUTE_JOBS:-$(nproc)}
sanitize=0
[[ ${CI:-} == true || ${1:-} == --sanitize ]] && sanitize=1

"$root/deploy/install-deps.sh"

echo "== build ($build)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOMPUTE_WERROR=ON
cmake --build "$build" -j "$jobs"
echo "== tests"
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900

if [[ $sanitize == 1 ]]; then
  asan=${build}-asan
  echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer ($asan)"
  cmake -S "$root" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGCOMPUTE_SANITIZE=ON \
    -DGCOMPUTE_CUDA=OFF -DGCOMPUTE_BUILD_BENCH=OFF -DGCOMPUTE_WERROR=ON
  cmake --build "$asan" -j "$jobs"
  echo "== tests under sanitizers"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs" --timeout 1800 -LE gpu
fi
