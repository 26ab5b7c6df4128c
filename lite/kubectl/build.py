"""`make kubectl-wasm`: the real kubectl, built from its Go modules for WebAssembly (GOOS=js GOARCH=wasm).

The main package is upstream's own, `k8s.io/kubernetes/cmd/kubectl`, at the release go.mod pins. Platform files of
its dependencies do not compile for js/wasm (moby/term's terminal ioctls; kubectl's SIGHUP, SIGWINCH and umask), and
kubectl calls `syscall.Exec`, which js lacks; Go's `-overlay` builds our own small files (`_overlay/`) in their
place. Go refuses overlays inside its module cache, so the two modules concerned are copied out of it into the
work folder and a workspace (go.work) points the build at the copies; the standard library's `syscall` gains one
file (`Exec`, failing as `StartProcess` does on js).

Outputs in build/kubectl-wasm/ (what a site serves): kubectl.wasm, the Go toolchain's wasm_exec.js, and our glue
kubectl.mjs. Work files in build/kubectl-wasm.work/. kubectl.wasm is built again only when its inputs changed
(go.mod, go.sum, the overlay, this script, the Go version); the glue is copied whenever it changed.

Run: python lite/kubectl/build.py [--force]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "build" / "kubectl-wasm"
WORK = ROOT / "build" / "kubectl-wasm.work"
OVERLAY = HERE / "_overlay"
PACKAGE = "k8s.io/kubernetes/cmd/kubectl"

#: module → {file in the module: our file in _overlay/ ("" deletes the module's file from the build)}
REPLACED = {
    "github.com/moby/term": {
        "term_unix.go": "moby-term/term_wasm.go",
        "termios_unix.go": "",
        "termios_nonbsd.go": "",
    },
    "k8s.io/kubectl": {
        "pkg/util/umask.go": "kubectl-util/umask_wasm.go",
        "pkg/util/interrupt/interrupt.go": "kubectl-interrupt/interrupt_wasm.go",
        "pkg/util/term/resizeevents.go": "kubectl-term/resizeevents_wasm.go",
    },
}
#: files added to the standard library's packages (GOROOT/src/<package>/<name>)
STDLIB_ADDED = {"syscall/exec_wasm.go": "syscall/exec_wasm.go"}
#: what the site serves beside kubectl.wasm, and where each comes from
SITE_FILES = {"kubectl.mjs": HERE / "kubectl.mjs"}


class BuildError(SystemExit):
    """A step failed; the message says which and what to do."""


def log(message: str) -> None:
    print(f"[kubectl-wasm] {message}", flush=True)


def find_go() -> str:
    """The go command: $GO, then PATH, then /usr/local/go/bin/go."""
    for candidate in (os.environ.get("GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise BuildError("kubectl-wasm: no Go toolchain found (set GO=/path/to/go, or put go on PATH); "
                     "lite/kubectl/go.mod names the version it needs")


def go(go_cmd: str, *args: str, env: dict | None = None, capture: bool = False) -> str:
    """Run `go ARGS` in lite/kubectl; a failure stops the build with Go's own output."""
    proc = subprocess.run([go_cmd, *args], cwd=HERE, env={**os.environ, "GOWORK": "off", **(env or {})}, text=True,
                          stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None)
    if proc.returncode:
        detail = (proc.stderr or "").strip() if capture else "see Go's output above"
        raise BuildError(f"kubectl-wasm: `go {' '.join(args)}` failed: {detail}")
    return proc.stdout or ""


def module_dirs(go_cmd: str) -> dict[str, tuple[str, str]]:
    """Each replaced module's (version, folder in the module cache), after downloading what go.mod pins (`go list
    -m` names a module's folder only once it is in the cache: on a machine with an empty cache it has none)."""
    go(go_cmd, "mod", "download", *REPLACED, capture=True)
    out = go(go_cmd, "list", "-mod=mod", "-m", "-json", *REPLACED, capture=True)
    found = {}
    for block in _json_stream(out):
        module = block.get("Replace") or block
        if not module.get("Dir"):
            raise BuildError(f"kubectl-wasm: {block['Path']} is not in Go's module cache after `go mod download`")
        found[block["Path"]] = (module["Version"], module["Dir"])
    missing = set(REPLACED) - set(found)
    if missing:
        raise BuildError(f"kubectl-wasm: go.mod does not pin {', '.join(sorted(missing))}")
    return found


def _json_stream(text: str) -> list[dict]:
    """The JSON objects `go list -json` prints one after another."""
    decoder, i, out = json.JSONDecoder(), 0, []
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            break
        obj, i = decoder.raw_decode(text, i)
        out.append(obj)
    return out


