#!/usr/bin/env bash
# Installs the Python client into a fresh venv exactly as docs/python.md says (Debian 12,
# offline: Debian's grpcio/protobuf/numpy through --system-site-packages, no build isolation,
# no package index), so that the tests run against the installed package.
# Usage: tests/python/install.sh VENV_DIR SOURCE_DIR
set -euo pipefail
venv=$1
src=$2
rm -rf "$venv"
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --no-build-isolation --no-index "$src/client/python"
cd /  # not the source tree: the import must find the installed package
"$venv/bin/python" -c 'import gcompute, gcompute.v1.service_pb2_grpc; print("installed", gcompute.__version__, "at", gcompute.__file__)'
