"""A Kubernetes REST API over the embedded control plane, for the real kubectl and the official clients.

HTTPS on 127.0.0.1 with a fresh self-signed certificate (kubectl sends bearer tokens over TLS only), a random
bearer token, and a kubeconfig in a private temp dir. Waiting requests (watches, followed logs, attach) move the
virtual clock while nothing else happens, so waits finish in real seconds.
"""
from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import secrets
import shutil
import socket
import ssl
import tempfile
import threading
import time
import traceback
from collections import deque
from http.server import ThreadingHTTPServer
from typing import Any, Callable, Iterable


from labsupport.apiserver import authz
from labsupport.apiserver.handler import RequestHandler
from labsupport.apiserver.kubeconfig import write_kubeconfig
from labsupport.apiserver.fields import FieldOwners
from labsupport.apiserver.routes import IDLE_STEP
from labsupport.control.clock import rfc3339
from labsupport.model.objects import clone


def make_certificate(directory: str) -> tuple[str, str]:
    """Write a self-signed certificate for 127.0.0.1 and its key into `directory`; returns (cert, key) paths.

    An ECDSA P-256 key and a ten-year certificate for `127.0.0.1` and `localhost`, made in-process; the kubeconfig
    trusts the certificate itself as its CA, so it is marked as one.
    """
    # imported here: the in-process server (inprocess.py) runs where cryptography is not installed
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    cert, key = os.path.join(directory, "server.crt"), os.path.join(directory, "server.key")
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "labsupport-apiserver")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False, key_agreement=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(private.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(private.public_key()), critical=False)
        .sign(private, hashes.SHA256())
    )
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    with open(cert, "wb") as out:
        out.write(certificate.public_bytes(serialization.Encoding.PEM))
    return cert, key


