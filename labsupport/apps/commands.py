"""The everyday commands of the lab's images, written for `labsupport.apps.shell.Shell`: coreutils and busybox
applets over the container's files, and the network tools (curl, wget, nslookup) over the pod's network verbs.

Each takes (shell, arguments, stdin) and returns an Output; messages follow the real tools'. Where busybox and
GNU coreutils differ, the image chooses (`labsupport.apps.images`).
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Callable

from labsupport.apps.shell import ExitShell, LoopControl, Output, Shell

Command = Callable[[Shell, list[str], str], Output]


def _flags(args: list[str], with_value: str = "") -> tuple[dict[str, str | bool], list[str]]:
    """Short options (`-n 3`, `-n3`, `-la`) and the operands after them; `--` ends options."""
    opts: dict[str, str | bool] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest += args[i + 1:]
            break
        if a.startswith("-") and len(a) > 1 and not a[1:].lstrip("-").isdigit() or a.startswith("--"):
            if a.startswith("--"):
                name, _, value = a[2:].partition("=")
                opts[name] = value or True
            else:
                j = 1
                while j < len(a):
                    c = a[j]
                    if c in with_value:
                        value = a[j + 1:] or (args[i + 1] if i + 1 < len(args) else "")
                        if not a[j + 1:]:
                            i += 1
                        opts[c] = value
                        break
                    opts[c] = True
                    j += 1
        elif a.startswith("-") and a[1:].isdigit() and "n" in with_value:
            opts["n"] = a[1:]
        else:
            rest.append(a)
        i += 1
    return opts, rest


def _read(sh: Shell, name: str, tool: str) -> tuple[str | None, Output | None]:
    path = sh.path(name)
    if path in sh.app.files:
        return sh.app.files[path], None
    if sh.is_dir(path):
        return None, Output(1, "", f"{tool}: read error: Is a directory\n")
    return None, Output(1, "", f"{tool}: can't open '{name}': No such file or directory\n")


def _inputs(sh: Shell, operands: list[str], stdin: str, tool: str) -> tuple[list[str], str, int]:
    texts, err, code = [], "", 0
    for name in operands or ["-"]:
        if name == "-":
            texts.append(stdin)
            continue
        text, failure = _read(sh, name, tool)
        if failure is not None:
            err += failure.stderr
            code = 1
        else:
            texts.append(text)
    return texts, err, code


def cat(sh: Shell, args: list[str], stdin: str) -> Output:
    """cat FILE…"""
    _, operands = _flags(args)
    texts, err, code = _inputs(sh, operands, stdin, "cat")
    return Output(code, "".join(texts), err)


def echo(sh: Shell, args: list[str], stdin: str) -> Output:
    """echo [-n] [-e] WORD…"""
    newline, escapes = True, False
    while args and args[0] in ("-n", "-e", "-ne", "-en", "-E"):
        newline = newline and "n" not in args[0]
        escapes = escapes or "e" in args[0][1:]
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text = text.replace("\\n", "\n").replace("\\t", "\t")
    return Output(0, text + ("\n" if newline else ""))


def printf(sh: Shell, args: list[str], stdin: str) -> Output:
    """printf FORMAT [ARG…] (%s, %d, \\n)"""
    if not args:
        return Output(1, "", "printf: usage: printf FORMAT [ARGUMENT...]\n")
    fmt, values = args[0].replace("\\n", "\n").replace("\\t", "\t"), list(args[1:])
    out = re.sub(r"%[sd]", lambda m: values.pop(0) if values else "", fmt)
    return Output(0, out.replace("%%", "%"))


def env(sh: Shell, args: list[str], stdin: str) -> Output:
    """env (prints the environment)"""
    return Output(0, "".join(f"{k}={v}\n" for k, v in sh.environ.items()))


def printenv(sh: Shell, args: list[str], stdin: str) -> Output:
    """printenv [NAME…]"""
    if not args:
        return env(sh, args, stdin)
    found = [sh.environ[a] for a in args if a in sh.environ]
    return Output(0 if len(found) == len(args) else 1, "".join(v + "\n" for v in found))


def export(sh: Shell, args: list[str], stdin: str) -> Output:
    """export NAME[=VALUE]…"""
    for a in args:
        name, sep, value = a.partition("=")
        sh.environ[name] = value if sep else sh.variables.get(name, sh.environ.get(name, ""))
    return Output(0)


def unset(sh: Shell, args: list[str], stdin: str) -> Output:
    """unset NAME…"""
    for a in args:
        sh.environ.pop(a, None)
        sh.variables.pop(a, None)
    return Output(0)


def cd(sh: Shell, args: list[str], stdin: str) -> Output:
    """cd [DIR]"""
    target = sh.path(args[0] if args else sh.environ.get("HOME", "/"))
    if not sh.is_dir(target):
        return Output(2, "", f"sh: cd: can't cd to {args[0] if args else target}: No such file or directory\n")
    sh.cwd = target
    return Output(0)


def pwd(sh: Shell, args: list[str], stdin: str) -> Output:
    """pwd"""
    return Output(0, sh.cwd + "\n")


def exit_(sh: Shell, args: list[str], stdin: str) -> Output:
    """exit [N]"""
    try:
        code = int(args[0]) if args else sh.status
    except ValueError:
        return Output(2, "", f"sh: exit: Illegal number: {args[0]}\n")
    raise ExitShell(code & 0xFF)


def break_(sh: Shell, args: list[str], stdin: str) -> Output:
    """break (out of the innermost loop)"""
    raise LoopControl("break")


def continue_(sh: Shell, args: list[str], stdin: str) -> Output:
    """continue (with the next round of the innermost loop)"""
    raise LoopControl("continue")


def seq(sh: Shell, args: list[str], stdin: str) -> Output:
    """seq [FIRST [INCREMENT]] LAST"""
    try:
        numbers = [int(a) for a in args]
    except ValueError:
        return Output(1, "", f"seq: invalid number '{next(a for a in args if not a.lstrip('-').isdigit())}'\n")
    if not 1 <= len(numbers) <= 3:
        return Output(1, "", "seq: missing operand\n")
    first, step, last = (1, 1, numbers[0]) if len(numbers) == 1 else \
        (numbers[0], 1, numbers[1]) if len(numbers) == 2 else tuple(numbers)
    if step == 0:
        return Output(1, "", "seq: invalid increment '0'\n")
    values = range(first, last + (1 if step > 0 else -1), step)
    return Output(0, "".join(f"{n}\n" for n in list(values)[:100000]))


def ls(sh: Shell, args: list[str], stdin: str) -> Output:
    """ls [-1alA] [PATH…]"""
    opts, operands = _flags(args)
    out, err, code = [], "", 0
    for name in operands or ["."]:
        path = sh.path(name)
        if path in sh.app.files:
            out.append(_ls_line(sh, path, name, opts))
            continue
        if not sh.is_dir(path):
            err += f"ls: {name}: No such file or directory\n"
            code = 1
            continue
        names = sh.listing(path)
        if opts.get("a"):
            names = [".", "..", *names]
        elif not opts.get("A"):
            names = [n for n in names if not n.startswith(".")]
        if len(operands) > 1:
            out.append(f"{name}:\n")
        if opts.get("l"):
            out.append(f"total {len(names) * 4}\n")
            out += [_ls_line(sh, path.rstrip("/") + "/" + n, n, opts) for n in names]
        else:
            out += [n + "\n" for n in names]
    return Output(code, "".join(out), err)


def _ls_line(sh: Shell, path: str, name: str, opts: dict) -> str:
    if not opts.get("l"):
        return name + "\n"
    if path in sh.app.files:
        size = len(sh.app.files[path].encode())
        return f"-rw-r--r--    1 root     root     {size:>9} Jan  1 00:00 {name}\n"
    return f"drwxr-xr-x    2 root     root          4096 Jan  1 00:00 {name}\n"


def _head_tail(tool: str) -> Command:
    def run(sh: Shell, args: list[str], stdin: str) -> Output:
        opts, operands = _flags(args, "nc")
        try:
            count = int(str(opts.get("n", 10)).lstrip("+"))
        except ValueError:
            return Output(1, "", f"{tool}: invalid number '{opts.get('n')}'\n")
        texts, err, code = _inputs(sh, operands, stdin, tool)
        out = []
        for text in texts:
            lines = text.splitlines(keepends=True)
            out += lines[:count] if tool == "head" else (lines[-count:] if count else [])
        return Output(code, "".join(out), err)
    run.__doc__ = f"{tool} [-n N] [FILE…]"
    return run


def grep(sh: Shell, args: list[str], stdin: str) -> Output:
    """grep [-ivcqnE] PATTERN [FILE…]"""
    opts, operands = _flags(args, "e")
    pattern = opts.get("e") if isinstance(opts.get("e"), str) else (operands.pop(0) if operands else None)
    if pattern is None:
        return Output(2, "", "Usage: grep [-ivcqnE] PATTERN [FILE]...\n")
    flags = re.IGNORECASE if opts.get("i") else 0
    try:
        regex = re.compile(pattern if opts.get("E") else _basic_regex(pattern), flags)
    except re.error:
        regex = re.compile(re.escape(pattern), flags)
    texts, err, code = _inputs(sh, operands, stdin, "grep")
    hits = []
    for text in texts:
        for n, line in enumerate(text.splitlines(), 1):
            if bool(regex.search(line)) != bool(opts.get("v")):
                hits.append(f"{n}:{line}" if opts.get("n") else line)
    if opts.get("q"):
        return Output(0 if hits else 1)
    if opts.get("c"):
        return Output(0 if hits else 1, f"{len(hits)}\n", err)
    return Output(code if code else (0 if hits else 1), "".join(h + "\n" for h in hits), err)


def _basic_regex(pattern: str) -> str:
    return pattern.replace("\\|", "|").replace("+", "\\+").replace("?", "\\?")


def wc(sh: Shell, args: list[str], stdin: str) -> Output:
    """wc [-lwc] [FILE…]"""
    opts, operands = _flags(args)
    texts, err, code = _inputs(sh, operands, stdin, "wc")
    text = "".join(texts)
    counts = {"l": text.count("\n"), "w": len(text.split()), "c": len(text.encode())}
    chosen = [k for k in "lwc" if opts.get(k)] or ["l", "w", "c"]
    line = " ".join(f"{counts[k]:>7}" if len(chosen) > 1 else str(counts[k]) for k in chosen)
    suffix = f" {operands[0]}" if len(operands) == 1 else ""
    return Output(code, line + suffix + "\n", err)


def sort(sh: Shell, args: list[str], stdin: str) -> Output:
    """sort [-rnu] [FILE…]"""
    opts, operands = _flags(args)
    texts, err, code = _inputs(sh, operands, stdin, "sort")
    lines = "".join(texts).splitlines()
    if opts.get("n"):
        def key(s: str) -> float:
            m = re.match(r"\s*-?\d+(\.\d+)?", s)
            return float(m.group()) if m else 0.0
        lines.sort(key=key, reverse=bool(opts.get("r")))
    else:
        lines.sort(reverse=bool(opts.get("r")))
    if opts.get("u"):
        lines = list(dict.fromkeys(lines))
    return Output(code, "".join(line + "\n" for line in lines), err)


def uniq(sh: Shell, args: list[str], stdin: str) -> Output:
    """uniq [-c] [FILE]"""
    opts, operands = _flags(args)
    texts, err, code = _inputs(sh, operands[:1], stdin, "uniq")
    groups: list[list] = []
    for line in "".join(texts).splitlines():
        if groups and groups[-1][0] == line:
            groups[-1][1] += 1
        else:
            groups.append([line, 1])
    if opts.get("c"):
        return Output(code, "".join(f"{n:>7} {line}\n" for line, n in groups), err)
    return Output(code, "".join(line + "\n" for line, _ in groups), err)


def cut(sh: Shell, args: list[str], stdin: str) -> Output:
    """cut -d DELIM -f LIST [FILE…]"""
    opts, operands = _flags(args, "df")
    delim = str(opts.get("d", "\t")) or "\t"
    fields = []
    for part in str(opts.get("f", "")).split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            fields += range(int(lo or 1), int(hi or 99) + 1)
        elif part.isdigit():
            fields.append(int(part))
    if not fields:
        return Output(1, "", "cut: expected a list of fields (-f)\n")
    texts, err, code = _inputs(sh, operands, stdin, "cut")
    out = []
    for line in "".join(texts).splitlines():
        cols = line.split(delim)
        out.append(delim.join(cols[f - 1] for f in fields if f <= len(cols)) if len(cols) > 1 else line)
    return Output(code, "".join(line + "\n" for line in out), err)


def tr(sh: Shell, args: list[str], stdin: str) -> Output:
    """tr [-d] SET1 [SET2]"""
    opts, operands = _flags(args)
    if opts.get("d") and operands:
        return Output(0, "".join(c for c in stdin if c not in _set(operands[0])))
    if len(operands) < 2:
        return Output(1, "", "tr: missing operand\n")
    a, b = _set(operands[0]), _set(operands[1])
    table = {ord(c): (b[i] if i < len(b) else b[-1:]) for i, c in enumerate(a)}
    return Output(0, stdin.translate(table))


def _set(spec: str) -> str:
    spec = spec.replace("[:upper:]", "A-Z").replace("[:lower:]", "a-z").replace("\\n", "\n")
    out, i = "", 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out += "".join(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out += spec[i]
            i += 1
    return out


def mkdir(sh: Shell, args: list[str], stdin: str) -> Output:
    """mkdir [-p] DIR…"""
    opts, operands = _flags(args)
    for name in operands:
        path = sh.path(name)
        parent = path.rsplit("/", 1)[0] or "/"
        if sh.exists(path) and not opts.get("p"):
            return Output(1, "", f"mkdir: can't create directory '{name}': File exists\n")
        if not sh.is_dir(parent) and not opts.get("p"):
            return Output(1, "", f"mkdir: can't create directory '{name}': No such file or directory\n")
        sh.app.dirs.add(path)
    return Output(0)


def touch(sh: Shell, args: list[str], stdin: str) -> Output:
    """touch FILE…"""
    for name in _flags(args)[1]:
        path = sh.path(name)
        sh.app.files.setdefault(path, "")
    return Output(0)


def rm(sh: Shell, args: list[str], stdin: str) -> Output:
    """rm [-rf] PATH…"""
    opts, operands = _flags(args)
    for name in operands:
        path = sh.path(name)
        if path in sh.app.files:
            del sh.app.files[path]
        elif sh.is_dir(path):
            if not (opts.get("r") or opts.get("R")):
                return Output(1, "", f"rm: '{name}' is a directory\n")
            for p in [p for p in sh.app.files if p.startswith(path + "/")]:
                del sh.app.files[p]
            sh.app.dirs -= {d for d in sh.app.dirs if d == path or d.startswith(path + "/")}
        elif not opts.get("f"):
            return Output(1, "", f"rm: can't remove '{name}': No such file or directory\n")
    return Output(0)


def cp(sh: Shell, args: list[str], stdin: str) -> Output:
    """cp SOURCE DEST"""
    operands = _flags(args)[1]
    if len(operands) != 2:
        return Output(1, "", "cp: missing file operand\n")
    text, failure = _read(sh, operands[0], "cp")
    if failure is not None:
        return failure
    dest = sh.path(operands[1])
    if sh.is_dir(dest):
        dest = dest.rstrip("/") + "/" + operands[0].rsplit("/", 1)[-1]
    sh.app.files[dest] = text or ""
    return Output(0)


def mv(sh: Shell, args: list[str], stdin: str) -> Output:
    """mv SOURCE DEST"""
    result = cp(sh, args, stdin)
    if result.code == 0:
        sh.app.files.pop(sh.path(_flags(args)[1][0]), None)
    return result


def sleep(sh: Shell, args: list[str], stdin: str) -> Output:
    """sleep SECONDS (returns at once: the container's clock is the cluster's)"""
    if not args:
        return Output(1, "", "sleep: missing operand\n")
    return Output(0)


def true(sh: Shell, args: list[str], stdin: str) -> Output:
    """true"""
    return Output(0)


def false(sh: Shell, args: list[str], stdin: str) -> Output:
    """false"""
    return Output(1)


def hostname(sh: Shell, args: list[str], stdin: str) -> Output:
    """hostname [-i]"""
    if "-i" in args:
        return Output(0, (sh.app.ip or "") + "\n")
    return Output(0, sh.app.hostname + "\n")


def date(sh: Shell, args: list[str], stdin: str) -> Output:
    """date (the cluster's time, in UTC)"""
    now = sh.app.env.now() if sh.app.env else 0.0
    return Output(0, datetime.fromtimestamp(now, tz=timezone.utc).strftime("%a %b %e %H:%M:%S UTC %Y") + "\n")


def id_(sh: Shell, args: list[str], stdin: str) -> Output:
    """id"""
    return Output(0, "uid=0(root) gid=0(root) groups=0(root)\n")


def whoami(sh: Shell, args: list[str], stdin: str) -> Output:
    """whoami"""
    return Output(0, "root\n")


def uname(sh: Shell, args: list[str], stdin: str) -> Output:
    """uname [-a|-n|-r|-m]"""
    parts = {"s": "Linux", "n": sh.app.hostname, "r": "6.8.0", "m": "x86_64"}
    opts, _ = _flags(args)
    if opts.get("a"):
        return Output(0, f"Linux {sh.app.hostname} 6.8.0 #1 SMP x86_64 GNU/Linux\n")
    chosen = [k for k in "snrm" if opts.get(k)] or ["s"]
    return Output(0, " ".join(parts[k] for k in chosen) + "\n")


def ps(sh: Shell, args: list[str], stdin: str) -> Output:
    """ps (the container's main process and this shell)"""
    main = " ".join(sh.app.argv) or sh.app.entrypoint
    return Output(0, f"PID   USER     TIME  COMMAND\n    1 root      0:00 {main}\n"
                     f"    7 root      0:00 sh\n    8 root      0:00 ps\n")


def which(sh: Shell, args: list[str], stdin: str) -> Output:
    """which NAME…"""
    found = [sh.app.binary_path(a) for a in args if a in sh.commands and sh.app.binary_path(a)]
    return Output(0 if len(found) == len(args) else 1, "".join(f + "\n" for f in found))


def test(sh: Shell, args: list[str], stdin: str) -> Output:
    """test / [ EXPRESSION ] (-f -d -e -z -n = != -eq -ne -lt -gt)"""
    if args and args[-1] == "]":
        args = args[:-1]
    negate = bool(args) and args[0] == "!"
    if negate:
        args = args[1:]
    ok = _test(sh, args)
    return Output(0 if ok != negate else 1)


def _test(sh: Shell, args: list[str]) -> bool:
    if not args:
        return False
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, value = args
        path = sh.path(value)
        return {"-f": path in sh.app.files, "-d": sh.is_dir(path), "-e": sh.exists(path),
                "-s": bool(sh.app.files.get(path)), "-z": value == "", "-n": value != ""}.get(op, False)
    a, op, b = args[:3]
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    try:
        x, y = int(a), int(b)
    except ValueError:
        return False
    return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}.get(op, False)


