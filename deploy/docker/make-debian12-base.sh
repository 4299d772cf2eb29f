#!/usr/bin/env bash
# Makes a local Debian 12 (bookworm) base image with debootstrap and loads it into Docker, for
# machines that reach a Debian mirror but no image registry. The rootfs tarball is cached, so
# a later run (or a restarted Docker engine) only re-imports it.
# Usage: deploy/docker/make-debian12-base.sh [IMAGE_TAG]   (default debian12-local)
# Env: GCOMPUTE_DOCKER_CACHE (default ~/.cache/gcompute-docker), DEBIAN_MIRROR
# (default http://deb.debian.org/debian). Needs root (debootstrap) and a running Docker engine.
set -euo pipefail
tag=${1:-debian12-local}
cache=${GCOMPUTE_DOCKER_CACHE:-${HOME}/.cache/gcompute-docker}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
tarball=$cache/debian12-rootfs.tar

if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "base: $tag already loaded" >&2
  exit 0
fi
mkdir -p "$cache"
if [[ ! -s $tarball ]]; then
  command -v debootstrap >/dev/null || { echo "base: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
  rootfs=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$rootfs"' EXIT
  echo "base: debootstrap bookworm from $mirror into $rootfs (a few minutes)" >&2
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
  cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
SOURCES
  # Images are built, not administered: no caches or docs in layers.
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    >"$rootfs/etc/apt/apt.conf.d/90gcompute-no-recommends"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -cf "$tarball.tmp" --numeric-owner .
  mv "$tarball.tmp" "$tarball"
fi
echo "base: importing $tarball as $tag" >&2
docker import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' "$tarball" "$tag" >/dev/null
