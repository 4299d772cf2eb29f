# SPDX-License-Identifier: Apache-2.0
"""The client side of tokens and TLS, against an in-process Python gRPC server (the real
server over mutual TLS with tokens: test_security.py): the bearer token reaches the server on
unary, client-streaming and server-streaming calls and on health checks; UNAUTHENTICATED maps to
gcompute.Unauthenticated; tls_ca verifies the server's certificate (a self-signed CA made with
openssl), including under another name (tls_server_name)."""
import shutil
import subprocess
import threading
from concurrent import futures

import grpc
import numpy as np
import pytest

import gcompute
from gcompute.v1 import matrices_pb2, operations_pb2, service_pb2, service_pb2_grpc

TOKEN = "s3cr3t-token.value"


class FakeCompute(service_pb2_grpc.ComputeServicer):
    """Enough of Compute for the transfers of a chunked transpose: stores uploads, transposes
    a stored float64 operand into a stored result, streams and deletes matrices. Records the
    metadata of every call; rejects calls without the expected token when `required`."""

    def __init__(self, required=None):
        self.required = required
        self.seen = []  # (method, authorization header or None)
        self.matrices = {}
        self.lock = threading.Lock()

    def _check(self, method, context):
        auth = dict(context.invocation_metadata()).get("authorization")
        with self.lock:
            self.seen.append((method, auth))
        if self.required is not None and auth != f"Bearer {self.required}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, f"{method}: missing or wrong bearer token")

    def _store(self, array):
        with self.lock:
            mid = f"m-{len(self.matrices)}"
            self.matrices[mid] = array
        sm = matrices_pb2.UploadMatrixResponse().matrix
        sm.ref.id = mid
        sm.shape.rows, sm.shape.cols = array.shape
        sm.shape.dtype = 2  # f64
        sm.size_bytes = array.nbytes
        return sm

    def GetServerInfo(self, request, context):
        self._check("GetServerInfo", context)
        return service_pb2.GetServerInfoResponse(version="fake", backend="cpu")

    def UploadMatrix(self, request_iterator, context):
        self._check("UploadMatrix", context)
        header = next(request_iterator).header.shape
        data = bytearray(header.rows * header.cols * 8)
        for part in request_iterator:
            data[part.chunk.offset:part.chunk.offset + len(part.chunk.data)] = part.chunk.data
        a = np.frombuffer(bytes(data), dtype="<f8").reshape(header.rows, header.cols)
        return matrices_pb2.UploadMatrixResponse(matrix=self._store(a))

    def Transpose(self, request, context):
        self._check("Transpose", context)
        with self.lock:
            # As the server does: a ref marked release leaves the store as it is read.
            a = (self.matrices.pop if request.a.ref.release else self.matrices.get)(request.a.ref.id)
        response = operations_pb2.TransposeResponse()
        response.at.stored.CopyFrom(self._store(np.ascontiguousarray(a.T)))
        return response

    def DownloadMatrix(self, request, context):
        self._check("DownloadMatrix", context)
        a = self.matrices[request.ref.id]
        head = matrices_pb2.DownloadMatrixResponse()
        head.header.shape.rows, head.header.shape.cols = a.shape
        head.header.shape.dtype = 2
        yield head
        data = a.tobytes()
        step = request.chunk_bytes or len(data)
        for off in range(0, len(data), step):
            part = matrices_pb2.DownloadMatrixResponse()
            part.chunk.offset = off
            part.chunk.data = data[off:off + step]
            yield part

    def DeleteMatrix(self, request, context):
        self._check("DeleteMatrix", context)
        with self.lock:
            self.matrices.pop(request.ref.id, None)
        return matrices_pb2.DeleteMatrixResponse()


def start_fake(servicer, credentials=None):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    service_pb2_grpc.add_ComputeServicer_to_server(servicer, server)

    def health_check(request, context):
        servicer._check("Health/Check", context)
        return b"\x08\x01"  # status: SERVING

    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(health_check)})])
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    return server, f"127.0.0.1:{port}"


