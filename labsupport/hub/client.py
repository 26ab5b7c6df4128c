"""The class's hub driven through its REST API with the `class` service's token: start and stop a member's server,
give a member a token, and call their own server (the contents API, nbgrader's assignment list and Validate) with
it, as their JupyterLab does."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from labsupport.errors import LabError
from labsupport.hub.state import ClassState


class HubRequestError(LabError, RuntimeError):
    """A request to the hub or to a member's server was answered with an error status."""

    def __init__(self, method: str, url: str, status: int, body: str):
        super().__init__(f"{method} {url}: {status} {body[:500]}")
        self.status = status


def request(method: str, url: str, token: str, body: Any = None, timeout: float = 300) -> Any:
    """One JSON request with `token`; the decoded answer (None when empty)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, method=method, data=data, headers={"Authorization": f"token {token}",
                                                                         "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            text = answer.read()
    except urllib.error.HTTPError as e:
        raise HubRequestError(method, url, e.code, e.read().decode(errors="replace")) from None
    return json.loads(text) if text else None


class HubClient:
    """The hub of one class, as its admin service."""

    def __init__(self, state: ClassState):
        self.state = state

    def hub(self, method: str, path: str, body: Any = None) -> Any:
        """A call to the hub's API (`/hub/api/…`)."""
        return request(method, f"{self.state.url}/hub/api{path}", self.state.api_token, body)

    def start_server(self, user: str, timeout: float = 300) -> float:
        """Start `user`'s server and wait until it answers; returns the seconds it took."""
        began = time.monotonic()
        self.hub("POST", f"/users/{user}/server", {})
        while True:
            server = self.hub("GET", f"/users/{user}")["servers"].get("")
            if server and server.get("ready"):
                return time.monotonic() - began
            if not server or time.monotonic() - began > timeout:
                raise LabError(f"the server of {user} did not start within {timeout:.0f} s (see the hub's log)")
            time.sleep(0.2)

    def stop_server(self, user: str) -> None:
        """Stop `user`'s server and wait until the hub says it is gone."""
        self.hub("DELETE", f"/users/{user}/server")
        while self.hub("GET", f"/users/{user}")["servers"].get(""):
            time.sleep(0.2)

    def token(self, user: str) -> str:
        """A new API token of `user` (for one hour)."""
        return self.hub("POST", f"/users/{user}/tokens", {"expires_in": 3600, "note": "labsupport class"})["token"]

    def server_pid(self, user: str) -> int:
        """The process id of `user`'s server, as the spawner recorded it."""
        return int(self.hub("GET", f"/users/{user}")["servers"][""]["state"]["pid"])


class MemberServer:
    """One member's own Jupyter server, called with their own token."""

    def __init__(self, state: ClassState, user: str, token: str):
        self.state, self.user, self.token = state, user, token
        self.base = f"{state.url}/user/{user}"

    def call(self, method: str, path: str, body: Any = None, timeout: float = 300) -> Any:
        """A call to this server (`path` after `/user/NAME`)."""
        return request(method, self.base + path, self.token, body, timeout)

    def contents(self, path: str) -> Any:
        """A file or folder through the contents API (notebooks as JSON)."""
        return self.call("GET", "/api/contents/" + urllib.parse.quote(path))

    def save_notebook(self, path: str, notebook: dict) -> None:
        """Save a notebook as JupyterLab saves it."""
        self.call("PUT", "/api/contents/" + urllib.parse.quote(path),
                  {"type": "notebook", "format": "json", "content": notebook})

    def assignments(self, action: str, assignment: str) -> Any:
        """nbgrader's assignment list: `fetch`, `submit` or `fetch_feedback` of `assignment` in the class's course."""
        return self.call("POST", f"/assignments/{action}",
                         {"course_id": self.state.course_id, "assignment_id": assignment})

    def validate(self, path: str) -> dict:
        """nbgrader's Validate of a notebook (run in a kernel of this server)."""
        return self.call("POST", "/assignments/validate", {"path": path}, timeout=900)


__all__ = ["HubClient", "MemberServer", "HubRequestError", "request"]
