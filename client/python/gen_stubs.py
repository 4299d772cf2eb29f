#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates the Python gRPC stubs of proto/gcompute/v1/*.proto into OUT/gcompute/v1/.

Used by setup.py (pip builds) and by the CMake target gcompute_python, so that both produce
the same modules. The .proto files use proto3 `optional`, which needs protoc >= 3.15. Two
generators are tried in order:
  1. protoc with grpc_python_plugin from PATH (Debian: protobuf-compiler and
     protobuf-compiler-grpc, both build dependencies of gcompute);
  2. grpc_tools.protoc (pip's grpcio-tools; Debian 12's python3-grpc-tools bundles a protoc
     too old for `optional`, so it only serves where 1 is missing).

Usage: gen_stubs.py --proto-dir DIR --out DIR
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from typing import List, Optional, Tuple

PROTO_SUBDIR = os.path.join("gcompute", "v1")


def default_proto_dir() -> str:
    """proto/ of the source tree this file lives in (client/python/../../proto)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("GCOMPUTE_PROTO_DIR") or os.path.normpath(
        os.path.join(here, "..", "..", "proto"))


def proto_files(proto_dir: str) -> List[str]:
    """The .proto files of gcompute.v1, relative to proto_dir (sorted)."""
    d = os.path.join(proto_dir, PROTO_SUBDIR)
    if not os.path.isdir(d):
        raise RuntimeError(f"no {PROTO_SUBDIR} under proto directory '{proto_dir}' (set GCOMPUTE_PROTO_DIR)")
    files = sorted(os.path.join(PROTO_SUBDIR, f) for f in os.listdir(d) if f.endswith(".proto"))
    if not files:
        raise RuntimeError(f"no .proto files in '{d}'")
    return files


def _run_protoc(proto_dir: str, out: str, files: List[str]) -> Optional[str]:
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    if not protoc or not plugin:
        return "protoc and grpc_python_plugin not both on PATH"
    r = subprocess.run([protoc, f"--plugin=protoc-gen-grpc_python={plugin}", f"-I{proto_dir}",
                        f"--python_out={out}", f"--grpc_python_out={out}", *files],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else f"{protoc} failed ({r.returncode}): {r.stderr.strip()}"


def _run_grpc_tools(proto_dir: str, out: str, files: List[str]) -> Optional[str]:
    try:
        from grpc_tools import protoc  # type: ignore
    except ImportError:
        return "grpc_tools is not installed"
    rc = protoc.main(["grpc_tools.protoc", f"-I{proto_dir}", f"--python_out={out}",
                      f"--grpc_python_out={out}", *files])
    return None if rc == 0 else f"grpc_tools.protoc failed ({rc}; see its messages above)"


def generate(proto_dir: str, out: str) -> List[str]:
    """Writes OUT/gcompute/v1/*_pb2.py, *_pb2_grpc.py and an __init__.py; returns the paths."""
    files = proto_files(proto_dir)
    target = os.path.join(out, PROTO_SUBDIR)
    os.makedirs(target, exist_ok=True)
    failures: List[Tuple[str, str]] = []
    for name, run in (("protoc", _run_protoc), ("grpc_tools", _run_grpc_tools)):
        error = run(proto_dir, out, files)
        if error is None:
            break
        failures.append((name, error))
    else:
        raise RuntimeError("cannot generate the gcompute Python stubs: " +
                           "; ".join(f"{n}: {e}" for n, e in failures) +
                           ". On Debian: apt-get install protobuf-compiler protobuf-compiler-grpc")
    init = os.path.join(target, "__init__.py")
    with open(init, "w") as f:
        f.write('"""gcompute.v1: generated from proto/gcompute/v1 (do not edit)."""\n')
    generated = [os.path.join(target, f) for f in sorted(os.listdir(target)) if f.endswith(".py")]
    return generated


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--proto-dir", default=default_proto_dir())
    ap.add_argument("--out", required=True, help="directory that receives gcompute/v1/")
    ap.add_argument("--stamp", help="file to touch when done (for build systems)")
    args = ap.parse_args(argv)
    try:
        generate(args.proto_dir, args.out)
    except RuntimeError as e:
        print(f"gen_stubs: {e}", file=sys.stderr)
        return 1
    if args.stamp:
        with open(args.stamp, "w"):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
