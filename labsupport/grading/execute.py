"""nbgrader's Execute step, made so that the marks are decided where the student's code cannot reach.

For each notebook: a lab server (the graded `sim` cluster) starts outside the sandbox, in a private folder with
limits of its own; the kernel starts inside the sandbox (`SandboxedKernelManager`) with `Lab()` pointed at the
server's student socket. The student's cells run in the kernel. A graded test cell never does, not even its visible
part: the grader fetches the answers the test reads from the kernel as plain data and runs the whole test source
itself against the cluster (`labsupport.grading.rerun`), so no hidden test, expected value or check ever reaches
the student's code. The cell's outputs are that run's: its score is the grader's verdict.

A cell that outlives its time limit is interrupted; a kernel that ignores the interrupt is killed, and so are the
kernel and the lab server when the notebook outlives its whole limit; every request the grader makes has a time
limit, so grading goes on, and the tests still to come are graded on what the cluster holds.
"""
from __future__ import annotations

import ast
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

import zmq
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_async, run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, Unicode

from labsupport.errors import LabError
from labsupport.grading import answers, rerun
from labsupport.grading.rerun import graded_task
from labsupport.grading.rerun_process import RerunProcess, Settings
from labsupport.i18n import VARIABLE as LANGUAGE_ENV
from labsupport.i18n import translate
from labsupport.grading.sandbox import Limits, Sandbox, opted_out, require, socket_base
from labsupport.remote import SOCKET_ENV
from labsupport.remote.client import RemoteBackend

#: Environment variables a sandboxed kernel keeps from the grader's (after the grading config's pinning).
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LABSUPPORT_BACKEND", "PYDEVD_DISABLE_FILE_VALIDATION",
            "LABSUPPORT_STUDENT", "LABSUPPORT_COURSE_ID", "LABSUPPORT_LANG")


class SandboxedKernelManager(AsyncKernelManager):
    """Starts the kernel inside a `Sandbox` (when one is set), talking over `ipc` sockets in its run folder."""

    sandbox: Sandbox | None = None
    lab_socket: str | None = None
    kernel_pid: int | None = None
    #: The largest message the grader's clients take from the kernel, in bytes (None: no limit). A larger one closes
    #: the socket it came on for good (zmq's MAXMSGSIZE): the grader never holds it.
    max_message: int | None = None
    #: Milliseconds a send to the kernel may wait (a socket closed by an oversized message would wait for ever).
    send_timeout = 30_000

    async def start_kernel(self, **kw: Any) -> None:
        """Start the kernel confined, with a small environment and the lab server's socket."""
        env = dict(kw.get("env") or os.environ)
        if self.lab_socket:
            env[SOCKET_ENV] = self.lab_socket
        if self.sandbox is not None:
            self.transport = "ipc"
            self.ip = str(self.sandbox.run / "kernel")
            self.connection_file = str(self.sandbox.run / "kernel.json")
            self.kernel_spec.interrupt_mode = "message"     # signals do not cross the sandbox's session
            env = {k: v for k, v in env.items() if k in KEPT_ENV or k == SOCKET_ENV}
            env.update(HOME="/tmp", IPYTHONDIR="/tmp/.ipython", JUPYTER_RUNTIME_DIR="/tmp/.jupyter",
                       MPLCONFIGDIR="/tmp/.matplotlib", PYTHONDONTWRITEBYTECODE="1")
            kw["cwd"] = str(self.sandbox.root)        # bubblewrap then enters the working directory inside
        elif self.transport == "tcp":
            # Validate's kernel, on this machine: unix sockets, so nothing listens on the network (and the kernel
            # has no "running over TCP without encryption" warning to print). They go when the kernel shuts down.
            self.transport = "ipc"
            self.ip = os.path.join(tempfile.gettempdir(), f"labsupport-kernel-{uuid.uuid4().hex[:16]}-ipc")
        kw["env"] = env
        await super().start_kernel(**kw)
        self.kernel_pid = getattr(self.provisioner, "pid", None)

    def client(self, **kw: Any):
        """A client of this kernel whose sockets refuse any message over `max_message` bytes and give up a send
        after `send_timeout`."""
        kc = super().client(**kw)
        if self.max_message:
            kc.context.setsockopt(zmq.MAXMSGSIZE, self.max_message)
            kc.context.setsockopt(zmq.SNDTIMEO, self.send_timeout)
        return kc

    def write_connection_file(self, **kw: Any) -> None:
        """Write the kernel's connection file, readable by the sandbox's own uid."""
        super().write_connection_file(**kw)
        if self.sandbox is not None:
            self.sandbox.give(self.connection_file)


    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        """The kernel's command, wrapped by the sandbox."""
        cmd = super().format_kernel_cmd(extra_arguments)
        return self.sandbox.wrap(cmd) if self.sandbox is not None else cmd


