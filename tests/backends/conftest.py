"""Fixtures shared by the backend tests: a self-signed certificate, the Batch API providers, six items."""

import shutil
import ssl
import subprocess

import pytest

from tests.helpers.batch_providers import PROVIDERS, batch_items


@pytest.fixture()
def self_signed(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return cert, server


@pytest.fixture(params=PROVIDERS, ids=str)
def batch_provider(request):
    """Each Batch API provider in turn (tests/helpers/batch_providers.py), for tests that hold for all."""
    return request.param


@pytest.fixture()
def items():
    """The engine tests' six items, which ``tests.engine.conftest.da_score`` judges."""
    return batch_items()