def sh_(sh: Shell, args: list[str], stdin: str) -> Output:
    """sh [-c SCRIPT] [FILE] (a child shell)"""
    child = Shell(sh.app, sh.commands, sh.environ)
    child.cwd = sh.cwd
    if args and args[0] == "-c":
        return child.run(args[1] if len(args) > 1 else "", stdin)
    if args:
        text, failure = _read(sh, args[0], "sh")
        if failure is not None:
            return Output(127, "", f"sh: can't open '{args[0]}': No such file or directory\n")
        return child.run(text or "", stdin)
    return child.run(stdin)


# --- the network tools --------------------------------------------------------------------------------------
def _fetch(sh: Shell, url: str):
    if sh.app.env is None:
        return None
    url = url if "://" in url else "http://" + url
    scheme, rest = url.split("://", 1)
    host, sep, path = rest.partition("/")
    name, colon, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    if (name or host) in ("localhost", "127.0.0.1") and sh.app.ip:
        # the pod's own network namespace: its loopback reaches the pod's containers
        url = f"{scheme}://{sh.app.ip}{colon}{port}{sep}{path}"
    return sh.app.env.fetch(url)


def curl(sh: Shell, args: list[str], stdin: str) -> Output:
    """curl [-sSfiIL] [-o FILE] [-w FORMAT] [-m SECONDS] [-H HEADER] URL…"""
    opts: dict[str, str | bool] = {}
    urls: list[str] = []
    takes = {"o": "output", "w": "write-out", "m": "max-time", "H": "header", "X": "request", "d": "data",
             "A": "user-agent", "connect-timeout": "connect-timeout", "output": "output", "write-out": "write-out",
             "max-time": "max-time", "header": "header", "request": "request", "data": "data",
             "user-agent": "user-agent", "retry": "retry", "resolve": "resolve"}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in takes and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            opts[takes.get(name, name)] = value or True
        elif a.startswith("-") and len(a) > 1:
            for j, c in enumerate(a[1:], 1):
                if c in takes:
                    value = a[j + 1:] or (args[i + 1] if i + 1 < len(args) else "")
                    if not a[j + 1:]:
                        i += 1
                    opts[takes[c]] = value
                    break
                opts[c] = True
        else:
            urls.append(a)
        i += 1
    if not urls:
        return Output(2, "", "curl: try 'curl --help' or 'curl --manual' for more information\n")
    silent = bool(opts.get("s")) and not opts.get("S")
    out, err, code = [], "", 0
    for url in urls:
        result = _fetch(sh, url)
        if result is None or result.status is None:
            code = getattr(result, "exit_code", 7) or 7
            message = getattr(result, "error", None) or f"curl: (7) Failed to connect to {url}"
            if not silent:
                err += message.rstrip("\n") + "\n"
            if isinstance(opts.get("write-out"), str):
                out.append(_write_out(str(opts["write-out"]), None, url))
            continue
        if opts.get("f") and result.status >= 400:
            code = 22
            if not silent:
                err += f"curl: (22) The requested URL returned error: {result.status}\n"
        elif isinstance(opts.get("output"), str):
            if opts["output"] != "/dev/null":
                sh.app.files[sh.path(str(opts["output"]))] = result.body
        else:
            if opts.get("i") or opts.get("I"):
                out.append(f"HTTP/1.1 {result.status} {_reason(result.status)}\r\n"
                           f"Content-Length: {len(result.body.encode())}\r\n\r\n")
            if not opts.get("I"):
                out.append(result.body)
        if isinstance(opts.get("write-out"), str):
            out.append(_write_out(str(opts["write-out"]), result, url))
    return Output(code, "".join(out), err)


