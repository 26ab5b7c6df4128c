"""The API server's TLS certificate, made in-process: what it names, who may read its key, that TLS accepts it."""
from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import stat
import threading

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from labsupport.apiserver.server import make_certificate


def test_certificate_names_the_loopback_address(tmp_path):
    cert_path, key_path = make_certificate(str(tmp_path))
    cert = x509.load_pem_x509_certificate(open(cert_path, "rb").read())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert cert.subject == cert.issuer and isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days >= 3650
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600
    again, _ = make_certificate(str(tmp_path))
    assert x509.load_pem_x509_certificate(open(again, "rb").read()).serial_number != cert.serial_number


def test_a_client_that_trusts_only_this_certificate_connects(tmp_path):
    cert_path, key_path = make_certificate(str(tmp_path))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_path, key_path)
    client_ctx = ssl.create_default_context(cafile=cert_path)
    if hasattr(ssl, "VERIFY_X509_STRICT"):
        client_ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    hosts = ("127.0.0.1", "localhost")

    def serve():
        for _ in hosts:
            conn, _ = listener.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(tls.recv(16))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        for host in hosts:      # the name kubectl dials by, and the one a browser might
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                with client_ctx.wrap_socket(raw, server_hostname=host) as tls:
                    tls.sendall(b"ping")
                    assert tls.recv(16) == b"ping"
        thread.join(5)
    finally:
        listener.close()
