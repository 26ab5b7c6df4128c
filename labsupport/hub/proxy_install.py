"""JupyterHub's proxy, configurable-http-proxy, from the npm registry into a folder of the project's own.

It is installed once, with the machine's npm, into `.node/` at the project's root (git ignores it;
LABSUPPORT_NODE_PREFIX names another folder), never globally. `make hub-proxy` and `labsupport class up` both
call `ensure_proxy`.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

from labsupport.errors import LabError

#: The proxy release the class runs (JupyterHub 5 speaks its API).
PROXY_PACKAGE = "configurable-http-proxy@4.6.3"
PROJECT = pathlib.Path(__file__).resolve().parents[2]


class ProxyInstallError(LabError, RuntimeError):
    """configurable-http-proxy is not installed and cannot be."""


def node_prefix() -> pathlib.Path:
    """The folder npm installs the proxy into."""
    return pathlib.Path(os.environ.get("LABSUPPORT_NODE_PREFIX") or PROJECT / ".node")


def proxy_program() -> pathlib.Path:
    """Where the installed proxy's command is."""
    return node_prefix() / "node_modules" / ".bin" / "configurable-http-proxy"


def missing_node() -> list[str]:
    """What installing and running the proxy lacks here (node 18 or newer and npm)."""
    return [tool for tool in ("node", "npm") if shutil.which(tool) is None]


def ensure_proxy() -> pathlib.Path:
    """The proxy's command, installing it with npm first when it is not there yet."""
    program = proxy_program()
    if program.exists():
        return program
    if missing_node():
        raise ProxyInstallError(f"JupyterHub's proxy needs {' and '.join(missing_node())} "
                                "(apt-get install nodejs npm), to install configurable-http-proxy from npm")
    prefix = node_prefix()
    prefix.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                           PROXY_PACKAGE], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not program.exists():
        raise ProxyInstallError(f"npm install {PROXY_PACKAGE} into {prefix} failed ({proc.returncode}): "
                                f"{proc.stderr.strip()[-2000:]}")
    return program


def main() -> int:
    """`python -m labsupport.hub.proxy_install`: install the proxy, print where it is."""
    print(ensure_proxy())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
