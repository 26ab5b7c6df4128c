"""The hub configuration `labsupport class up` writes (no root, no hub): the exchange service and who may use it,
the instructor's role, the servers' token, kernels over Unix sockets, the students' Content-Security-Policy."""
from __future__ import annotations

import sys

from traitlets.config import Config

from labsupport.hub import hub_config
from labsupport.hub.roster import EXCHANGE_ACCOUNT, Roster, RosterError
from labsupport.hub.state import ClassState

import pytest


def configured(tmp_path) -> tuple[Config, ClassState]:
    state = ClassState(directory=str(tmp_path), instructor="labclass-teacher",
                       students=["labclass-s01", "labclass-s02"], proxy="/x/chp", url="http://127.0.0.1:8000",
                       ports={"hub": 8000, "hub-api": 8001, "proxy-api": 8002, "exchange": 8003})
    state.save()
    c = Config()
    hub_config.configure(c, tmp_path)
    return c, state


def test_the_exchange_is_a_managed_service_run_as_its_own_account(tmp_path):
    c, state = configured(tmp_path)
    (service,) = [s for s in c.JupyterHub.services if s["name"] == "exchange"]
    assert service["user"] == EXCHANGE_ACCOUNT
    assert service["url"] == "http://127.0.0.1:8003" and state.exchange_url.startswith(service["url"])
    assert service["command"][:3] == [sys.executable, "-m", "labsupport.hub.exchange_service"]
    assert service["command"][3:] == ["--root", str(state.exchange), "--course", "k8s-services"]


def test_roles_come_from_the_hubs_groups(tmp_path):
    c, _ = configured(tmp_path)
    assert c.JupyterHub.load_groups == {"instructors": {"users": ["labclass-teacher"]},
                                        "nbgrader-k8s-services": {"users": ["labclass-s01", "labclass-s02"]}}
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    assert roles["exchange-service"]["scopes"] == ["read:users:name", "read:users:groups"]
    assert roles["exchange-user"]["groups"] == ["nbgrader-k8s-services"]
    assert "access:services!service=exchange" in c.Spawner.server_token_scopes


def test_the_instructor_is_not_the_hubs_admin_and_cannot_enter_a_students_server(tmp_path):
    c, _ = configured(tmp_path)
    assert "admin_users" not in c.Authenticator or not c.Authenticator.admin_users
    assert c.Authenticator.allowed_users == {"labclass-teacher", "labclass-s01", "labclass-s02"}
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    scopes = roles["instructor"]["scopes"]
    assert roles["instructor"]["groups"] == ["instructors"]
    assert not any(s.startswith(("access:servers", "tokens", "admin:")) for s in scopes), scopes
    assert roles["admin"] == {"name": "admin", "services": ["class"]}


def test_kernels_talk_over_unix_sockets_and_a_students_pages_run_no_inline_script():
    for role in ("student", "instructor"):
        assert hub_config.server_config(role)["KernelManager"] == {"transport": "ipc"}
    csp = hub_config.server_config("student")["ServerApp"]["tornado_settings"]["headers"]["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert "'unsafe-inline'" not in directives["script-src"] and "'self'" in directives["script-src"]
    assert directives["object-src"] == "'none'"
    # JupyterLab's own inline snippet (it takes a token out of the URL) is allowed by its hash, and only it
    hashes = [s for s in directives["script-src"].split() if s.startswith("'sha256-")]
    assert hashes == hub_config.jupyterlab_inline_hashes() and len(hashes) == 1, hashes
    assert "ServerApp" not in hub_config.server_config("instructor")


def test_the_exchanges_account_is_no_member():
    with pytest.raises(RosterError, match="exchange service's account"):
        Roster("labclass-teacher", [EXCHANGE_ACCOUNT])
