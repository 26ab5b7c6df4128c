"""What runs in a pod: recognised by image repository (any tag) and arguments, behaving like the real image.

`nginx` serves HTTP on 80; `registry.k8s.io/e2e-test-images/agnhost` with `netexec` serves `/clientip` and
`/hostname`; `registry.k8s.io/echoserver` echoes the request; `coredns` answers DNS on 53; `jessie-dnsutils` and
`busybox` run their command and exit when it ends; an image the lab does not know runs and listens on nothing.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from labsupport.apps import container as _container
from labsupport.apps.commands import BUILTINS
from labsupport.apps.container import ClusterDNS
from labsupport.apps.images import coredns_start_lines, image_for, netexec_start_lines, nginx_start_lines
from labsupport.apps.loops import endless_loop
from labsupport.apps.shell import Shell

__all__ = ["App", "AppEnv", "HttpResponse", "ExecResult", "NOT_STARTED", "app_for", "image_repository"]

#: The exit code of an exec whose program the runtime could not start (not in the image).
NOT_STARTED = 126


@dataclass
class HttpResponse:
    """What an app answers to one HTTP request."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ExecResult:
    """The outcome of a command run in a container: exit code and output."""

    code: int
    stdout: str = ""
    stderr: str = ""


class AppEnv(Protocol):
    """What the cluster offers an app: its clock, DNS and the network, seen from the pod, and what the kubelet
    knows when the container starts (the pod's IP, the Services that exist, the cluster DNS)."""

    def now(self) -> float: ...

    def nslookup(self, name: str) -> Any: ...

    def fetch(self, url: str) -> Any: ...

    def pod_ip(self) -> str | None: ...

    def services(self) -> list[dict]: ...

    def cluster_dns(self) -> ClusterDNS: ...

    def after(self, seconds: float, callback: Callable[[], None]) -> Any: ...

    def is_current(self, app: "App") -> bool: ...


def image_repository(image: str) -> str:
    """`registry.k8s.io/e2e-test-images/agnhost:2.53` → `registry.k8s.io/e2e-test-images/agnhost`."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/library/"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name


def _flag(args: list[str], name: str, default: str | None = None) -> str | None:
    for i, a in enumerate(args):
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
        if a == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
    return default


class App:
    """A container's process. Subclasses say what it listens on and how it answers."""

    kind = "unknown"
    long_running = True
    interactive = False

    def __init__(self, pod: dict, container: dict, env: AppEnv | None = None):
        self.pod = pod
        self.container = container
        self.env = env
        self.argv: list[str] = list(container.get("command") or []) + list(container.get("args") or [])
        self.log: list[str] = []
        self.running = True
        self.image = image_for(image_repository(container.get("image", "")))
        self.ip = env.pod_ip() if env is not None else None
        dns = env.cluster_dns() if env is not None else ClusterDNS()
        services = env.services() if env is not None else []
        self.started = env.now() if env is not None else 0.0
        self.environ = _container.container_environment(pod, container, services, self.ip, self.image.environment())
        self.files: dict[str, str] = self.image.all_files()
        self.files["/etc/resolv.conf"] = _container.resolv_conf(pod, dns)
        self.files["/etc/hosts"] = _container.hosts_file(pod, self.ip, dns)
        self.files["/etc/hostname"] = self.hostname + "\n"
        self.dirs: set[str] = set(self.image.dirs)
        self.nameserver = next((line.split()[1] for line in self.files["/etc/resolv.conf"].splitlines()
                                if line.startswith("nameserver ")), dns.server)

    @property
    def hostname(self) -> str:
        """The pod's hostname as the container sees it."""
        return _container.hostname(self.pod)

    @property
    def entrypoint(self) -> str:
        """The image's own command, shown by `ps` when the container names none."""
        return self.image.entrypoint

    def binary_path(self, name: str) -> str | None:
        """Where a command lives in this image (`which`); None for a shell builtin or a missing command."""
        if name in BUILTINS or name not in self.image.commands:
            return None
        return f"{self.image.bin_dir}/{name}"

    def shell(self):
        """A new shell process in this container."""
        return Shell(self, self.image.command_table(), self.environ)

    def listens(self) -> set[tuple[str, int]]:
        """The (protocol, port) pairs this process accepts connections on."""
        return set()

    def http(self, method: str, path: str, peer: tuple[str, int], port: int,
             headers: dict[str, str] | None = None) -> HttpResponse | None:
        """Answer one HTTP request that reached `port` from `peer`; None if this port speaks no HTTP."""
        return None

    def udp(self, port: int, payload: bytes, peer: tuple[str, int]) -> bytes | None:
        """Answer one UDP datagram; None for no answer."""
        return None

    def exec(self, argv: list[str], stdin: str = "") -> ExecResult:
        """Run a command inside the container (kubectl exec, exec probes), as the runtime starts it: the first
        word must be a program of the image."""
        return run_shell_command(self, argv, stdin)

    def run_command(self) -> tuple[int, str, float] | None:
        """For run-to-completion images: (exit code, output, seconds it takes); None for servers."""
        return None

    def access_log(self, peer: tuple[str, int], method: str, path: str, status: int, size: int,
                   agent: str = "curl/8.11.1") -> None:
        """Append one line in nginx's combined log format."""
        from datetime import datetime, timezone
        now = self.env.now() if self.env else 0.0
        stamp = datetime.fromtimestamp(now, tz=timezone.utc).strftime("%d/%b/%Y:%H:%M:%S +0000")
        self.log.append(f'{peer[0]} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size} "-" "{agent}" "-"')