class TLSServer(ThreadingHTTPServer):
    """A threading HTTP server whose connections speak TLS (handshake in the connection's own thread)."""

    daemon_threads = True
    context: ssl.SSLContext

    def get_request(self) -> tuple[ssl.SSLSocket, Any]:
        """Accept one connection and wrap it in TLS without blocking the accept loop on the handshake."""
        sock, addr = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that fails its handshake or drops is not worth a traceback."""


class Watcher:
    """One open watch: its kind and client program, the store events it still has to send, the resourceVersion of
    the last one queued for it, and the last it has handled (sent to its client, or passed over as not selected);
    -1 until its first list or replay is sent."""

    def __init__(self, kind: str, agent: str = ""):
        self.kind = kind
        self.agent = agent
        self.queue: deque = deque()
        self.queued = 0
        self.handled = -1

    def caught_up(self, rv: int) -> bool:
        """Whether it has handled every event of its kind up to resourceVersion `rv` that was queued for it."""
        return self.handled >= 0 and (self.handled >= rv or self.handled >= self.queued)


class APIServer:
    """The embedded cluster served as a Kubernetes API on 127.0.0.1 (free port unless given)."""

    def __init__(self, cluster: Any, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 state_dir: str | None = None, follow_wall_time: bool = False):
        self.cluster = cluster
        self.host = host
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self.follow_wall_time = follow_wall_time
        self._state_dir = state_dir
        self._own_dir = state_dir is None
        self.dir: str | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        watches = threading.RLock()
        self._cond = threading.Condition(watches)   # a watch has events to send
        self._sent = threading.Condition(watches)   # a watch has sent some
        self._watchers: set[Watcher] = set()
        self._last_event = time.monotonic()
        self._advance_lock = threading.Lock()
        self._stopping = threading.Event()
        self._unsubscribe: Callable[[], None] | None = None
        self.fields = FieldOwners()
        self.users: dict[str, authz.Identity] = {}
        self.applied: dict[str, dict[str, dict]] = {}

    # --- who may call ----------------------------------------------------------------------------------------
    def add_user(self, name: str, policy: authz.Policy, groups: tuple[str, ...] = ("system:authenticated",)) -> str:
        """Give a user of this server's own a fresh bearer token; every request with it is checked against
        `policy`. Returns the token."""
        token = secrets.token_urlsafe(32)
        self.users[token] = authz.Identity(name, groups, policy)
        return token

    def identity(self, authorization: str) -> authz.Identity | None:
        """Who an Authorization header's bearer token stands for (None: nobody this server knows)."""
        given = authorization.encode()
        if secrets.compare_digest(given, f"Bearer {self.token}".encode()):
            return authz.ADMIN_IDENTITY
        for token, identity in list(self.users.items()):
            if secrets.compare_digest(given, f"Bearer {token}".encode()):
                return identity
        return None

    @property
    def certificate(self) -> str:
        """The server's certificate (PEM), which a client trusts as its CA."""
        with open(self.cert_path) as f:
            return f.read()

    # --- lifecycle -----------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"https://{self.host}:{self.port}"

    @property
    def kubeconfig_path(self) -> str:
        """Path of the kubeconfig that points kubectl at this server."""
        return os.path.join(self.dir or "", "kubeconfig")

    def start(self) -> "APIServer":
        """Listen, serve in background threads and write the kubeconfig."""
        if self._httpd is not None:
            return self
        self.dir = self._state_dir or tempfile.mkdtemp(prefix="labsupport-apiserver-")
        os.makedirs(self.dir, exist_ok=True)
        self.cert_path, key = make_certificate(self.dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key)
        context.set_alpn_protocols(["http/1.1"])
        handler = type("Handler", (RequestHandler,), {"api": self})
        self._httpd = TLSServer((self.host, self.port), handler, bind_and_activate=False)
        self._httpd.context = context
        self._httpd.allow_reuse_address = True
        self._httpd.server_bind()
        self._httpd.server_activate()
        self.port = self._httpd.server_address[1]
        self._unsubscribe = self.cluster.store.subscribe(self._on_event)
        self._write_kubeconfig()
        thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                  name="labsupport-apiserver", daemon=True)
        thread.start()
        self._threads.append(thread)
        if self.follow_wall_time:
            ticker = threading.Thread(target=self._follow_wall, name="labsupport-clock", daemon=True)
            ticker.start()
            self._threads.append(ticker)
        return self

    def stop(self) -> None:
        """Stop serving, end open watches and remove the kubeconfig's directory."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
            self._sent.notify_all()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for thread in self._threads:
            thread.join(timeout=2)
        self._threads.clear()
        if self.dir and self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def _write_kubeconfig(self) -> None:
        with open(self.cert_path, "rb") as cert:
            authority = base64.b64encode(cert.read()).decode()
        write_kubeconfig(self.kubeconfig_path, {"server": self.url, "certificate-authority-data": authority},
                         self.token)

    # --- events and time -----------------------------------------------------------------------------------
    def _on_event(self, event) -> None:
        self._last_event = time.monotonic()
        if event.type == "DELETED":
            uid = event.object["metadata"].get("uid", "")
            self.fields.forget(uid)
            self.applied.pop(uid, None)
        with self._cond:
            for w in self._watchers:
                if w.kind == event.kind:
                    w.queue.append(event)
                    w.queued = event.rv
            self._cond.notify_all()

    def wait_idle(self, limit: float | None) -> None:
        """Called by a waiting request with nothing to send: after a short real pause with no cluster activity,
        move the virtual clock to its next timer (never past `limit`, a virtual time)."""
        if self.follow_wall_time or self._stopping.is_set():
            return
        if getattr(self.cluster.clock, "_follow_wall", None) is not None:
            # a Lab whose clock follows wall time catches up on every API read; give it one
            self.cluster.list("Namespace")
            return
        if time.monotonic() - self._last_event < IDLE_STEP:
            return
        if not self._advance_lock.acquire(blocking=False):
            return
        try:
            with self.cluster.lock:
                clock = self.cluster.clock
                due = clock.next_due()
                if due is None:
                    return
                target = due if limit is None else min(due, limit)
                if clock.horizon is not None:
                    target = min(target, clock.horizon)
                if target < clock.now:
                    return
                self.cluster.advance(target - clock.now)
                self._last_event = time.monotonic()
        finally:
            self._advance_lock.release()

    def advance(self, seconds: float) -> None:
        """Move the virtual clock (the /labsupport/v1/advance endpoint)."""
        self.cluster.advance(seconds)

    def _follow_wall(self) -> None:
        last = time.monotonic()
        while not self._stopping.wait(0.1):
            now = time.monotonic()
            try:
                self.cluster.advance(now - last)
            except Exception:  # noqa: BLE001 - the ticker must outlive one bad timer
                traceback.print_exc()
            last = now

    def register(self, kind: str, agent: str = "") -> Watcher:
        """Start collecting events of a kind for a watch by client program `agent` (call with the cluster lock
        held)."""
        w = Watcher(kind, agent)
        with self._cond:
            self._watchers.add(w)
        return w

    def unregister(self, w: Watcher) -> None:
        """Stop collecting for a watch."""
        with self._cond:
            self._watchers.discard(w)

    def mark_handled(self, w: Watcher, rv: int) -> None:
        """A watch has sent its client everything up to resourceVersion `rv` (the bytes are in the socket)."""
        with self._cond:
            w.handled = max(w.handled, rv)
            self._sent.notify_all()

    def wait_delivered(self, kinds: Iterable[str], rv: int, timeout: float, *, agent: str | None = None) -> bool:
        """Wait until every open watch of `kinds` (by client program `agent`, if given) has sent its client the
        events up to resourceVersion `rv` (a watch that has nothing selected in them counts as soon as it has passed
        them over). False when some watch is still behind after `timeout` real seconds (a client that stopped
        reading)."""
        wanted = frozenset(kinds)
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(w.kind in wanted and (agent is None or w.agent == agent) and not w.caught_up(rv)
                      for w in self._watchers):
                if self._stopping.is_set():
                    return True
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._sent.wait(left)
            return True

    def next_events(self, w: Watcher, timeout: float) -> list:
        """Events queued for a watch, waiting up to `timeout` real seconds for the first."""
        with self._cond:
            if not w.queue and not self._stopping.is_set():
                self._cond.wait(timeout)
            out = list(w.queue)
            w.queue.clear()
        return out

    @property
    def stopping(self) -> bool:
        """Whether the server is shutting down."""
        return self._stopping.is_set()

    # --- managed fields ------------------------------------------------------------------------------------
    def decorate(self, obj: dict) -> dict:
        """Add what the server keeps beside the store (managedFields) to an object it returns."""
        fields = self.fields.managed_fields(obj)
        if fields:
            obj = dict(obj)
            obj["metadata"] = dict(obj["metadata"], managedFields=fields)
        return obj

    def record_update(self, obj: dict, old: dict | None, submitted: dict, manager: str,
                      subresource: str = "") -> None:
        """A write by a field manager: it now owns the fields it changed."""
        self.fields.record_update(obj, old, submitted, manager, rfc3339(self.cluster.clock.now), subresource)

    def record_apply(self, obj: dict, manager: str, applied: dict) -> None:
        """Remember what a field manager applied (server-side apply): it owns exactly that configuration."""
        self.fields.record_apply(obj, applied, manager, rfc3339(self.cluster.clock.now))
        self.applied.setdefault(obj["metadata"]["uid"], {})[manager] = clone(applied)


__all__ = ["APIServer", "make_certificate"]
