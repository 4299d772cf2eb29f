#!/usr/bin/env bash
# Builds gcompute (CUDA backend where the toolkit exists, CPU otherwise) and starts the server
# in the foreground. Extra arguments go to gcompute-server, e.g. --listen 127.0.0.1:50051.
# Installs missing Debian packages first.
#
# It builds in its own directory, build-serve/ ($GCOMPUTE_SERVE_BUILD_DIR), a Release build
# without tests or benchmarks; tests/run.sh builds in build/. Neither reuses the other's
# configuration, so the two commands work in either order. GCOMPUTE_CMAKE_ARGS adds CMake
# arguments (e.g. -DGCOMPUTE_CUDA=OFF).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GCOMPUTE_SERVE_BUILD_DIR:-$root/build-serve}
"$root/deploy/install-deps.sh" --runtime-only
# shellcheck disable=SC2086  # GCOMPUTE_CMAKE_ARGS is a list of arguments
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${GCOMPUTE_CMAKE_ARGS:-} \
  -DGCOMPUTE_BUILD_TESTS=OFF -DGCOMPUTE_BUILD_BENCH=OFF -DGCOMPUTE_BUILD_SERVICE=ON \
  -DGCOMPUTE_SANITIZE=OFF >/dev/null
cmake --build "$build" --target gcompute-server gcompute
echo "serve: the CLI is $build/client/gcompute (try: $build/client/gcompute info)" >&2
# One OpenBLAS thread per request: the server runs several at once (docs/performance.md, CPU
# backend, Threads). Set OPENBLAS_NUM_THREADS yourself to override.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
exec "$build/server/gcompute-server" "$@"
