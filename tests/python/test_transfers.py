# SPDX-License-Identifier: Apache-2.0
"""Large arrays travel by themselves: operands over the inline limit are uploaded in chunks
(largest first) and deleted after the call, results too large for one message are stored by
the server, downloaded in chunks and deleted. A server with 1 MiB messages and an 8 MiB
stored-matrix quota makes every step necessary, and leaking a temporary matrix would exhaust
the quota within a few calls."""
import collections

import grpc
import numpy as np
import pytest

import gcompute

MiB = 1 << 20


class Recorder(grpc.UnaryUnaryClientInterceptor, grpc.StreamUnaryClientInterceptor,
               grpc.UnaryStreamClientInterceptor):
    """Records the methods a client calls, in order."""

    def __init__(self):
        self.calls = []

    def _record(self, details):
        self.calls.append(details.method.rsplit("/", 1)[-1])

    def intercept_unary_unary(self, continuation, details, request):
        self._record(details)
        return continuation(details, request)

    def intercept_stream_unary(self, continuation, details, request_iterator):
        self._record(details)
        return continuation(details, request_iterator)

    def intercept_unary_stream(self, continuation, details, request):
        self._record(details)
        return continuation(details, request)


@pytest.fixture(scope="module")
def small_server(start_server):
    return start_server("--max-message-bytes=1048576", "--stored-matrix-quota-bytes=8388608",
                        name="small-messages")


@pytest.fixture
def recorder():
    return Recorder()


@pytest.fixture
def small_client(small_server, recorder):
    with gcompute.Client(small_server.addr, timeout=120, max_message_bytes=MiB, chunk_bytes=64 * 1024,
                         interceptors=[recorder]) as c:
        yield c


def test_large_operand_and_result_are_chunked_and_cleaned_up(small_client, recorder, rng):
    a = rng.uniform(size=(600, 700))  # 3.4 MB: over the 512 KiB inline limit and 1 MiB messages
    for _ in range(5):  # 5 x (3.4 MB upload + 3.4 MB result) > 8 MiB quota unless both are freed
        recorder.calls.clear()
        at = small_client.transpose(a)
        assert np.array_equal(at, a.T)
        # The upload goes with MatrixRef.release (the server drops it as it reads it); only the
        # stored result needs a DeleteMatrix.
        assert recorder.calls == ["UploadMatrix", "Transpose", "DownloadMatrix", "DeleteMatrix"], \
            recorder.calls


def test_largest_operands_are_uploaded_first(small_client, recorder, rng):
    a = rng.uniform(size=(300, 400))   # 960 KB: uploaded
    b = rng.uniform(size=(400, 3))     # 9.6 KB: stays inline
    c = small_client.matmul(a, b)
    assert recorder.calls.count("UploadMatrix") == 1
    assert np.allclose(c, a @ b, rtol=1e-12, atol=1e-12)
    recorder.calls.clear()
    # Two operands of less than a chunk each that fit together stay inline: no upload at all.
    small_client.matmul(rng.uniform(size=(80, 80)), rng.uniform(size=(80, 80)))
    assert recorder.calls == ["MatMul"]


