# SPDX-License-Identifier: Apache-2.0
"""gRPC status codes become the matching gcompute.Error subclass, with the server's message
unchanged (compared with what the raw generated stub receives for the same request)."""
import grpc
import numpy as np
import pytest

import gcompute
from gcompute import errors
from gcompute.v1 import operations_pb2, service_pb2_grpc, types_pb2


def raw_matmul_details(addr, a, b):
    """The status a raw stub gets for MatMul(a, b) (float32, inline)."""
    def matrix(x):
        return types_pb2.Matrix(rows=x.shape[0], cols=x.shape[1], dtype=types_pb2.DTYPE_F32,
                                data=np.ascontiguousarray(x, np.float32).tobytes())

    with grpc.insecure_channel(addr) as ch:
        req = operations_pb2.MatMulRequest()
        req.a.inline.CopyFrom(matrix(a))
        req.b.inline.CopyFrom(matrix(b))
        with pytest.raises(grpc.RpcError) as info:
            service_pb2_grpc.ComputeStub(ch).MatMul(req, timeout=30)
        return info.value.code(), info.value.details()


def test_invalid_argument_keeps_the_servers_message(client, server):
    a, b = np.zeros((3, 4), np.float32), np.zeros((5, 2), np.float32)
    code, details = raw_matmul_details(server.addr, a, b)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(gcompute.InvalidArgument) as info:
        client.matmul(a, b)
    e = info.value
    assert e.code == grpc.StatusCode.INVALID_ARGUMENT and e.code_name == "INVALID_ARGUMENT"
    assert e.message == str(e) == details
    assert "3x4" in e.message and "5x2" in e.message
    assert isinstance(e, ValueError) and isinstance(e, gcompute.Error)
    assert "InvalidArgument(INVALID_ARGUMENT" in repr(e)


def test_not_found(client):
    with pytest.raises(gcompute.NotFound) as info:
        client.download(gcompute.Ref("m-does-not-exist"))
    assert "m-does-not-exist" in info.value.message
    assert isinstance(info.value, LookupError)
    with pytest.raises(gcompute.NotFound):
        client.transpose(gcompute.Ref("m-does-not-exist"))
    with pytest.raises(gcompute.NotFound):
        client.delete("m-does-not-exist")


def test_resource_exhausted_over_the_matrix_limit(start_server):
    small = start_server("--max-matrix-elements=1000", name="small-limits")
    with gcompute.Client(small.addr, timeout=30) as c:
        with pytest.raises(gcompute.ResourceExhausted) as info:
            c.transpose(np.zeros((40, 40), np.float32))
        assert "1000" in info.value.message or "1600" in info.value.message
        assert c.transpose(np.zeros((10, 10), np.float32)).shape == (10, 10)


def test_deadline_exceeded(client, rng):
    a = rng.uniform(size=(400, 400))
    with pytest.raises(gcompute.DeadlineExceeded) as info:
        client.svd(a, timeout=0.001)
    assert isinstance(info.value, TimeoutError)


def test_unavailable_when_nothing_listens():
    with gcompute.Client("127.0.0.1:1", timeout=10) as c:
        with pytest.raises(gcompute.Unavailable):
            c.info()


def test_every_status_code_has_its_class():
    for code in grpc.StatusCode:
        if code == grpc.StatusCode.OK:
            continue
        e = errors.error_for(code, "msg")
        assert e.code == code and isinstance(e, gcompute.Error) and str(e) == "msg"
        name = "".join(w.capitalize() for w in code.name.split("_"))
        assert type(e).__name__ == name, code
        assert getattr(gcompute, name) is type(e)
