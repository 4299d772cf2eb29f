#!/usr/bin/env bash
# Installs the Debian 12 packages gcompute builds, tests and runs with, if any are missing.
# Usage: deploy/install-deps.sh [--runtime-only | --fuzz]
#   --fuzz also installs clang with libFuzzer and the sanitizer runtimes (about 150 MB more)
#   for the fuzz targets of tests/fuzz (cmake -DGCOMPUTE_FUZZ=ON; tests/run.sh --fuzz).
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libabsl-dev libopenblas-dev liblapacke-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
test_packages=(python3 python3-numpy python3-scipy python3-grpcio python3-grpc-tools python3-protobuf python3-yaml
  prometheus  # promtool and the server for tests/deploy/test_prometheus.sh (19 MB; not started)
  # The Python client: installed offline into a venv (docs/python.md) and tested with pytest;
  # openssl makes the TLS test's certificates.
  python3-venv python3-pip python3-setuptools python3-wheel python3-pytest openssl)

# clang's -fsanitize=fuzzer links libclang_rt.fuzzer from libclang-rt-14-dev.
fuzz_packages=(clang-14 libclang-rt-14-dev)

wanted=("${build_packages[@]}")
[[ ${1:-} == --runtime-only ]] || wanted+=("${test_packages[@]}")
[[ ${1:-} == --fuzz ]] && wanted+=("${fuzz_packages[@]}")

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