NGINX_INDEX = """<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>

<p>For online documentation and support please refer to
<a href="http://nginx.org/">nginx.org</a>.<br/>
Commercial support is available at
<a href="http://nginx.com/">nginx.com</a>.</p>

<p><em>Thank you for using nginx.</em></p>
</body>
</html>
"""
NGINX_ROOT = "/usr/share/nginx/html"
NGINX_50X = """<!DOCTYPE html>
<html>
<head>
<title>Error</title>
<style>
html { color-scheme: light dark; }
body { width: 35em; margin: 0 auto;
font-family: Tahoma, Verdana, Arial, sans-serif; }
</style>
</head>
<body>
<h1>An error occurred.</h1>
<p>Sorry, the page you are looking for is currently unavailable.<br/>
Please try again later.</p>
<p>If you are the system administrator of this resource then you should check
the error log for details.</p>
<p><em>Faithfully yours, nginx.</em></p>
</body>
</html>
"""


class Nginx(App):
    """nginx: static files from /usr/share/nginx/html on port 80, a 403 for a directory without index.html."""

    kind = "nginx"

    def __init__(self, pod, container, env=None):
        super().__init__(pod, container, env)
        self.files.update({f"{NGINX_ROOT}/index.html": NGINX_INDEX, f"{NGINX_ROOT}/50x.html": NGINX_50X})
        self.log += nginx_start_lines(self.started)

    def listens(self):
        return {("TCP", 80)}

    def http(self, method, path, peer, port, headers=None):
        if port != 80:
            return None
        clean = path.split("?", 1)[0]
        target = f"{NGINX_ROOT}{clean}"
        if clean.endswith("/"):
            target += "index.html"
        if target in self.files:
            resp = HttpResponse(200, self.files[target], {"Server": "nginx/1.27.3", "Content-Type": "text/html"})
        elif clean.endswith("/"):
            resp = HttpResponse(403, _nginx_error(403, "Forbidden"), {"Server": "nginx/1.27.3"})
        else:
            resp = HttpResponse(404, _nginx_error(404, "Not Found"), {"Server": "nginx/1.27.3"})
        self.access_log(peer, method, path, resp.status, len(resp.body),
                        (headers or {}).get("User-Agent", "curl/8.11.1"))
        return resp


def _nginx_error(code: int, text: str) -> str:
    return (f"<html>\r\n<head><title>{code} {text}</title></head>\r\n<body>\r\n<center><h1>{code} {text}</h1></center>\r\n"
            "<hr><center>nginx/1.27.3</center>\r\n</body>\r\n</html>\r\n")