def inputs_digest(go_cmd: str, versions: dict[str, tuple[str, str]]) -> str:
    """A digest of everything kubectl.wasm depends on."""
    h = hashlib.sha256()
    h.update(go(go_cmd, "version", capture=True).encode())
    h.update(json.dumps(sorted((m, v) for m, (v, _) in versions.items())).encode())
    for path in sorted([HERE / "go.mod", HERE / "go.sum", Path(__file__), *OVERLAY.rglob("*.go")]):
        h.update(str(path.relative_to(HERE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def prepare(go_cmd: str, versions: dict[str, tuple[str, str]]) -> tuple[Path, Path]:
    """Copies of the replaced modules, the workspace that uses them and the overlay: (go.work, overlay.json)."""
    src = WORK / "src"
    replace_lines, overlay = [], {}
    for module, files in REPLACED.items():
        version, folder = versions[module]
        copy = src / f"{module.replace('/', '_')}@{version}"
        if not copy.is_dir():
            shutil.copytree(folder, copy)
            for path in [copy, *copy.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
        for name, ours in files.items():
            if not (copy / name).is_file():
                raise BuildError(f"kubectl-wasm: {module}@{version} has no {name} any more: "
                                 f"check lite/kubectl/build.py's REPLACED against this release")
            overlay[str(copy / name)] = str(OVERLAY / ours) if ours else ""
        replace_lines.append(f"replace {module} => {copy}")
    goroot = go(go_cmd, "env", "GOROOT", capture=True).strip()
    for target, ours in STDLIB_ADDED.items():
        overlay[str(Path(goroot) / "src" / target)] = str(OVERLAY / ours)
    work = WORK / "go.work"
    go_line = next(line for line in (HERE / "go.mod").read_text().splitlines() if line.startswith("go "))
    work.write_text(f"{go_line}\n\nuse {HERE}\n\n" + "\n".join(replace_lines) + "\n")
    overlay_file = WORK / "overlay.json"
    overlay_file.write_text(json.dumps({"Replace": overlay}, indent=1) + "\n")
    return work, overlay_file


def ldflags(go_cmd: str) -> str:
    """Strip symbols; stamp the release as upstream's build does, so `kubectl version` names it."""
    release = go(go_cmd, "list", "-mod=mod", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes", capture=True).strip()
    minor = release.split(".")[1]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.gitVersion={release}", f"-X {package}.gitMajor=1",
                  f"-X {package}.gitMinor={minor}", f"-X {package}.gitTreeState=clean"]
    return " ".join(flags)


def copy_site_files() -> None:
    """Our glue beside kubectl.wasm (copied every time: it is small and needs no build)."""
    for name, source in SITE_FILES.items():
        if not (OUT / name).is_file() or (OUT / name).read_bytes() != source.read_bytes():
            shutil.copyfile(source, OUT / name)


def build(force: bool = False) -> None:
    """Build kubectl.wasm and put the site's files in build/kubectl-wasm/."""
    go_cmd = find_go()
    WORK.mkdir(parents=True, exist_ok=True)
    versions = module_dirs(go_cmd)
    digest = inputs_digest(go_cmd, versions)
    stamp = WORK / "inputs.sha256"
    wasm = OUT / "kubectl.wasm"
    if not force and wasm.is_file() and stamp.is_file() and stamp.read_text() == digest \
            and (OUT / "wasm_exec.js").is_file():
        copy_site_files()
        log(f"up to date: {wasm.relative_to(ROOT)} ({wasm.stat().st_size / 1e6:.1f} MB)")
        return
    work, overlay = prepare(go_cmd, versions)
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    log(f"go build {PACKAGE} for js/wasm")
    partial = WORK / "kubectl.wasm"
    go(go_cmd, "build", "-trimpath", "-ldflags", ldflags(go_cmd), "-overlay", str(overlay), "-o", str(partial),
       PACKAGE, env={"GOOS": "js", "GOARCH": "wasm", "GOWORK": str(work)})
    goroot = Path(go(go_cmd, "env", "GOROOT", capture=True).strip())
    shutil.copyfile(goroot / "lib" / "wasm" / "wasm_exec.js", OUT / "wasm_exec.js")
    copy_site_files()
    os.replace(partial, wasm)
    stamp.write_text(digest)
    log(f"built {wasm.relative_to(ROOT)}: {wasm.stat().st_size / 1e6:.1f} MB in {time.monotonic() - started:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--force", action="store_true", help="build even when the inputs are unchanged")
    args = parser.parse_args(argv)
    build(force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