#: Environment variables the lab server keeps from the grader's (it runs nothing the student typed).
SERVER_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "LABSUPPORT_LANG")
#: Seconds one request of the grader's to the lab server may take before the test that made it fails.
CALL_TIMEOUT = 60.0


class LabServerProcess:
    """A lab server for one submission, in its own process, its own private folder (its working directory and
    TMPDIR, never the course's) and its own limits; it ends when its stdin closes."""

    def __init__(self, student_socket: str, *, seed: int, proxy_mode: str, limits: Limits | None = None,
                 student_uid: int | None = None, cpu_seconds: int = 3600, language: str = ""):
        self.private = tempfile.mkdtemp(prefix="labsupport-grader-", dir=socket_base())
        os.chmod(self.private, 0o700)
        self.grader_socket = os.path.join(self.private, "grader.sock")
        self.student_socket = student_socket
        limits = limits or Limits.from_env()
        env = {k: v for k, v in os.environ.items() if k in SERVER_ENV}
        env.update(TMPDIR=self.private, HOME=self.private, PYTHONDONTWRITEBYTECODE="1")
        if language:        # what the server says to the student's kernel (the Lab's card, refusals): the course's
            env[LANGUAGE_ENV] = language
        argv = [sys.executable, "-m", "labsupport.remote.server", "--student", student_socket,
                "--grader", self.grader_socket, "--seed", str(seed), "--proxy-mode", proxy_mode]
        if student_uid is not None:
            argv += ["--student-uid", str(student_uid)]

        def confine() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=self.private, env=env, preexec_fn=confine)
        if (self.process.stdout.readline() or "").strip() != "ready":
            self.stop()
            raise LabError("the lab server did not start: see the messages above")
        self.grader = RemoteBackend(self.grader_socket, hello=False, timeout=CALL_TIMEOUT)

    def kill(self) -> None:
        """End the server at once (the notebook's time is up)."""
        try:
            self.process.kill()
        except OSError:
            pass

    def stop(self) -> None:
        """Stop the server and remove its folder and sockets."""
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.private, ignore_errors=True)