class Netexec(App):
    """agnhost netexec: HTTP on --http-port (8080) with /clientip, /hostname, /echo, /healthz; UDP on --udp-port."""

    kind = "agnhost-netexec"

    def __init__(self, pod, container, env=None):
        super().__init__(pod, container, env)
        self.http_port = int(_flag(self.argv, "http-port", "8080"))
        self.udp_port = int(_flag(self.argv, "udp-port", "8081"))
        self.log += netexec_start_lines(self.started, self.http_port, self.udp_port)

    def listens(self):
        ports = {("TCP", self.http_port)}
        if self.udp_port > 0:
            ports.add(("UDP", self.udp_port))
        return ports

    def http(self, method, path, peer, port, headers=None):
        if port != self.http_port:
            return None
        route, _, query = path.partition("?")
        if route == "/clientip":
            return HttpResponse(200, f"{peer[0]}:{peer[1]}")
        if route == "/hostname":
            return HttpResponse(200, self.hostname)
        if route == "/echo":
            params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
            return HttpResponse(200, params.get("msg", ""))
        if route in ("/healthz", "/healthz/"):
            return HttpResponse(200, "ok")
        if route in ("/", ""):
            from datetime import datetime, timezone
            now = self.env.now() if self.env else 0.0
            return HttpResponse(200, "NOW: " + datetime.fromtimestamp(now, tz=timezone.utc).isoformat())
        return HttpResponse(404, "404 page not found\n")

    def udp(self, port, payload, peer):
        if port != self.udp_port:
            return None
        text = payload.decode(errors="replace").strip()
        if text == "hostname":
            return self.hostname.encode()
        if text == "clientip":
            return f"{peer[0]}:{peer[1]}".encode()
        if text.startswith("echo "):
            return text[5:].encode()
        return None


class ServeHostname(App):
    """agnhost serve-hostname: answers its hostname on --port (9376)."""

    kind = "agnhost-serve-hostname"

    def __init__(self, pod, container, env=None):
        super().__init__(pod, container, env)
        self.port = int(_flag(self.argv, "port", "9376"))

    def listens(self):
        return {("TCP", self.port)}

    def http(self, method, path, peer, port, headers=None):
        return HttpResponse(200, self.hostname) if port == self.port else None


class EchoServer(App):
    """registry.k8s.io/echoserver: echoes the request (client address, headers) on 8080."""

    kind = "echoserver"

    def listens(self):
        return {("TCP", 8080)}

    def http(self, method, path, peer, port, headers=None):
        if port != 8080:
            return None
        headers = headers or {}
        lines = [f"\t{k.lower()}={v}" for k, v in sorted(headers.items())]
        body = (f"\n\nHostname: {self.hostname}\n\nPod Information:\n\t-no pod information available-\n\n"
                "Server values:\n\tserver_version=nginx: 1.13.3 - lua: 10008\n\n"
                f"Request Information:\n\tclient_address={peer[0]}\n\tmethod={method}\n\treal path={path.split('?')[0]}\n"
                f"\tquery={path.partition('?')[2]}\n\trequest_version=1.1\n\trequest_scheme=http\n"
                f"\trequest_uri=http://{headers.get('Host', '').rsplit(':', 1)[0]}:8080{path}\n\n"
                "Request Headers:\n" + "\n".join(lines) + "\n\nRequest Body:\n\t-no body in request-\n\n")
        return HttpResponse(200, body)


class CoreDNS(App):
    """CoreDNS: DNS on 53 (UDP and TCP), /health on 8080, /ready on 8181, metrics on 9153."""

    kind = "coredns"

    def __init__(self, pod, container, env=None):
        super().__init__(pod, container, env)
        self.log += coredns_start_lines()

    def listens(self):
        return {("UDP", 53), ("TCP", 53), ("TCP", 8080), ("TCP", 8181), ("TCP", 9153)}

    def http(self, method, path, peer, port, headers=None):
        if port == 8080 and path.startswith("/health"):
            return HttpResponse(200, "OK")
        if port == 8181 and path.startswith("/ready"):
            return HttpResponse(200, "OK")
        if port == 9153:
            return HttpResponse(200, "# HELP coredns_build_info A metric with a constant '1' value\n")
        return None


