"""`make lab`: JupyterLab as a student meets it — the lessons, without the instructor's grading tools or pop-ups.

JupyterLab gets a configuration directory of its own (on `JUPYTER_CONFIG_PATH`, so the user's own settings still
win) that turns off nbgrader's instructor tools (the create-assignment toolbar and the formgrader), and the
assignment and course lists too when there is no exchange to list (they would only say "Error fetching courses!").
Validate stays. News and update checks are off, so no pop-up covers the picture. Widget state is saved with the
notebook, so a saved lesson reopened without its kernel still shows its live picture as it last was (not "Error
displaying widget: model not found"). As root — common in containers
and VMs — it starts anyway (`--allow-root`) and says so. A terminal opened in it has the project's kubectl and
`labsupport` first on PATH and a KUBECONFIG every notebook's lab adds itself to (`labsupport.shared_kubeconfig`),
so `kubectl get pods -w` there watches the notebook's cluster.

>>> sorted(disabled_plugins(exchange=False))[:2]
['@jupyter/nbgrader:assignment-list', '@jupyter/nbgrader:course-list']
>>> "@jupyter/nbgrader:assignment-list" in disabled_plugins(exchange=True)
False
"""
from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

from labsupport import shared_kubeconfig
from labsupport.i18n import tr

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


def has_exchange() -> bool:
    """Whether there is an exchange to list: a class's exchange service (LABSUPPORT_EXCHANGE_URL) or the folder."""
    return bool(os.environ.get("LABSUPPORT_EXCHANGE_URL")) or exchange_folder().is_dir()


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
    server = {"jpserver_extensions": {name: False for name in off},
              "terminado_settings": {"shell_command": terminal_command(write_terminal_rc(directory))}}
    (directory / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": server}, indent=1))
    (directory / "nbgrader_config.py").write_text(NBGRADER_CONFIG)
    return directory


#: nbgrader's settings for Validate (the button, or `nbgrader validate` in a terminal; a course folder's own
#: nbgrader_config.py still wins): its kernel talks over unix sockets, so it has no "running over TCP without
#: encryption" warning to print. Where a class's exchange service is named (LABSUPPORT_EXCHANGE_URL, and the course
#: in LABSUPPORT_COURSE_ID: a server KubeSpawner started), fetch, submit and feedback go through it.
NBGRADER_CONFIG = """\
import os
c = get_config()  # noqa: F821 - provided by nbgrader
c.Execute.kernel_manager_class = "labsupport.grading.execute.SandboxedKernelManager"
if os.environ.get("LABSUPPORT_EXCHANGE_URL"):
    from labsupport.grading.exchange_client import configure_service_exchange
    configure_service_exchange(c)
if os.environ.get("LABSUPPORT_COURSE_ID"):
    c.CourseDirectory.course_id = os.environ["LABSUPPORT_COURSE_ID"]
"""


def tools_dir() -> str:
    """The folder of this Python: the project's kubectl and the `labsupport` command are there."""
    return os.path.dirname(os.path.abspath(sys.executable))


def write_terminal_rc(directory: pathlib.Path) -> pathlib.Path:
    """The start-up file of a terminal: the machine's and the student's own shell set-up first (as a login shell
    reads it), then the project's tools put first on PATH again, since /etc/profile may have reset it, and the
    labs' shared kubeconfig put ahead of any KUBECONFIG (only there: a kernel's own kube backend keeps the user's)."""
    rc = directory / "terminal.rc"
    hint = shlex.quote(no_lab_hint())
    rc.write_text("# a terminal of make lab: the shell's usual start-up, then the lab's tools first on PATH\n"
                  "[ -r /etc/profile ] && . /etc/profile\n"
                  '[ -n "$BASH_VERSION" ] && [ -r "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n'
                  f"PATH={shlex.quote(tools_dir())}:\"$PATH\"; export PATH\n"
                  f'KUBECONFIG="${shared_kubeconfig.ENV}${{KUBECONFIG:+:$KUBECONFIG}}"; export KUBECONFIG\n'
                  "# with no lab running (no current context) kubectl would try localhost:8080 and print five lines\n"
                  "# of connection errors: say what to do instead\n"
                  "kubectl() {\n"
                  '    case "$1" in config|completion|help|plugin|version|--help|-h|"")\n'
                  '        command kubectl "$@"; return;;\n'
                  "    esac\n"
                  "    command kubectl config current-context >/dev/null 2>&1 ||\n"
                  f"        {{ printf '%s\\n' {hint} >&2; return 1; }}\n"
                  '    command kubectl "$@"\n'
                  "}\n"
                  f"command kubectl config current-context >/dev/null 2>&1 || printf '%s\\n' {hint}\n")
    return rc


def no_lab_hint() -> str:
    """What a terminal says when no notebook's lab is running for its kubectl to reach."""
    return tr("kubectl: no lesson's lab is running yet. Run a lesson's first cell: each running lab is a kubectl "
              "context named after its notebook (kubectl config get-contexts lists them).")


def terminal_command(rc: pathlib.Path) -> list[str]:
    """How JupyterLab starts a terminal: an interactive bash reading `rc` (sh with ENV=rc where bash is missing)."""
    bash = shutil.which("bash")
    return [bash, "--rcfile", str(rc), "-i"] if bash else ["/usr/bin/env", f"ENV={rc}", "sh", "-i"]


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


def environment(config: pathlib.Path, base: dict | None = None, root: str | None = None) -> dict:
    """The environment JupyterLab runs in: our configuration directory added after the user's own; the project's
    kubectl and `labsupport` first on PATH; the kubeconfig every lab started in a notebook adds itself to (its
    terminals put it on KUBECONFIG, so that their kubectl reaches those labs), and the folder served (`root`), below
    which a notebook's path names its lab's context."""
    env = dict(os.environ if base is None else base)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (env.get("JUPYTER_CONFIG_PATH"), str(config)) if p)
    env["PATH"] = os.pathsep.join(p for p in (tools_dir(), env.get("PATH")) if p)
    env[shared_kubeconfig.ENV] = str(config / "kubeconfig")
    env[shared_kubeconfig.ROOT_ENV] = os.path.abspath(root or os.getcwd())
    return env


def served_folder(arguments: list[str]) -> str:
    """The folder JupyterLab serves, as its command line names it (`--notebook-dir`, `--ServerApp.root_dir`), else
    the current one."""
    names = ("--notebook-dir", "--ServerApp.root_dir", "--ServerApp.notebook_dir", "--NotebookApp.notebook_dir")
    folder = os.getcwd()
    for i, argument in enumerate(arguments):
        name, equals, value = argument.partition("=")
        if name in names:
            folder = value if equals else (arguments[i + 1] if i + 1 < len(arguments) else folder)
    return os.path.abspath(folder)


def main(argv: list[str] | None = None) -> int:
    """Start the student's JupyterLab with the given `jupyter lab` arguments; returns its exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    exchange = has_exchange()
    if root:
        print("make lab: running as root (usual in containers and VMs), so JupyterLab starts with --allow-root",
              file=sys.stderr)
    if not exchange:
        print(f"make lab: no nbgrader exchange at {exchange_folder()}: the assignment list is off "
              f"(open the assignment's notebook from the file browser; Validate still works)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="labsupport-jupyter-") as directory:
        config = write_config(pathlib.Path(directory), exchange)
        shared_kubeconfig.write_empty(str(config / "kubeconfig"))
        settings = write_settings(pathlib.Path(directory) / "settings", default_settings_dir())
        server = subprocess.Popen(command(arguments, root=root, settings=settings, hub=spawned_by_hub()),
                                  env=environment(config, root=served_folder(arguments)))
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
