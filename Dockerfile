# gcompute container image: gcompute-server and the gcompute CLI.
#
# GPU image (default): CUDA 13 devel image to build, the matching runtime image to run.
#   docker build --network host -t gcompute:cuda .
#   docker run --gpus all --network host gcompute:cuda
# CPU-only image on plain Debian 12 (deploy/docker/make-debian12-base.sh makes the base
# image locally with debootstrap where no registry is reachable):
#   docker build --network host -t gcompute:cpu \
#     --build-arg BUILDER_IMAGE=debian12-local --build-arg RUNTIME_IMAGE=debian12-local \
#     --build-arg GCOMPUTE_CUDA=OFF .
# The builder needs gRPC 1.51-era packages (Debian 12 bookworm, Ubuntu 24.04 noble); the
# package list below exists under the same names in both.
ARG BUILDER_IMAGE=nvidia/cuda:13.0.0-devel-ubuntu24.04
ARG RUNTIME_IMAGE=nvidia/cuda:13.0.0-runtime-ubuntu24.04

FROM ${BUILDER_IMAGE} AS builder
# ON: CUDA backend (needs nvcc in the builder image); OFF: CPU backend only.
ARG GCOMPUTE_CUDA=ON
# Compute capabilities to compile for (90: H100/H200).
ARG CUDA_ARCHITECTURES=90
# Parallel compile jobs; empty: all cores.
ARG BUILD_JOBS=
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      prometheus-cpp-dev libabsl-dev libopenblas-dev liblapack-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . /src
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DGCOMPUTE_CUDA=${GCOMPUTE_CUDA} -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} \
      -DGCOMPUTE_BUILD_TESTS=OFF -DGCOMPUTE_BUILD_BENCH=OFF \
 && cmake --build /build --target gcompute-server gcompute ${BUILD_JOBS:+-j ${BUILD_JOBS}} \
 && deploy/docker/collect-runtime.sh /opt/gcompute /build/server/gcompute-server \
      /build/client/gcompute

FROM ${RUNTIME_IMAGE}
COPY --from=builder /opt/gcompute /opt/gcompute
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin gcompute \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/gcompute
ENV PATH=/opt/gcompute/bin:${PATH} \
    LD_LIBRARY_PATH=/opt/gcompute/lib \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    OPENBLAS_NUM_THREADS=1
USER 10001:10001
# gRPC and Prometheus /metrics.
EXPOSE 50051 9464
# For --data-dir (graphs and jobs that outlive the container): a new named volume mounted
# here starts owned by the server's user.
# grpc.health.v1 of the whole server: NOT_SERVING while it drains, so the probe fails then.
# When the command listens elsewhere, set GCOMPUTE_HEALTH_ADDR to the same HOST:PORT; over
# TLS set GCOMPUTE_HEALTH_FLAGS (e.g. --tls-ca=FILE; health needs no token).
ENV GCOMPUTE_HEALTH_ADDR=127.0.0.1:50051 \
    GCOMPUTE_HEALTH_FLAGS=
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD gcompute --server "$GCOMPUTE_HEALTH_ADDR" $GCOMPUTE_HEALTH_FLAGS --timeout 3 health \
      >/dev/null || exit 1
# SIGTERM drains (in-flight calls get --drain-seconds): stop with a longer timeout, e.g.
# docker stop -t 40 / compose stop_grace_period: 40s.
ENTRYPOINT ["gcompute-server"]
# Plaintext only on loopback (docker run --network host); other addresses need --tls-cert and
# --tls-key (docs/security.md), as in deploy/compose and deploy/k8s.
CMD ["--listen=127.0.0.1:50051", "--metrics-listen=127.0.0.1:9464", "--device=auto", \
     "--drain-seconds=30"]