def _write_out(fmt: str, result, url: str) -> str:
    status = str(result.status) if result is not None and result.status is not None else "000"
    values = {"http_code": status, "response_code": status, "url_effective": url,
              "remote_ip": (result.endpoint or "").rsplit(":", 1)[0] if result is not None and result.endpoint else "",
              "size_download": str(len(result.body.encode())) if result is not None else "0"}
    text = re.sub(r"%\{([a-z_]+)\}", lambda m: values.get(m.group(1), ""), fmt)
    return text.replace("\\n", "\n").replace("\\t", "\t")


def _reason(status: int) -> str:
    return {200: "OK", 301: "Moved Permanently", 302: "Found", 403: "Forbidden", 404: "Not Found",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}.get(status, "")


def wget(sh: Shell, args: list[str], stdin: str) -> Output:
    """wget [-q] [-O FILE] [-T SECONDS] URL (busybox's)"""
    opts, operands = _flags(args, "OTU")
    if not operands:
        return Output(1, "", "BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\n"
                             "Usage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR]\n")
    url = operands[0]
    full = url if "://" in url else "http://" + url
    host = full.split("://", 1)[1].split("/", 1)[0]
    result = _fetch(sh, full)
    quiet = bool(opts.get("q"))
    target = opts.get("O")
    address = _address(sh, host)
    err = "" if quiet else f"Connecting to {host} ({address})\n"
    if result is None or result.status is None:
        error = getattr(result, "error", "") or ""
        if "resolve" in error.lower():
            return Output(1, "", f"wget: bad address '{host.rsplit(':', 1)[0]}'\n")
        if "timed out" in error.lower() or getattr(result, "exit_code", 0) == 28:
            return Output(1, err, "wget: download timed out\n")
        return Output(1, "", err + f"wget: can't connect to remote host ({address.rsplit(':', 1)[0]}): "
                                   f"Connection refused\n")
    if result.status >= 400:
        return Output(1, "", err + f"wget: server returned error: HTTP/1.1 {result.status} "
                                   f"{_reason(result.status)}\n")
    name = str(target) if isinstance(target, str) else (full.split("://", 1)[1].split("?")[0].rsplit("/", 1)[-1]
                                                         if "/" in full.split("://", 1)[1] else "") or "index.html"
    size = len(result.body.encode())
    if name == "-":
        return Output(0, result.body, "" if quiet else err + "writing to stdout\n"
                      f"-                    100% |********************************| {size:>5}  0:00:00 ETA\n"
                      "written to stdout\n")
    sh.app.files[sh.path(name)] = result.body
    note = "" if quiet else err + f"saving to '{name}'\n{name:<20} 100% |********************************| " \
                                  f"{len(result.body.encode()):>5}  0:00:00 ETA\n'{name}' saved\n"
    return Output(0, "", note)


