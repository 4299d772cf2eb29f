# SPDX-License-Identifier: Apache-2.0
"""The package under test is the one pip installed into the venv (not the source tree), with
its generated stubs; its version is the project's; `python3 -m gcompute` works."""
import os
import re
import subprocess
import sys

import pytest

import gcompute


def test_imported_from_the_installed_venv(source_dir):
    assert sys.prefix != sys.base_prefix, "tests must run in the venv that install.sh made"
    path = os.path.realpath(gcompute.__file__)
    assert path.startswith(os.path.realpath(sys.prefix) + os.sep), path
    assert not path.startswith(os.path.realpath(os.path.join(source_dir, "client")) + os.sep), path
    import gcompute.v1.service_pb2_grpc as stubs
    assert os.path.realpath(stubs.__file__).startswith(os.path.dirname(path))
    # No generated code in the source tree (it is built, not committed).
    assert not os.path.exists(os.path.join(source_dir, "client", "python", "gcompute", "v1", "service_pb2.py"))


def test_version_is_the_projects(source_dir):
    cmake = open(os.path.join(source_dir, "CMakeLists.txt")).read()
    assert re.search(r"project\(gcompute VERSION (\S+)", cmake).group(1) == gcompute.__version__


def test_public_names():
    for name in gcompute.__all__:
        assert hasattr(gcompute, name), name
    assert issubclass(gcompute.InvalidArgument, gcompute.Error)


def run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "gcompute", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_cli_info_health_graphs(server):
    r = run_cli("--server", server.addr, "info")
    assert r.returncode == 0, r.stderr
    assert f"server: {server.addr}\n" in r.stdout and "backend: cpu\n" in r.stdout
    assert re.search(r"^max message bytes: \d+$", r.stdout, re.M)
    r = run_cli("--server", server.addr, "health")
    assert r.returncode == 0 and r.stdout == f"{server.addr}: SERVING\n", r
    with gcompute.Client(server.addr, timeout=30) as c:
        c.create_graph(3, [(0, 1, 2.0)], graph_id="cli-listed")
        try:
            r = run_cli("--server", server.addr, "graphs")
            assert r.returncode == 0
            assert f"cli-listed: version 1, 3 vertices, 1 edges (on {server.addr})" in r.stdout
        finally:
            c.delete_graph("cli-listed")


def test_cli_errors():
    r = run_cli("--server", "127.0.0.1:1", "--timeout", "5", "info")
    assert r.returncode == 1 and r.stderr.startswith("gcompute: UNAVAILABLE: "), r.stderr
    r = run_cli("--server", "a:1,,b:2", "info")
    assert r.returncode == 1 and "INVALID_ARGUMENT" in r.stderr and "empty entry" in r.stderr
    r = run_cli("frobnicate")
    assert r.returncode == 2


@pytest.mark.parametrize("module", ["client", "routing", "errors", "types"])
def test_documented(module):
    import importlib
    m = importlib.import_module(f"gcompute.{module}")
    assert m.__doc__
    for name in dir(m):
        obj = getattr(m, name)
        if callable(obj) and getattr(obj, "__module__", None) == m.__name__ and not name.startswith("_"):
            assert obj.__doc__, f"gcompute.{module}.{name} has no docstring"