class CommandRunner(App):
    """busybox / jessie-dnsutils / curl images: run the command, print its output, exit."""

    kind = "command"

    def __init__(self, pod, container, env=None):
        super().__init__(pod, container, env)
        program = (self.argv or [self.image.entrypoint])[0].rsplit("/", 1)[-1]
        #: A shell reading the container's stdin (`kubectl run -it … -- sh`): it runs until someone attaches
        #: and ends it.
        self.interactive = bool(container.get("stdin")) and len(self.argv) <= 1 and program in self.image.shells()
        self.long_running = self.interactive or _is_long_running(self.argv)
        script = self.argv[2] if len(self.argv) >= 3 and self.argv[1] == "-c" and program in self.image.shells() \
            else None
        self.loop = endless_loop(script) if script is not None and env is not None else None
        if self.loop is not None:
            self.long_running = True
            self._loop_shell = self.shell()
            self._print(self._loop_shell.run_script(self.loop.setup))
            env.after(0.0, self._round)

    def _print(self, result) -> None:
        self.log.extend((result.stdout + result.stderr).splitlines())

    def _round(self) -> None:
        """One round of an endless loop, then the next one a round's time later (while this container runs)."""
        if self.env is None or not self.env.is_current(self) or self._loop_shell.exited is not None:
            return
        self._print(self._loop_shell.run_script(self.loop.body))
        self.env.after(self.loop.period, self._round)

    def run_command(self):
        if not self.argv:
            return 0, "", 0.0
        result = run_shell_command(self, self.argv)
        return result.code, result.stdout + result.stderr, _duration(self.argv)


class Unknown(App):
    """An image the lab does not know: it runs and listens on nothing."""

    kind = "unknown"


def _is_long_running(argv: list[str]) -> bool:
    words = _flatten(argv)
    if not words:
        return False
    if words[0] == "sleep":
        return True
    return words[0] in ("tail",) or "infinity" in words


def _duration(argv: list[str]) -> float:
    words = _flatten(argv)
    if words and words[0] == "sleep" and len(words) > 1:
        try:
            return float(words[1])
        except ValueError:
            return float("inf")
    return 0.5


def _flatten(argv: list[str]) -> list[str]:
    if len(argv) >= 3 and argv[0] in ("sh", "/bin/sh", "bash", "/bin/bash") and argv[1] == "-c":
        try:
            return shlex.split(argv[2])
        except ValueError:
            return argv[2].split()
    return list(argv)


def run_shell_command(app: App, argv: list[str], stdin: str = "") -> ExecResult:
    """Run a command as the container runtime starts one: its first word is a program of the image (a missing one
    fails as runc reports it); `sh -c "…"` runs a script through the image's shell."""
    if not argv:
        return ExecResult(0)
    shell = app.shell()
    name = argv[0]
    program = name.rsplit("/", 1)[-1]
    if program not in shell.commands or program in ("cd", "export", "unset", "pwd", "exit", "break", "continue"):
        return ExecResult(NOT_STARTED, f"OCI runtime exec failed: exec failed: unable to start container process: "
                                       f"exec: \"{name}\": executable file not found in $PATH: unknown\r\n", "")
    result = shell.run_argv([program, *argv[1:]], stdin)
    return ExecResult(result.code, result.stdout, result.stderr)


def app_for(pod: dict, container: dict, env: AppEnv | None = None) -> App:
    """The App that this container's image and arguments describe."""
    repo = image_repository(container.get("image", ""))
    argv = list(container.get("command") or []) + list(container.get("args") or [])
    short = repo.rsplit("/", 1)[-1]
    if short == "nginx" or repo.endswith("/nginx"):
        return Nginx(pod, container, env)
    if short == "agnhost":
        if "netexec" in argv:
            return Netexec(pod, container, env)
        if "serve-hostname" in argv:
            return ServeHostname(pod, container, env)
        return CommandRunner(pod, container, env) if argv else Unknown(pod, container, env)
    if short == "echoserver":
        return EchoServer(pod, container, env)
    if short == "coredns":
        return CoreDNS(pod, container, env)
    if short in ("busybox", "jessie-dnsutils", "dnsutils", "curl", "alpine", "netshoot"):
        return CommandRunner(pod, container, env)
    return Unknown(pod, container, env)
