"""The kubeconfig a terminal beside the notebooks reads (`make lab` sets it up): one context per running lab.

Each `Lab` on an embedded cluster started while `LABSUPPORT_SHARED_KUBECONFIG` names this file adds its API
server as a context named after its notebook, as a path below the folder JupyterLab serves (`02-service-clusterip`,
the Russian edition's `ru/02-service-clusterip`; `lab` outside a notebook, `-2`, `-3` … when the name is taken) and
makes it the current one; closing the lab removes it, and the newest lab left becomes
current. So in a terminal `kubectl get pods` reaches the lab started last, `kubectl config get-contexts` lists them
all and `kubectl config use-context <name>` picks another. Kernels of several notebooks write the same file, so
every change holds a lock and replaces the file whole.

>>> import tempfile, os, yaml
>>> folder = tempfile.mkdtemp()
>>> one = os.path.join(folder, "one")
>>> _ = open(one, "w").write(yaml.safe_dump({"clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
...     "users": [{"name": "x", "user": {"token": "t"}}],
...     "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x", "namespace": "default"}}]}))
>>> shared = os.path.join(folder, "kubeconfig")
>>> add_context(shared, "02-service-clusterip", one), add_context(shared, "02-service-clusterip", one)
('02-service-clusterip', '02-service-clusterip-2')
>>> remove_context(shared, "02-service-clusterip-2")
>>> yaml.safe_load(open(shared))["current-context"]
'02-service-clusterip'
>>> import shutil; shutil.rmtree(folder)
"""
from __future__ import annotations

import contextlib
import os
import re
import time
from typing import Iterator

import yaml

#: The variable naming the shared kubeconfig (set by `make lab` for its kernels and terminals).
ENV = "LABSUPPORT_SHARED_KUBECONFIG"
#: The variable naming the folder JupyterLab serves (set by `make lab`): context names are notebook paths below it.
ROOT_ENV = "LABSUPPORT_NOTEBOOK_ROOT"
#: How long a writer waits for the lock before it takes over one a killed writer left behind.
LOCK_SECONDS = 10.0


def context_name(session: str | None = None, root: str | None = None) -> str:
    """A lab's context name: its notebook's path below the served folder `root` (ROOT_ENV), without `.ipynb` (from
    JPY_SESSION_NAME: `ru/00-start-here` beside `00-start-here`, not `00-start-here-2`), else `lab`.

    >>> context_name("/srv/notebooks/ru/00-start-here.ipynb", "/srv/notebooks"), context_name("/x/04 modes.ipynb")
    ('ru/00-start-here', '04-modes')
    """
    session = session if session is not None else os.environ.get("JPY_SESSION_NAME", "")
    root = root if root is not None else os.environ.get(ROOT_ENV, "")
    path = os.path.splitext(session)[0]
    relative = os.path.relpath(path, root) if root and os.path.isabs(path) else path
    if not root or relative.startswith(".."):
        relative = os.path.basename(path)
    parts = [re.sub(r"[^A-Za-z0-9._-]+", "-", part).strip("-") for part in relative.split(os.sep)]
    return "/".join(part for part in parts if part and part != ".") or "lab"


@contextlib.contextmanager
def _locked(path: str) -> Iterator[dict]:
    """The shared config, read under kubectl's own lock (`<file>.lock`, created exclusively, as `kubectl config
    use-context` takes it) and written back whole when the block ends."""
    lock = path + ".lock"
    deadline = time.monotonic() + LOCK_SECONDS
    while True:
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            break
        except FileExistsError:
            if time.monotonic() > deadline:         # left by a writer that was killed: take it over
                break
            time.sleep(0.02)
    try:
        config = empty()
        if os.path.exists(path):
            with open(path) as f:
                config.update(yaml.safe_load(f) or {})
        yield config
        temporary = f"{path}.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(config, f, sort_keys=False)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)


def empty() -> dict:
    """A kubeconfig with no cluster in it."""
    return {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [], "contexts": []}


def write_empty(path: str) -> None:
    """Start the shared kubeconfig with no lab in it."""
    with _locked(path) as config:
        config.clear()
        config.update(empty())


def add_context(path: str, name: str, kubeconfig: str) -> str:
    """Add the one context of `kubeconfig` to the shared file under `name` (or `name-2` … when taken) and make it
    current; returns the name used."""
    with open(kubeconfig) as f:
        own = yaml.safe_load(f)
    cluster, user = own["clusters"][0]["cluster"], own["users"][0]["user"]
    context = dict(own["contexts"][0]["context"])
    with _locked(path) as config:
        taken = {c["name"] for c in config.get("contexts") or []}
        unique, n = name, 1
        while unique in taken:
            n += 1
            unique = f"{name}-{n}"
        context.update(cluster=unique, user=unique)
        config.setdefault("clusters", []).append({"name": unique, "cluster": cluster})
        config.setdefault("users", []).append({"name": unique, "user": user})
        config.setdefault("contexts", []).append({"name": unique, "context": context})
        config["current-context"] = unique
    return unique


def remove_context(path: str, name: str) -> None:
    """Remove a lab's context; when it was current, the newest one left becomes current."""
    if not os.path.exists(path):
        return
    with _locked(path) as config:
        for key in ("clusters", "users", "contexts"):
            config[key] = [entry for entry in config.get(key) or [] if entry.get("name") != name]
        if config.get("current-context") == name:
            config.pop("current-context")
            if config["contexts"]:
                config["current-context"] = config["contexts"][-1]["name"]


__all__ = ["ENV", "ROOT_ENV", "context_name", "add_context", "remove_context", "write_empty", "empty"]
