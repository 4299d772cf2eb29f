# SPDX-License-Identifier: Apache-2.0
"""The Python client against a real gcompute-server over mutual TLS with bearer tokens
(certificates made by tests/support/make_test_certs.sh for this run): results are right, a
missing token is Unauthenticated, and two clients of one process with different tokens are two
tenants that cannot read each other's matrices."""
import hashlib
import os
import secrets
import subprocess

import numpy as np
import pytest

import gcompute


@pytest.fixture(scope="module")
def secure(start_server, work_dir, source_dir):
    certs = os.path.join(work_dir, "certs")
    subprocess.run([os.path.join(source_dir, "tests/support/make_test_certs.sh"), certs],
                   check=True)
    tokens = {"tenant-a": secrets.token_urlsafe(24), "tenant-b": secrets.token_urlsafe(24)}
    path = os.path.join(work_dir, "tokens")
    with open(path, "w") as f:
        for tenant, token in tokens.items():
            f.write(f"{tenant} {hashlib.sha256(token.encode()).hexdigest()}\n")
    tls = dict(tls_ca=os.path.join(certs, "ca.crt"), tls_cert=os.path.join(certs, "client.crt"),
               tls_key=os.path.join(certs, "client.key"))
    server = start_server(f"--tls-cert={certs}/server.crt", f"--tls-key={certs}/server.key",
                          f"--tls-client-ca={certs}/ca.crt", f"--auth-tokens={path}",
                          name="secure", client_kwargs=tls)
    return server, tls, tokens


def test_transpose_over_mutual_tls_with_token(secure, rng):
    server, tls, tokens = secure
    a = rng.standard_normal((5, 3))
    with gcompute.Client(server.addr, timeout=30, token=tokens["tenant-a"], **tls) as c:
        np.testing.assert_array_equal(c.transpose(a), a.T)


def test_missing_token_is_unauthenticated(secure):
    server, tls, _ = secure
    with gcompute.Client(server.addr, timeout=30, **tls) as c:
        with pytest.raises(gcompute.Unauthenticated):
            c.info()


def test_two_clients_with_different_tokens_are_two_tenants(secure, rng):
    server, tls, tokens = secure
    a = rng.standard_normal((4, 4))
    with gcompute.Client(server.addr, timeout=30, token=tokens["tenant-a"], **tls) as ca, \
            gcompute.Client(server.addr, timeout=30, token=tokens["tenant-b"], **tls) as cb:
        ref = ca.upload(a)
        with pytest.raises(gcompute.NotFound):
            cb.download(ref)
        np.testing.assert_array_equal(ca.download(ref), a)


def test_client_certificate_needs_its_key():
    with pytest.raises(gcompute.InvalidArgument, match="tls_cert and tls_key"):
        gcompute.Client("127.0.0.1:1", tls_ca=True, tls_cert=b"x")
