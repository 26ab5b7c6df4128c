"""The exchange service on a thread of its own, in front of a hub API that answers the two questions the service
asks a hub: whose is this token (`GET /hub/api/user`, as JupyterHub answers it: the owner's name and the token's
scopes, 403 for a token it does not know) and what is this user (`GET /hub/api/users/NAME` with the service's own
token: admin flag and groups, 404 for nobody). The real hub answers the same in the classroom tier."""
from __future__ import annotations

import asyncio
import json
import pathlib
import secrets
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

from tornado import web
from tornado.httpserver import HTTPServer

from labsupport.hub.exchange_service import HubRoles, make_app, students_group
from labsupport.hub.exchange_store import ExchangeStore, StoreCaps

COURSE = "k8s-services"
SCOPE = "access:services!service=exchange"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HubApi:
    """The users, groups and tokens of the pretend hub."""

    def __init__(self) -> None:
        self.service_token = secrets.token_hex(16)
        self.users: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, tuple[str, list[str]]] = {}

    def add(self, name: str, *, admin: bool = False, groups: tuple[str, ...] = (),
            scopes: tuple[str, ...] = (SCOPE,)) -> str:
        """A user and a token of theirs with `scopes`; returns the token."""
        self.users[name] = {"kind": "user", "name": name, "admin": admin, "groups": list(groups)}
        token = secrets.token_hex(16)
        self.tokens[token] = (name, list(scopes))
        return token


class _UserHandler(web.RequestHandler):
    def get(self) -> None:
        hub: HubApi = self.settings["hub"]
        token = self.request.headers.get("Authorization", "").removeprefix("token ")
        if token not in hub.tokens:
            self.set_status(403)
            self.finish(json.dumps({"status": 403, "message": "Missing or invalid credentials."}))
            return
        name, scopes = hub.tokens[token]
        self.finish(json.dumps({"kind": "user", "name": name, "scopes": scopes}))


class _UsersHandler(web.RequestHandler):
    def get(self, name: str) -> None:
        hub: HubApi = self.settings["hub"]
        if self.request.headers.get("Authorization") != f"token {hub.service_token}":
            self.set_status(403)
            self.finish("{}")
        elif name not in hub.users:
            self.set_status(404)
            self.finish(json.dumps({"status": 404, "message": "Not Found"}))
        else:
            self.finish(json.dumps(hub.users[name]))


class Rig:
    """A running service (`url`) with its store (`root`) and its hub (`hub`): an instructor, two students of the
    course, and one user who is neither."""

    def __init__(self, root: pathlib.Path, caps: StoreCaps = StoreCaps()):
        from jupyterhub.services.auth import HubAuth
        self.hub = HubApi()
        self.instructor = self.hub.add("teacher", admin=True)
        self.alice = self.hub.add("alice", groups=(students_group(COURSE),))
        self.bob = self.hub.add("bob", groups=(students_group(COURSE),))
        self.stranger = self.hub.add("mallory")
        self.unscoped = self.hub.add("carol", groups=(students_group(COURSE),), scopes=())
        root.mkdir(mode=0o700)
        self.root = root
        self.store = ExchangeStore(root, caps)
        hub_port, port = free_port(), free_port()
        api_url = f"http://127.0.0.1:{hub_port}/hub/api"
        self.url = f"http://127.0.0.1:{port}/services/exchange"
        ready = threading.Event()

        async def serve() -> None:
            hub_app = web.Application([(r"/hub/api/user", _UserHandler), (r"/hub/api/users/([^/]+)", _UsersHandler)],
                                      hub=self.hub)
            hub_app.listen(hub_port, "127.0.0.1")
            auth = HubAuth(api_url=api_url, api_token=self.hub.service_token, access_scopes={SCOPE},
                           cache_max_age=0, allow_token_in_url=False)
            app = make_app(self.store, auth, HubRoles(api_url, self.hub.service_token, ttl=0), {COURSE})
            server = HTTPServer(app, max_body_size=300 * 2**20)
            server.listen(port, "127.0.0.1")
            self.stop_event = asyncio.Event()
            ready.set()
            await self.stop_event.wait()
            server.stop()

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(serve(),), daemon=True)
        self.thread.start()
        assert ready.wait(30), "the exchange service did not start"

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop_event.set)
        self.thread.join(10)

    def call(self, method: str, path: str, token: str | None, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """One request (`path` after `/services/exchange/`): status and decoded JSON answer."""
        data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.url}/{path}", data=data, method=method, headers=dict(headers or {}))
        if token:
            request.add_header("Authorization", f"token {token}")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=60) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as e:
            text = e.read()
            return e.code, json.loads(text) if text else None
