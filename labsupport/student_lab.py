"""`make lab`: JupyterLab as a student meets it — the lessons, without the instructor's grading tools or pop-ups.

JupyterLab gets a configuration directory of its own (on `JUPYTER_CONFIG_PATH`, so the user's own settings still
win) that turns off nbgrader's instructor tools (the create-assignment toolbar and the formgrader), and the
assignment and course lists too when there is no exchange to list (they would only say "Error fetching courses!").
Validate stays. News and update checks are off, so no pop-up covers the picture. Widget state is saved with the
notebook, so a saved lesson reopened without its kernel still shows its live picture as it last was (not "Error
displaying widget: model not found"). As root — common in containers
and VMs — it starts anyway (`--allow-root`) and says so.

>>> sorted(disabled_plugins(exchange=False))[:2]
['@jupyter/nbgrader:assignment-list', '@jupyter/nbgrader:course-list']
>>> "@jupyter/nbgrader:assignment-list" in disabled_plugins(exchange=True)
False
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile

#: nbgrader's instructor tools, never shown to a student.
INSTRUCTOR_PLUGINS = ("@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader")
INSTRUCTOR_SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader",)
#: What only works with an exchange folder to fetch from and submit to.
EXCHANGE_PLUGINS = ("@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:menu")
EXCHANGE_SERVER_EXTENSIONS = ("nbgrader.server_extensions.assignment_list", "nbgrader.server_extensions.course_list")
#: JupyterLab's news and update announcements: their first question ("Would you like to get notified about
#: official Jupyter news?") would cover the picture.
ANNOUNCEMENT_PLUGINS = ("@jupyterlab/apputils-extension:announcements",)
#: nbgrader's default exchange folder; LABSUPPORT_EXCHANGE names another.
DEFAULT_EXCHANGE = "/srv/nbgrader/exchange"


def exchange_folder() -> pathlib.Path:
    """The exchange folder assignments are fetched from (it may not exist: a laptop has none)."""
    return pathlib.Path(os.environ.get("LABSUPPORT_EXCHANGE", DEFAULT_EXCHANGE))


def disabled_plugins(exchange: bool) -> list[str]:
    """The JupyterLab plugins a student does not get."""
    return list(ANNOUNCEMENT_PLUGINS + INSTRUCTOR_PLUGINS) + ([] if exchange else list(EXCHANGE_PLUGINS))


#: JupyterLab settings the student starts with (their own changes still apply on top).
SETTINGS = {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}


def write_settings(directory: pathlib.Path, defaults: pathlib.Path | None = None) -> pathlib.Path:
    """JupyterLab's application settings directory: what `defaults` held, plus SETTINGS; returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    overrides: dict = {}
    if defaults is not None and defaults.is_dir():
        for item in defaults.iterdir():
            if item.is_file():
                shutil.copy(item, directory / item.name)
        if (defaults / "overrides.json").is_file():
            overrides = json.loads((defaults / "overrides.json").read_text() or "{}")
    for plugin, values in SETTINGS.items():
        overrides.setdefault(plugin, {}).update(values)
    (directory / "overrides.json").write_text(json.dumps(overrides, indent=1))
    return directory


def default_settings_dir() -> pathlib.Path | None:
    """The settings directory JupyterLab would use on its own (`<app dir>/settings`)."""
    try:
        from jupyterlab.commands import get_app_dir
    except ImportError:
        return None
    return pathlib.Path(get_app_dir()) / "settings"


def write_config(directory: pathlib.Path, exchange: bool) -> pathlib.Path:
    """Write the student's JupyterLab configuration into `directory`; returns it."""
    (directory / "labconfig").mkdir(parents=True, exist_ok=True)
    (directory / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {name: True for name in disabled_plugins(exchange)}}, indent=1))
    off = list(INSTRUCTOR_SERVER_EXTENSIONS) + ([] if exchange else list(EXCHANGE_SERVER_EXTENSIONS))
    (directory / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {name: False for name in off}}}, indent=1))
    return directory


def spawned_by_hub(env: dict | None = None) -> bool:
    """Whether JupyterHub started this server (it passes the server's API token in the environment)."""
    return bool((os.environ if env is None else env).get("JUPYTERHUB_API_TOKEN"))


def command(arguments: list[str], *, root: bool, settings: pathlib.Path | None = None,
            hub: bool = False) -> list[str]:
    """The `jupyter lab` command line (JupyterHub's single-user JupyterLab when a hub spawned it): news and update
    checks off, `--allow-root` when running as root."""
    app = "jupyterhub.singleuser" if hub else "jupyterlab"
    argv = [sys.executable, "-m", app, "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if settings is not None:
        argv.append(f"--LabApp.app_settings_dir={settings}")
    if root and "--allow-root" not in arguments:
        argv.append("--allow-root")
    return argv + list(arguments)


def environment(config: pathlib.Path, base: dict | None = None) -> dict:
    """The environment JupyterLab runs in: our configuration directory added after the user's own."""
    env = dict(os.environ if base is None else base)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (env.get("JUPYTER_CONFIG_PATH"), str(config)) if p)
    return env


def main(argv: list[str] | None = None) -> int:
    """Start the student's JupyterLab with the given `jupyter lab` arguments; returns its exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    exchange = exchange_folder().is_dir()
    if root:
        print("make lab: running as root (usual in containers and VMs), so JupyterLab starts with --allow-root",
              file=sys.stderr)
    if not exchange:
        print(f"make lab: no nbgrader exchange at {exchange_folder()}: the assignment list is off "
              f"(open the assignment's notebook from the file browser; Validate still works)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="labsupport-jupyter-") as directory:
        config = write_config(pathlib.Path(directory), exchange)
        settings = write_settings(pathlib.Path(directory) / "settings", default_settings_dir())
        server = subprocess.Popen(command(arguments, root=root, settings=settings, hub=spawned_by_hub()),
                                  env=environment(config))
        # A hub stops a server with SIGTERM to this process: pass it on, so JupyterLab is not left running.
        signal.signal(signal.SIGTERM, lambda signum, frame: server.send_signal(signum))
        try:
            return server.wait()
        except KeyboardInterrupt:
            server.kill()
            server.wait()
            return 130


if __name__ == "__main__":
    sys.exit(main())
