# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Python client tests: real gcompute-server processes (--device=cpu, on
127.0.0.1 port 0, no metrics endpoint), clients connected to them, and a random generator
with a fresh seed per test (printed, so that a failure can be replayed with GCOMPUTE_SEED).

The tests import the `gcompute` package that tests/python/run.sh installed into a fresh venv
(test_packaging.py checks that this is the one imported).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from typing import List, Optional

import numpy as np
import pytest

import gcompute


def pytest_addoption(parser):
    parser.addoption("--server-bin", required=True, help="path of gcompute-server")
    parser.addoption("--cli-bin", default=None, help="path of the gcompute CLI (C++)")
    parser.addoption("--source-dir", default=None, help="root of the gcompute source tree")


class Server:
    """One gcompute-server process on 127.0.0.1 (port chosen by the kernel)."""

    def __init__(self, binary: str, work_dir: str, args: List[str], name: str = "server",
                 client_kwargs: Optional[dict] = None) -> None:
        self.client_kwargs = client_kwargs or {}  # what a client needs (TLS files) to connect
        self.log_path = os.path.join(work_dir, f"{name}.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [binary, "--listen=127.0.0.1:0", "--metrics-listen=", "--device=cpu",
             "--drain-seconds=2", *args],
            stdout=self._log, stderr=subprocess.STDOUT)
        self.port = self._wait_for_port(deadline=time.monotonic() + 60)
        self.addr = f"127.0.0.1:{self.port}"
        self._wait_serving(deadline=time.monotonic() + 60)

    def log_tail(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-30:])

    def _wait_for_port(self, deadline: float) -> int:
        while time.monotonic() < deadline:
            m = re.search(r"listening on \S+ \(port (\d+)\)", open(self.log_path, errors="replace").read())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"gcompute-server exited with {self.proc.returncode}:\n{self.log_tail()}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"gcompute-server printed no port within 60 s:\n{self.log_tail()}")

    def _wait_serving(self, deadline: float) -> None:
        with gcompute.Client(self.addr, timeout=5, **self.client_kwargs) as c:
            while True:
                try:
                    if c.health()[self.addr] == "SERVING":
                        return
                except gcompute.Unavailable:
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"gcompute-server not SERVING within 60 s:\n{self.log_tail()}")
                time.sleep(0.1)

    def stop(self) -> Optional[int]:
        """SIGTERM (drain), then SIGKILL after 20 s; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()
        return self.proc.returncode


@pytest.fixture(scope="session")
def work_dir():
    with tempfile.TemporaryDirectory(prefix="gcompute-pytest-") as d:
        yield d


@pytest.fixture(scope="session")
def start_server(request, work_dir):
    """start_server(*args, name=..., client_kwargs=...) -> Server; every server is stopped at
    the end of the session, and must have exited 0 (a clean drain). client_kwargs: what a
    gcompute.Client needs to reach it (TLS files), used to wait until it serves."""
    servers: List[Server] = []
    binary = request.config.getoption("--server-bin")

    def start(*args: str, name: Optional[str] = None, client_kwargs: Optional[dict] = None) -> Server:
        s = Server(binary, work_dir, list(args), name or f"server{len(servers)}", client_kwargs)
        servers.append(s)
        return s

    yield start
    failures = []
    for s in servers:
        already_stopped = s.proc.poll() is not None
        rc = s.stop()
        if rc != 0 and not already_stopped:
            failures.append(f"{s.addr} exited with {rc}:\n{s.log_tail()}")
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="session")
def server(start_server) -> Server:
    """The shared server: default limits except a 64 MiB stored-matrix quota."""
    return start_server("--workers=2", "--stored-matrix-quota-bytes=67108864", name="shared")


@pytest.fixture
def client(server):
    with gcompute.Client(server.addr, timeout=120) as c:
        yield c


@pytest.fixture
def rng():
    seed = int(os.environ.get("GCOMPUTE_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"GCOMPUTE_SEED={seed}")
    return np.random.default_rng(seed)


def _given_option(request, name: str) -> str:
    """The value of command-line option `name`; skips the test where it was not given."""
    value = request.config.getoption(name)
    if not value:
        pytest.skip(f"{name} not given")
    return value


@pytest.fixture(scope="session")
def source_dir(request) -> str:
    return _given_option(request, "--source-dir")


@pytest.fixture(scope="session")
def cli_bin(request) -> str:
    return _given_option(request, "--cli-bin")
