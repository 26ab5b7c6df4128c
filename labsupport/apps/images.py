"""What each image the lab knows contains: its commands, its own files and environment, the lines its process
prints when it starts, and which nslookup it ships (busybox's or BIND's).

A profile is data; `labsupport.apps` gives a container the profile of its image repository.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from labsupport.apps import commands as c

DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUSYBOX_APPLETS = ("cat", "echo", "printf", "env", "printenv", "ls", "head", "tail", "grep", "wc", "sort",
                   "uniq", "cut", "tr", "mkdir", "touch", "rm", "cp", "mv", "sleep", "true", "false", "hostname",
                   "seq", "date", "id", "whoami", "uname", "test", "[", "sh", "ash", "which", "ps", "wget", "nslookup")
COREUTILS = ("cat", "echo", "printf", "env", "printenv", "ls", "head", "tail", "grep", "wc", "sort", "uniq", "cut",
             "seq", "tr", "mkdir", "touch", "rm", "cp", "mv", "sleep", "true", "false", "hostname", "date", "id",
             "whoami", "uname", "test", "[", "sh", "bash", "which")
SHELL_BUILTINS = ("cd", "exit", "export", "unset", "pwd", "break", "continue", ":")


@dataclass(frozen=True)
class Image:
    """The contents of one image: commands on its PATH, files, environment, start-up lines, nslookup flavour."""

    name: str
    commands: tuple[str, ...]
    path: str = DEBIAN_PATH
    bin_dir: str = "/usr/bin"
    nslookup: str | None = None          # "busybox" | "bind" | None (not installed)
    files: dict[str, str] = field(default_factory=dict)
    dirs: tuple[str, ...] = ("/bin", "/dev", "/etc", "/home", "/proc", "/root", "/sys", "/tmp", "/usr", "/var")
    entrypoint: str = ""
    prompt_style: str = "dash"            # "ash" (busybox: `/ # `) | "dash" (`# `)

    def shells(self) -> tuple[str, ...]:
        """The shells this image has."""
        return tuple(name for name in ("sh", "bash", "ash") if name in self.commands)

    def command_table(self) -> dict[str, c.Command]:
        """The commands a shell in this image can run, by name."""
        table = {name: c.COMMON[name] for name in (*self.commands, *SHELL_BUILTINS) if name in c.COMMON}
        extra = {"ps": c.ps, "wget": c.wget, "curl": c.curl}
        for name in self.commands:
            if name in extra:
                table[name] = extra[name]
        if self.nslookup == "busybox":
            table["nslookup"] = c.nslookup_busybox
        elif self.nslookup == "bind":
            table["nslookup"] = c.nslookup_bind
        return table

    def all_files(self) -> dict[str, str]:
        """The image's files, with the accounts every image has."""
        return {"/etc/passwd": PASSWD, "/etc/group": GROUP, **self.files}

    def environment(self) -> dict[str, str]:
        """The image's own environment (PATH first)."""
        return {"PATH": self.path}


PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nnobody:x:65534:\n"
NGINX_CONF = """
user  nginx;
worker_processes  auto;

error_log  /var/log/nginx/error.log notice;
pid        /run/nginx.pid;


events {
    worker_connections  1024;
}


http {
    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';

    access_log  /var/log/nginx/access.log  main;

    sendfile        on;
    #tcp_nopush     on;

    keepalive_timeout  65;

    #gzip  on;

    include /etc/nginx/conf.d/*.conf;
}
""".lstrip("\n")
NGINX_DEFAULT_CONF = """server {
    listen       80;
    listen  [::]:80;
    server_name  localhost;

    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }

    error_page   500 502 503 504  /50x.html;
    location = /50x.html {
        root   /usr/share/nginx/html;
    }
}
"""
DEBIAN_OS_RELEASE = ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
                     'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n')

NGINX = Image("nginx", (*COREUTILS, "curl"), nslookup=None, entrypoint="nginx -g daemon off;", files={
    "/etc/nginx/nginx.conf": NGINX_CONF,
    "/etc/nginx/conf.d/default.conf": NGINX_DEFAULT_CONF,
    "/etc/os-release": DEBIAN_OS_RELEASE,
    "/docker-entrypoint.sh": "#!/bin/sh\n# vim:sw=4:ts=4:et\n\nset -e\n",
}, dirs=("/bin", "/dev", "/docker-entrypoint.d", "/etc", "/etc/nginx", "/etc/nginx/conf.d", "/home", "/proc",
         "/root", "/run", "/sys", "/tmp", "/usr", "/usr/share/nginx/html", "/var", "/var/log/nginx"))
