#!/usr/bin/env bash
# Builds gcompute with its tests and runs them (unit, kernel, store, service, end-to-end,
# deployment and the Python client's pytest suite). GPU tests are labelled 'gpu' and report
# Skipped where no GPU is usable.
# With CI=true (or --sanitize) it also builds and runs the CPU tests under AddressSanitizer
# and UndefinedBehaviorSanitizer; with CI=true (or --fuzz) it also runs every libFuzzer target
# of tests/fuzz for GCOMPUTE_FUZZ_SECONDS (default 60) from its checked-in corpus, with clang
# (installed by deploy/install-deps.sh --fuzz); with CI=true (or --tsan) it also builds and runs
# the engine, store and ops tests under ThreadSanitizer. Installs missing Debian packages first.
#
# The build directory is its own (build/, or $GCOMPUTE_BUILD_DIR; deploy/serve.sh uses
# build-serve/), and the options that decide which tests exist are set on every run, so that
# no other configuration of the same directory can leave tests out. tests/check_tests.py fails
# the run if ctest lists or runs fewer tests than the tree defines.
# GCOMPUTE_CMAKE_ARGS adds CMake arguments (e.g. -DGCOMPUTE_CUDA=OFF -DGCOMPUTE_BUILD_BENCH=OFF);
# it cannot turn the tests off.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GCOMPUTE_BUILD_DIR:-$root/build}
jobs=${GCOMPUTE_JOBS:-$(nproc)}
sanitize=0
fuzz=0
tsan=0
[[ ${CI:-} == true ]] && sanitize=1 && fuzz=1 && tsan=1
for arg in "$@"; do
  case $arg in
    --sanitize) sanitize=1 ;;
    --fuzz) fuzz=1 ;;
    --tsan) tsan=1 ;;
    *) echo "usage: $0 [--sanitize] [--fuzz] [--tsan]" >&2; exit 2 ;;
  esac
done

"$root/deploy/install-deps.sh"

# run_tests BUILD_DIR CTEST_ARGS...: ctest, then the count check on its JUnit report.
run_tests() {
  local dir=$1
  shift
  /usr/bin/python3 "$root/tests/check_tests.py" "$dir" -- "$@"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error --output-junit "$dir/ctest-junit.xml" "$@"
  /usr/bin/python3 "$root/tests/check_tests.py" "$dir" --junit "$dir/ctest-junit.xml" -- "$@"
}

echo "== build ($build)"
# shellcheck disable=SC2086  # GCOMPUTE_CMAKE_ARGS is a list of arguments
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOMPUTE_WERROR=ON \
  -DGCOMPUTE_BUILD_BENCH=ON ${GCOMPUTE_CMAKE_ARGS:-} \
  -DGCOMPUTE_BUILD_TESTS=ON -DGCOMPUTE_BUILD_SERVICE=ON -DGCOMPUTE_SANITIZE=OFF
cmake --build "$build" -j "$jobs"
echo "== tests"
run_tests "$build" -j "$jobs" --timeout 900

if [[ $sanitize == 1 ]]; then
  asan=${build}-asan
  echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer ($asan)"
  cmake -S "$root" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGCOMPUTE_SANITIZE=ON \
    -DGCOMPUTE_CUDA=OFF -DGCOMPUTE_BUILD_BENCH=OFF -DGCOMPUTE_WERROR=ON \
    -DGCOMPUTE_BUILD_TESTS=ON -DGCOMPUTE_BUILD_SERVICE=ON
  cmake --build "$asan" -j "$jobs"
  echo "== tests under sanitizers"
  # Every test but the GPU ones, the Python client's included: those start the sanitized
  # gcompute-server and require a clean exit after the drain, so a leak or UB report fails them.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions="$root/tests/lsan.supp" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_tests "$asan" -j "$jobs" --timeout 1800 -LE gpu
fi

if [[ $tsan == 1 ]]; then
  ts=${build}-tsan
  tsan_labels=(engine store ops)
  echo "== build with ThreadSanitizer ($ts: ${tsan_labels[*]} tests)"
  cmake -S "$root" -B "$ts" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOMPUTE_TSAN=ON \
    -DGCOMPUTE_CUDA=OFF -DGCOMPUTE_BUILD_BENCH=OFF -DGCOMPUTE_WERROR=ON \
    -DGCOMPUTE_BUILD_TESTS=ON -DGCOMPUTE_BUILD_SERVICE=ON
  cmake --build "$ts" -j "$jobs" --target "${tsan_labels[@]/#/gcompute_tests_}"
  echo "== tests under ThreadSanitizer"
  # Only these labels are built, so check_tests.py (which wants every executable) does not
  # apply; gcompute_tests_LABEL builds every executable of a label, and --no-tests=error
  # fails an empty selection. tests/tsan.supp holds races inside uninstrumented libraries only.
  label_regex="^($(IFS='|'; echo "${tsan_labels[*]}"))\$"
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp" \
    ctest --test-dir "$ts" --output-on-failure --no-tests=error -j "$jobs" --timeout 1800 \
    -L "$label_regex" -LE gpu
fi

if [[ $fuzz == 1 ]]; then
  "$root/deploy/install-deps.sh" --fuzz
  fz=${build}-fuzz
  seconds=${GCOMPUTE_FUZZ_SECONDS:-60}
  echo "== libFuzzer targets with clang ($fz, $seconds s each)"
  cmake -S "$root" -B "$fz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DGCOMPUTE_FUZZ=ON \
    -DGCOMPUTE_FUZZ_SECONDS="$seconds" -DGCOMPUTE_CUDA=OFF -DGCOMPUTE_BUILD_BENCH=OFF \
    -DGCOMPUTE_WERROR=ON
  cmake --build "$fz" -j "$jobs" --target gcompute_fuzz
  ctest --test-dir "$fz" --output-on-failure -j "$jobs" -L fuzz
fi
