"""The schedule function's Kubernetes adapter over real TLS: a local HTTPS server with a certificate of its own CA,
reached with that CA (as EKS gives it: base64 PEM) and refused with another CA; the bearer token sent, a status
answer read as a failure naming the call."""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from neuronfleet.lambdas.pool_schedule.adapters import KubeApi, KubeError, https_sender

pytestmark = pytest.mark.enable_socket  # a local server on 127.0.0.1 only


def _certificate(tmp: Path, name: str) -> tuple[Path, Path, str]:
    """A self-signed certificate for 127.0.0.1 (its own CA): (cert file, key file, the cert as EKS's CA data)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp / f"{name}.crt").write_bytes(pem)
    (tmp / f"{name}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                        serialization.PrivateFormat.PKCS8,
                                                        serialization.NoEncryption()))
    return tmp / f"{name}.crt", tmp / f"{name}.key", base64.b64encode(pem).decode()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, str, list[dict[str, str]]]]:
    cert, key, ca = _certificate(tmp_path, "cluster")
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(dict(self.headers))
            status, body = (200, {"spec": {"replicas": 3}}) if self.path.endswith("/scale") else (
                403, {"kind": "Status", "message": "forbidden"})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}", ca, seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_cluster_ca_is_trusted_and_the_token_sent(server) -> None:
    endpoint, ca, seen = server
    api = KubeApi(endpoint=endpoint, token=lambda: "k8s-aws-v1.abc", send=https_sender(ca, timeout=5))
    assert api.call("GET", "/apis/apps/v1/namespaces/default/deployments/serve/scale") == {"spec": {"replicas": 3}}
    assert seen[0]["Authorization"] == "Bearer k8s-aws-v1.abc"
    with pytest.raises(KubeError, match=r"GET /api/v1/pods: HTTP 403: .*forbidden"):
        api.call("GET", "/api/v1/pods")


def test_another_ca_is_refused(server, tmp_path: Path) -> None:
    endpoint, _, seen = server
    _, _, other = _certificate(tmp_path, "other")
    api = KubeApi(endpoint=endpoint, token=lambda: "t", send=https_sender(other, timeout=5))
    with pytest.raises(KubeError, match="CERTIFICATE_VERIFY_FAILED"):
        api.call("GET", "/apis/apps/v1/namespaces/default/deployments/serve/scale")
    assert seen == []