def is_test_cell(cell: NotebookNode) -> bool:
    """A graded code cell that is not the student's (nbgrader's autograded tests)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


class GradedExecute(Execute):
    """nbgrader's Execute, with a sandboxed kernel, the cluster in a lab server, and marks from the grader."""

    notebook_timeout = Integer(1800, help="Seconds a whole notebook may run before its kernel is killed.").tag(
        config=True)
    kill_after = Integer(10, help="Seconds an interrupted cell has to stop before its kernel is killed.").tag(
        config=True)
    max_output = Integer(200_000, help="Characters of output one cell keeps; the rest is cut.").tag(config=True)
    max_message = Integer(16 * 2**20, help="Bytes one message from the kernel may hold (its answers among them); a "
                                           "larger one is dropped on the wire.").tag(config=True)
    seed = Integer(0, help="The graded cluster's seed.").tag(config=True)
    proxy_mode = Unicode("iptables", help="The graded cluster's kube-proxy mode at start.").tag(config=True)
    sandboxed = Bool(True, help="Run kernels in the sandbox (LABSUPPORT_GRADING_SANDBOX=off turns it off).").tag(
        config=True)
    language = Unicode("", help="The language of the grader's messages (LABSUPPORT_LANG while a test runs again; "
                                "empty: the grader's own).").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None):
        """Execute one notebook: server up, sandbox up, every cell, the grader's verdict on every test."""
        sandboxed = self.sandboxed and not opted_out()
        if sandboxed:
            require()
        path = (resources or {}).get("metadata", {}).get("path") or os.getcwd()
        self._task = graded_task(path)
        self._sandbox = Sandbox(path) if sandboxed else None
        self._scratch = None if sandboxed else tempfile.mkdtemp(prefix="labsupport-grader-", dir=socket_base())
        socket_dir = str(self._sandbox.run) if sandboxed else self._scratch
        self._dead = ""
        self._cut: set[int] = set()
        self._server = None
        self._rerun = None
        self._watchdog = None
        try:
            limits = Limits.from_env()
            self._server = LabServerProcess(
                os.path.join(socket_dir, "lab.sock"), seed=self.seed, proxy_mode=self.proxy_mode, limits=limits,
                student_uid=self._sandbox.uid if self._sandbox is not None else None,
                cpu_seconds=self.notebook_timeout, language=self.language)
            modules = rerun.imported_modules(cell.source for cell in nb.cells
                                             if cell.cell_type == "code" and is_locked(cell))
            # the tests run again in a child of the grader's with the kernel's memory limit (their answers are the
            # student's), started now so that its imports overlap with the kernel's start
            self._rerun = RerunProcess(Settings(
                socket_path=self._server.grader_socket, grader_socket=self._server.grader_socket, seed=self.seed,
                proxy_mode=self.proxy_mode, language=self.language or None, modules=sorted(modules),
                task_path=path if self._task is not None else None, call_timeout=CALL_TIMEOUT,
                max_output=self.max_output), memory=limits.memory, cpu_seconds=self.notebook_timeout,
                folder=self._server.private)
            return super().preprocess(nb, resources, km)
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
            if self._rerun is not None:
                self._rerun.close()
            if self._server is not None:
                self._server.stop()
            if self._sandbox is not None:
                self._sandbox.close()
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)

    def create_kernel_manager(self):
        """The kernel manager, told about this notebook's sandbox and lab server."""
        km = super().create_kernel_manager()
        if not isinstance(km, SandboxedKernelManager):
            raise LabError(f"c.Execute.kernel_manager_class must be a SandboxedKernelManager, not "
                           f"{type(km).__name__} (see labsupport/grading/course_config.py)")
        km.sandbox = self._sandbox
        km.lab_socket = self._server.student_socket
        # every socket of the grader's client drops a message larger than max_message (the kernel's answers, an
        # output): the grader never holds more of what the kernel says than that at once
        km.max_message = self.max_message
        self._watchdog = threading.Timer(self.notebook_timeout, self._kill,
                                         args=(self.tr("the notebook ran longer than {seconds} s",
                                                         seconds=self.notebook_timeout),),
                                         kwargs={"server": True})
        self._watchdog.daemon = True
        self._watchdog.start()
        return km

    def tr(self, text: str, /, **values: Any) -> str:
        """A note of the grader's in the course's language (the grader's own when the course sets none)."""
        with rerun.environment(**{LANGUAGE_ENV: self.language or os.environ.get(LANGUAGE_ENV)}):
            return translate(text).format(**values)

    # --- the kernel's end ----------------------------------------------------------------------------------
    def _kill(self, why: str, *, server: bool = False) -> None:
        """Kill the kernel and everything in its sandbox (and the lab server, when the notebook's time is up)."""
        self._dead = self._dead or why
        if server and self._server is not None:
            self._server.kill()
        if server and self._rerun is not None:
            self._rerun.stop()
        pid = getattr(self.km, "kernel_pid", None)
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    async def _async_responsive(self, seconds: float) -> bool:
        """Whether the kernel answers a kernel_info request within `seconds`."""
        try:
            msg_id = await ensure_async(self.kc.kernel_info())
        except zmq.ZMQError:                # the shell socket is closed (an oversized message): no answer
            return False
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=max(0.1, deadline - time.monotonic())))
            except Exception:
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return True
        return False

    async def _async_fetch(self, names: list[str], seconds: float) -> str | None:
        """The answers `names` as the kernel dumps them (None: the kernel did not say, or said more than
        `max_message` bytes), through a client of its own that is closed afterwards, so an oversized answer closes
        no socket the notebook still needs."""
        if not names:
            return "{}"
        # a session of its own: a client with the notebook client's session id would take over its shell socket's
        # identity at the kernel, which then replies to the wrong socket
        session = self.km.session.clone()
        session.session = uuid.uuid4().hex
        client = self.km.client(session=session)
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            return await self._async_fetch_with(client, names, seconds)
        except zmq.ZMQError:
            return None
        finally:
            client.stop_channels()
            client.context.destroy(linger=0)

    async def _async_fetch_with(self, client: Any, names: list[str], seconds: float) -> str | None:
        msg_id = await ensure_async(client.execute("", silent=True, store_history=False,
                                                   user_expressions={"answers": answers.expression(names)}))
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                msg = await ensure_async(client.shell_channel.get_msg(timeout=max(0.1, deadline - time.monotonic())))
            except Exception:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            result = (msg["content"].get("user_expressions") or {}).get("answers") or {}
            text = (result.get("data") or {}).get("text/plain")
            if result.get("status") != "ok" or not isinstance(text, str):
                return None
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return None
            return value if isinstance(value, str) else None
        return None

    responsive = run_sync(_async_responsive)
    fetch = run_sync(_async_fetch)

    # --- cells ---------------------------------------------------------------------------------------------
    def output(self, outs, msg, display_id, cell_index):
        """Keep at most `max_output` characters of one cell's output; say where it was cut."""
        if cell_index in self._cut:
            return None
        out = super().output(outs, msg, display_id, cell_index)
        size = sum(len(str(o.get("text", ""))) + len(str(o.get("data", ""))) for o in outs)
        if size > self.max_output and outs:
            self._cut.add(cell_index)
            last = outs[-1]
            if isinstance(last.get("text"), str):
                last["text"] = last["text"][:max(0, len(last["text"]) - (size - self.max_output))]
            else:
                outs.pop()
            outs.append(NotebookNode(output_type="stream", name="stdout",
                                     text="\n" + self.tr("[output cut: more than {count} characters]",
                                                            count=self.max_output) + "\n"))
        return out

    def preprocess_cell(self, cell, resources, index):
        """Run a student's cell in the kernel; grade a test cell in the grader alone."""
        if is_test_cell(cell):
            self._grade(cell)
            return cell, resources
        if not self._dead and cell.cell_type == "code":
            try:
                cell, resources = super().preprocess_cell(cell, resources, index)
            except DeadKernelError:
                self._dead = self._dead or self.tr("the kernel stopped (it crashed or was killed)")
            except zmq.ZMQError:       # a socket to the kernel closed on a message over max_message
                self._kill(self.tr("the kernel sent a message larger than {mib} MiB",
                                   mib=self.max_message // 2**20))
            except CellTimeoutError as e:     # no reply even after the interrupt
                cell.setdefault("outputs", []).append(NotebookNode(
                    output_type="error", ename="CellTimeoutError", evalue=str(e).splitlines()[0],
                    traceback=[f"CellTimeoutError: {str(e).splitlines()[0]}"]))
            if not self._dead and any(o.get("output_type") == "error" and o.get("ename") == "CellTimeoutError"
                                      for o in cell.get("outputs", [])):
                if not self.responsive(self.kill_after):
                    self._kill(self.tr("a cell ignored the interrupt after its time limit"))
        if self._dead and cell.cell_type == "code" and not cell.get("outputs"):
            cell.outputs = [NotebookNode(output_type="stream", name="stdout",
                                         text=self.tr("(not run: {why})", why=self._dead) + "\n")]
        return cell, resources

    def _grade(self, cell: NotebookNode) -> None:
        """The grader's run of a test cell decides its outputs (and so its score)."""
        source = cell.source
        try:
            names = [n for n in rerun.free_names(source) if n not in self._rerun.bound]
        except SyntaxError:
            names = []
        text = None if self._dead else self.fetch(names, self.kill_after)
        missing = self._dead or ("" if text is not None else self.tr(
            "the kernel did not hand over the answers (within {seconds} s, and at most {mib} MiB of them)",
            seconds=self.kill_after, mib=self.max_message // 2**20))
        seconds = 2 * max(self.timeout_func(cell) if self.timeout_func else self.timeout or 60, CALL_TIMEOUT)
        outcome = self._rerun.run(source, names, text, missing=missing, seconds=seconds, message=self.tr(
            "the grader's run of this test went past its limits ({seconds} s, {mib} MiB): the answers it reads are "
            "too large or too slow to check", seconds=seconds, mib=Limits.from_env().memory // 2**20))
        outputs = []
        if outcome.stdout:
            outputs.append(NotebookNode(output_type="stream", name="stdout", text=outcome.stdout))
        if not outcome.passed:
            outputs.append(NotebookNode(output_type="error", ename=outcome.ename, evalue=outcome.evalue,
                                        traceback=outcome.traceback))
        cell.outputs = outputs


def is_locked(cell: NotebookNode) -> bool:
    """A cell the student cannot change (nbgrader restores it from the gradebook before grading)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("locked") or meta.get("grade")) and not meta.get("solution")


__all__ = ["GradedExecute", "SandboxedKernelManager", "LabServerProcess", "is_test_cell", "is_locked", "KEPT_ENV",
           "CALL_TIMEOUT"]