BUSYBOX = Image("busybox", BUSYBOX_APPLETS, path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                bin_dir="/bin", nslookup="busybox", entrypoint="sh", prompt_style="ash")
DNSUTILS = Image("dnsutils", (*COREUTILS, "ps"), nslookup="bind", entrypoint="sleep",
                 files={"/etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 8 (jessie)"\nNAME="Debian GNU/Linux"\n'
                                           'VERSION_ID="8"\nVERSION="8 (jessie)"\nID=debian\n'})
CURL = Image("curl", (*BUSYBOX_APPLETS, "curl"), bin_dir="/usr/bin", nslookup="busybox", entrypoint="curl",
             prompt_style="ash")
#: agnhost and netshoot are Alpine with bind-tools added: busybox applets, but BIND's nslookup, curl and bash.
AGNHOST = Image("agnhost", (*BUSYBOX_APPLETS, "curl", "bash"), nslookup="bind", entrypoint="/agnhost",
                prompt_style="ash")
NETSHOOT = Image("netshoot", (*BUSYBOX_APPLETS, "curl", "bash"), nslookup="bind", entrypoint="zsh",
                 prompt_style="ash")
DEBIAN = Image("debian", (*COREUTILS, "ps"), nslookup=None)
NONE = Image("scratch", (), nslookup=None)

BY_REPOSITORY = {"nginx": NGINX, "busybox": BUSYBOX, "jessie-dnsutils": DNSUTILS, "dnsutils": DNSUTILS,
                 "curl": CURL, "alpine": BUSYBOX, "netshoot": NETSHOOT, "agnhost": AGNHOST, "echoserver": DEBIAN}


def image_for(repository: str) -> Image:
    """The profile of an image repository (its last path part decides); an empty image for one not known."""
    return BY_REPOSITORY.get(repository.rsplit("/", 1)[-1], NONE)


def _stamp(now: float, fmt: str) -> str:
    return datetime.fromtimestamp(now, tz=timezone.utc).strftime(fmt)


def nginx_start_lines(now: float) -> list[str]:
    """What nginx's entrypoint and master process print when the container starts."""
    t = _stamp(now, "%Y/%m/%d %H:%M:%S")
    return ["/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration",
            "/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/",
            "/docker-entrypoint.sh: Launching /docker-entrypoint.d/10-listen-on-ipv6-by-default.sh",
            "10-listen-on-ipv6-by-default.sh: info: Getting the checksum of /etc/nginx/conf.d/default.conf",
            "10-listen-on-ipv6-by-default.sh: info: Enabled listen on IPv6 in /etc/nginx/conf.d/default.conf",
            "/docker-entrypoint.sh: Sourcing /docker-entrypoint.d/15-local-resolvers.envsh",
            "/docker-entrypoint.sh: Launching /docker-entrypoint.d/20-envsubst-on-templates.sh",
            "/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh",
            "/docker-entrypoint.sh: Configuration complete; ready for start up",
            f'{t} [notice] 1#1: using the "epoll" event method',
            f"{t} [notice] 1#1: nginx/1.27.3",
            f"{t} [notice] 1#1: built by gcc 12.2.0 (Debian 12.2.0-14) ",
            f"{t} [notice] 1#1: OS: Linux 6.8.0",
            f"{t} [notice] 1#1: getrlimit(RLIMIT_NOFILE): 1048576:1048576",
            f"{t} [notice] 1#1: start worker processes",
            f"{t} [notice] 1#1: start worker process 29",
            f"{t} [notice] 1#1: start worker process 30"]


def netexec_start_lines(now: float, http_port: int, udp_port: int) -> list[str]:
    """What agnhost netexec logs when it starts (klog format)."""
    t = _stamp(now, "%m%d %H:%M:%S.000000")
    lines = [f"I{t}       1 log.go:245] Started HTTP server on port {http_port}"]
    if udp_port > 0:
        lines.append(f"I{t}       1 log.go:245] Started UDP server on port  {udp_port}")
    return lines


def coredns_start_lines() -> list[str]:
    """What CoreDNS prints when it starts."""
    return [".:53", "[INFO] plugin/reload: Running configuration SHA512 = "
            "591cf328cccc12bc490481273e738df59329c62c0b729d94e8b61db9961c2fa5f046dd37f1cf888b953814040d180f52"
            "594972691cd6ff41be96639138a43908", "CoreDNS-1.11.3", "linux/amd64, go1.21.11, a6338e9"]
