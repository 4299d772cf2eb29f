#!/usr/bin/env bash
# Copies the given executables and the shared libraries they load into DEST/bin and DEST/lib,
# for a runtime image that needs no -dev packages. Left out: the C library itself (the
# runtime base provides the same one), the NVIDIA driver (mounted by the container toolkit)
# and the CUDA toolkit's libraries under /usr/local/cuda (the CUDA runtime image has them).
# Usage: collect-runtime.sh DEST EXECUTABLE...
set -euo pipefail
dest=$1
shift
mkdir -p "$dest/bin" "$dest/lib"
for exe in "$@"; do
  install -m 0755 "$exe" "$dest/bin/"
  ldd "$exe" | awk '/=> \// {print $1, $3}' | while read -r soname path; do
    case $soname in
      ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*) continue ;;
      libcuda.so*|libnvidia*) continue ;;
    esac
    case $(readlink -f "$path") in /usr/local/cuda*) continue ;; esac
    [[ -e $dest/lib/$soname ]] || cp -L "$path" "$dest/lib/$soname"
  done
done
# Every copied library must resolve inside the image too (fails the build, not the start).
missing=$(LD_LIBRARY_PATH=$dest/lib ldd "$dest"/bin/* | grep 'not found' || true)
[[ -z $missing ]] || { echo "collect-runtime: unresolved: $missing" >&2; exit 1; }
echo "collect-runtime: $(ls "$dest/lib" | wc -l) libraries, $(du -sh "$dest" | cut -f1)" >&2
