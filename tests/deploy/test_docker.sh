#!/usr/bin/env bash
# The container image, end to end: builds a Debian 12 base image locally (debootstrap; cached),
# builds the CPU-only flavour of ./Dockerfile on it, runs it with --network host on free
# loopback ports, waits for its HEALTHCHECK to report healthy, drives it with the gcompute CLI
# (info, transpose, svd; results checked with NumPy), checks the image (non-root, only the two
# executables, no compiler) and that `docker stop` drains and exits 0.
# Exits 77 (ctest: Skipped) when no Docker engine is usable: `docker info` fails. CI does not
# install or start one. To run it: apt-get install docker.io debootstrap;
# dockerd --bridge=none --iptables=false &; then ctest -R deploy_docker (as root).
# Usage: test_docker.sh --cli PATH/gcompute --source REPO_ROOT [--jobs N] [--no-build]
# (--no-build, or GCOMPUTE_DOCKER_NO_BUILD=1: test the gcompute:cpu-test image built earlier.)
set -euo pipefail
cli="" src="" jobs=${GCOMPUTE_DOCKER_JOBS:-2} build=1
[[ ${GCOMPUTE_DOCKER_NO_BUILD:-0} == 1 ]] && build=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --cli) cli=$2; shift 2 ;;
    --source) src=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
if ! command -v docker >/dev/null || ! timeout 20 docker info >/dev/null 2>&1; then
  echo "SKIP: no usable Docker engine (docker info failed)"
  exit 77
fi
if ! docker image inspect debian12-local >/dev/null 2>&1 && ! command -v debootstrap >/dev/null; then
  echo "SKIP: no debian12-local base image and no debootstrap to make one"
  exit 77
fi
image=gcompute:cpu-test
name=gcompute-test-$$
work=$(mktemp -d)
cleanup() {
  docker rm -f "$name" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; docker logs "$name" 2>&1 | tail -20 >&2 || true; exit 1; }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [[ $build == 1 ]]; then
echo "== base image"
"$src/deploy/docker/make-debian12-base.sh" debian12-local

echo "== build $image (CPU-only, Debian 12)"
start=$(date +%s)
docker build --network host -t "$image" \
  --build-arg BUILDER_IMAGE=debian12-local --build-arg RUNTIME_IMAGE=debian12-local \
  --build-arg GCOMPUTE_CUDA=OFF --build-arg BUILD_JOBS="$jobs" "$src" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; fail "docker build"; }
echo "built in $(($(date +%s) - start)) s"
fi
echo "$image: $(docker image inspect -f '{{.Size}}' "$image") bytes"

echo "== image contents"
user=$(docker image inspect -f '{{.Config.User}}' "$image")
[[ $user == 10001:10001 ]] || fail "image user is '$user', not 10001:10001"
bins=$(docker run --rm --network none --entrypoint /bin/sh "$image" -c 'ls /opt/gcompute/bin | tr "\n" " "')
[[ $bins == "gcompute gcompute-server " ]] || fail "/opt/gcompute/bin holds '$bins'"
docker run --rm --network none --entrypoint /bin/sh "$image" -c \
  'command -v c++ g++ cc cmake >/dev/null && exit 1; id -u' | grep -qx 10001 ||
  fail "runtime stage has a compiler or does not run as 10001"
docker image inspect -f '{{json .Config.ExposedPorts}}' "$image" | grep -q '"50051/tcp"' ||
  fail "50051 not exposed"

echo "== run"
port=$(free_port)
mport=$(free_port)
docker run -d --name "$name" --network host -e GCOMPUTE_HEALTH_ADDR=127.0.0.1:$port \
  --health-interval 1s --health-start-period 2s "$image" \
  --listen=127.0.0.1:$port --metrics-listen=127.0.0.1:$mport --device=cpu --drain-seconds=5 \
  >/dev/null
health=""
for _ in $(seq 1 60); do
  health=$(docker inspect -f '{{.State.Health.Status}}' "$name")
  [[ $health == healthy ]] && break
  [[ $(docker inspect -f '{{.State.Running}}' "$name") == true ]] || fail "container exited"
  sleep 1
done
[[ $health == healthy ]] || fail "HEALTHCHECK says '$health' after 60 s"
echo "healthy on 127.0.0.1:$port"

g() { "$cli" --server "127.0.0.1:$port" --timeout 60 "$@"; }
g info | tee "$work/info.txt"
grep -q '^backend: cpu' "$work/info.txt" || fail "info shows no CPU backend"
g health | grep -q SERVING || fail "gcompute health"

/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
np.save(f"{sys.argv[1]}/a.npy", rng.standard_normal((37, 53)).astype(np.float32))
np.save(f"{sys.argv[1]}/s.npy", rng.standard_normal((40, 24)).astype(np.float64))
PY
g transpose "$work/a.npy" "$work/at.npy"
g svd "$work/s.npy" --out "$work/svd" >/dev/null
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
w = sys.argv[1]
a, at = np.load(f"{w}/a.npy"), np.load(f"{w}/at.npy")
assert at.shape == (53, 37) and np.array_equal(at, a.T), "transpose differs"
s_in = np.load(f"{w}/s.npy")
S, U, Vt = (np.load(f"{w}/svd.{k}.npy") for k in ("S", "U", "Vt"))
ref = np.linalg.svd(s_in, compute_uv=False)
assert np.allclose(S, ref, rtol=1e-10, atol=1e-12), f"S differs: {np.abs(S - ref).max()}"
assert np.allclose(U @ np.diag(S) @ Vt, s_in, atol=1e-10), "U S Vt does not rebuild A"
print("transpose and svd match NumPy")
PY
curl_metrics() { /usr/bin/python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" "$1"; }
curl_metrics "http://127.0.0.1:$mport/metrics" >"$work/metrics.txt"
grep -q 'gcompute_requests_total{.*method="Svd"' "$work/metrics.txt" ||
  fail "metrics do not count the Svd call"

echo "== stop (SIGTERM drains, exit 0)"
docker stop -t 30 "$name" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$name")
[[ $code == 0 ]] || fail "exit code $code after docker stop"
echo "PASS"