def _address(sh: Shell, host: str) -> str:
    """`host:port` with the host resolved as wget prints it (`web:80` → `10.96.12.7:80`)."""
    name, _, port = host.partition(":")
    port = port or "80"
    if name.replace(".", "").isdigit() or sh.app.env is None:
        return f"{name}:{port}"
    if name == "localhost":
        return f"127.0.0.1:{port}"
    answer = sh.app.env.nslookup(name)
    return f"{answer.addresses[0]}:{port}" if answer.addresses else f"{name}:{port}"


def nslookup_bind(sh: Shell, args: list[str], stdin: str) -> Output:
    """nslookup NAME (BIND's, as in dnsutils images)"""
    names = [a for a in args if not a.startswith("-")]
    if not names or sh.app.env is None:
        return Output(1, "", "Usage: nslookup NAME\n")
    answer = sh.app.env.nslookup(names[0])
    text = answer.text if answer.text.endswith("\n") else answer.text + "\n"
    ok = answer.rcode == "NOERROR"
    return Output(0 if ok else 1, text)


def nslookup_busybox(sh: Shell, args: list[str], stdin: str) -> Output:
    """nslookup NAME (busybox's): one query per name of the resolv.conf search path, each answer printed
    (`Name:`/`Address:`, or `** server can't find …`), the server as `ip:53`; it exits 0 once a server answered."""
    names = [a for a in args if not a.startswith("-")]
    if not names or sh.app.env is None:
        return Output(1, "", "BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary.\n\n"
                             "Usage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n")
    search, ndots = _resolver(sh.app.files.get("/etc/resolv.conf", ""))
    out = [f"Server:\t\t{sh.app.nameserver}\nAddress:\t{sh.app.nameserver}:53\n\n"]
    for candidate in _candidates(names[0], search, ndots):
        answer = sh.app.env.nslookup(candidate + ".")
        if answer.rcode == "SERVFAIL" and not answer.addresses and "no servers could be reached" in answer.text:
            return Output(1, ";; connection timed out; no servers could be reached\n\n")
        if answer.rcode != "NOERROR":
            out.append(f"** server can't find {candidate}: {answer.rcode}\n\n")
        elif answer.addresses:
            out.append("".join(f"Name:\t{answer.name}\nAddress: {a}\n" for a in answer.addresses) + "\n")
        else:
            out.append(f"*** Can't find {candidate}: No answer\n\n")
    return Output(0, "".join(out))