def test_operands_and_results_above_one_chunk_travel_as_streams(small_server, rng):
    """Under the inline limit and the message size, a matrix of more than one chunk still goes
    as a chunk stream (protobuf would code and copy it whole on both sides); a result expected
    above one chunk is stored, downloaded as a stream and deleted."""
    a = rng.uniform(size=(200, 100))  # 160 KB: under the 512 KiB inline limit
    for chunk, calls in ((64 * 1024, ["UploadMatrix", "Transpose", "DownloadMatrix", "DeleteMatrix"]),
                         (MiB // 2, ["Transpose"])):
        recorder = Recorder()
        with gcompute.Client(small_server.addr, timeout=120, max_message_bytes=MiB,
                             chunk_bytes=chunk, interceptors=[recorder]) as c:
            assert np.array_equal(c.transpose(a), a.T)
            assert recorder.calls == calls, (chunk, recorder.calls)
            recorder.calls.clear()
            # A small operand whose product is large: only the result is streamed.
            x, y = rng.uniform(size=(300, 2)), rng.uniform(size=(2, 200))  # 480 KB product
            assert np.allclose(c.matmul(x, y), x @ y, rtol=1e-12, atol=1e-12)
            want = ["MatMul", "DownloadMatrix", "DeleteMatrix"] if chunk < MiB // 2 else ["MatMul"]
            assert recorder.calls == want, (chunk, recorder.calls)


def test_results_refused_by_the_store_quota_come_back_in_the_response(start_server, rng):
    """A result the client chose to store (above one chunk) that the stored-matrix quota refuses
    is asked for again in the response, as the caller left it: a small quota costs streaming,
    not the call."""
    server = start_server("--stored-matrix-quota-bytes=100000", name="tiny-store")
    recorder = Recorder()
    with gcompute.Client(server.addr, timeout=120, chunk_bytes=64 * 1024,
                         interceptors=[recorder]) as c:
        x, y = rng.uniform(size=(300, 2)), rng.uniform(size=(2, 200))  # 480 KB product
        assert np.allclose(c.matmul(x, y), x @ y, rtol=1e-12, atol=1e-12)
        assert recorder.calls == ["MatMul", "MatMul"], recorder.calls
        # A result the caller asked to store is the caller's: the refusal reaches it.
        with pytest.raises(gcompute.ResourceExhausted, match="stored-matrix quota"):
            c.matmul(x, y, store=True)


def test_upload_download_with_progress(small_client, rng):
    for dtype in (np.float32, np.float64, np.int32, np.float16):
        a = (rng.uniform(-100, 100, size=(3, 257, 389))).astype(dtype)
        seen = []
        ref = small_client.upload(a, progress=lambda done, total: seen.append((done, total)))
        assert ref.shape == a.shape and ref.numpy_dtype == a.dtype and ref.size_bytes == a.nbytes
        assert seen[0] == (0, a.nbytes) and seen[-1] == (a.nbytes, a.nbytes)
        assert len(seen) == 1 + -(-a.nbytes // (64 * 1024))
        assert all(d1 <= d2 for (d1, _), (d2, _) in zip(seen, seen[1:]))
        seen.clear()
        back = small_client.download(ref, progress=lambda done, total: seen.append(done))
        assert back.dtype == a.dtype and np.array_equal(back, a)
        assert seen[-1] == a.nbytes and len(seen) > 2
        small_client.delete(ref)
        with pytest.raises(gcompute.NotFound):
            small_client.download(ref)


def test_refs_chain_calls_without_round_trips(small_client, recorder, rng):
    a = rng.uniform(-1, 1, size=(200, 150))
    b = rng.uniform(-1, 1, size=(150, 120))
    ra, rb = small_client.upload(a), small_client.upload(b)
    recorder.calls.clear()
    rc = small_client.matmul(ra, rb, store=True)          # stays on the server
    rct = small_client.transpose(rc, store=True)
    assert recorder.calls == ["MatMul", "Transpose"]
    assert isinstance(rct, gcompute.Ref) and rct.shape == (120, 200)
    u, s, vt = small_client.svd(rct, full_matrices=False)
    ref = np.linalg.svd((a @ b).T, compute_uv=False)
    assert np.allclose(s, ref, rtol=0, atol=1e-10 * ref[0])
    assert np.allclose(small_client.download(rct), (a @ b).T, rtol=1e-12, atol=1e-12)
    for r in (ra, rb, rc, rct):
        small_client.delete(r)


def test_a_too_large_request_names_the_limit(small_server, rng):
    # With an inline limit above the server's message size the request cannot be sent.
    with gcompute.Client(small_server.addr, timeout=60, max_message_bytes=8 * MiB,
                         inline_limit_bytes=8 * MiB) as c:
        with pytest.raises(gcompute.ResourceExhausted):
            c.transpose(rng.uniform(size=(600, 700)))


def test_quota_exhaustion_is_resource_exhausted(small_client, rng):
    kept = [small_client.upload(np.zeros((1024, 512))) for _ in range(2)]  # 2 x 4 MiB = quota
    try:
        with pytest.raises(gcompute.ResourceExhausted):
            small_client.upload(np.zeros((16, 16)))
    finally:
        for r in kept:
            small_client.delete(r)
    small_client.delete(small_client.upload(np.zeros((16, 16))))  # room again


def test_calls_counted(small_client, recorder, rng):
    """Stateless calls with small inputs use exactly one RPC each."""
    recorder.calls.clear()
    small_client.transpose(np.ones((3, 3)))
    small_client.svd(np.ones((3, 3)), compute_uv=False)
    small_client.info()
    assert collections.Counter(recorder.calls) == {"Transpose": 1, "Svd": 1, "GetServerInfo": 1}