def chunked_transpose(c):
    a = np.arange(60, dtype=np.float64).reshape(6, 10)
    assert np.array_equal(c.transpose(a), a.T)


def test_token_reaches_the_server_on_every_kind_of_call():
    fake = FakeCompute(required=TOKEN)
    server, addr = start_fake(fake)
    try:
        with gcompute.Client(addr, token=TOKEN, timeout=30, inline_limit_bytes=16, chunk_bytes=64) as c:
            assert c.info().version == "fake"
            chunked_transpose(c)  # upload (client stream), transpose (releasing it), download, delete
            assert c.health() == {addr: "SERVING"}
        methods = [m for m, _ in fake.seen]
        assert methods == ["GetServerInfo", "UploadMatrix", "Transpose", "DownloadMatrix",
                           "DeleteMatrix", "Health/Check"]
        assert all(auth == f"Bearer {TOKEN}" for _, auth in fake.seen), fake.seen
        assert not fake.matrices  # the temporary upload was released, the stored result deleted
    finally:
        server.stop(None)


def test_no_token_sends_no_authorization_and_maps_unauthenticated():
    fake = FakeCompute(required=TOKEN)
    server, addr = start_fake(fake)
    try:
        with gcompute.Client(addr, timeout=30) as c:
            with pytest.raises(gcompute.Unauthenticated, match="GetServerInfo: missing or wrong bearer token"):
                c.info()
        with gcompute.Client(addr, token="wrong", timeout=30) as c:
            with pytest.raises(gcompute.Unauthenticated):
                c.info()
        assert fake.seen == [("GetServerInfo", None), ("GetServerInfo", "Bearer wrong")]
    finally:
        server.stop(None)
    with pytest.raises(gcompute.InvalidArgument, match="token"):
        gcompute.Client("127.0.0.1:1", token="two words")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA and a server certificate for 127.0.0.1 / localhost / gcompute.test."""
    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("certs")

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d, timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "1", "-subj", "/CN=gcompute test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=gcompute.test")
    (d / "ext.cnf").write_text("subjectAltName=DNS:gcompute.test,DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.pem", "-days", "1", "-extfile", "ext.cnf")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other-ca.pem",
        "-days", "1", "-subj", "/CN=another CA")
    return d


def test_tls_with_a_private_ca(certs):
    creds = grpc.ssl_server_credentials([((certs / "server.key").read_bytes(),
                                          (certs / "server.pem").read_bytes())])
    fake = FakeCompute(required=TOKEN)
    server, addr = start_fake(fake, creds)
    try:
        for ca in (str(certs / "ca.pem"), (certs / "ca.pem").read_bytes(), certs / "ca.pem"):
            with gcompute.Client(addr, tls_ca=ca, token=TOKEN, timeout=30, inline_limit_bytes=16) as c:
                assert c.info().backend == "cpu"
                chunked_transpose(c)
        # The certificate names gcompute.test: reachable under that name too.
        with gcompute.Client(addr, tls_ca=certs / "ca.pem", tls_server_name="gcompute.test", token=TOKEN,
                             timeout=30) as c:
            assert c.info().version == "fake"
        # A certificate from another CA, or plaintext to a TLS port, does not connect.
        with gcompute.Client(addr, tls_ca=certs / "other-ca.pem", token=TOKEN, timeout=10) as c:
            with pytest.raises(gcompute.Unavailable):
                c.info()
        with gcompute.Client(addr, token=TOKEN, timeout=10) as c:
            with pytest.raises(gcompute.Unavailable):
                c.info()
        assert all(auth == f"Bearer {TOKEN}" for _, auth in fake.seen)
    finally:
        server.stop(None)
    with pytest.raises(gcompute.InvalidArgument, match="tls_server_name needs tls_ca"):
        gcompute.Client("127.0.0.1:1", tls_server_name="x")