def _resolver(text: str) -> tuple[list[str], int]:
    search, ndots = [], 1
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in ("search", "domain"):
            search = words[1:]
        elif words and words[0] == "options":
            for option in words[1:]:
                if option.startswith("ndots:") and option[6:].isdigit():
                    ndots = int(option[6:])
    return search, ndots


def _candidates(name: str, search: list[str], ndots: int) -> list[str]:
    """The names a stub resolver tries for `name`, in order (without the trailing dot)."""
    if name.endswith("."):
        return [name.rstrip(".")]
    suffixed = [f"{name}.{domain.strip('.')}" for domain in search if domain.strip(".")]
    return [name, *suffixed] if name.count(".") >= ndots else [*suffixed, name]


COMMON: dict[str, Command] = {
    "cat": cat, "echo": echo, "printf": printf, "env": env, "printenv": printenv, "export": export,
    "unset": unset, "cd": cd, "pwd": pwd, "exit": exit_, "ls": ls, "head": _head_tail("head"),
    "tail": _head_tail("tail"), "grep": grep, "wc": wc, "sort": sort, "uniq": uniq, "cut": cut, "tr": tr,
    "mkdir": mkdir, "touch": touch, "rm": rm, "cp": cp, "mv": mv, "sleep": sleep, "true": true, "false": false,
    "hostname": hostname, "date": date, "id": id_, "whoami": whoami, "uname": uname, "test": test, "[": test,
    "sh": sh_, "ash": sh_, "bash": sh_, "which": which, "break": break_, "continue": continue_, "seq": seq,
    ":": true,
}
#: Builtins of the shell itself (no file in /bin).
BUILTINS = frozenset({"cd", "exit", "export", "unset", "pwd", "echo", "printf", "test", "[", "true", "false",
                      "break", "continue", ":"})
