"""`make lite`: the course as a static site that runs in a browser tab (JupyterLite with a Pyodide kernel).

Everything comes from the repository and from the package registries, nothing from a CDN, and the site fetches
nothing from anywhere but where it is served:
- the build tools, pinned (`TOOLS`), in their own venv (build/lite-env/);
- Pyodide's core from npm (`pyodide@PYODIDE`: the interpreter and its standard library, no wheels), its lock
  emptied of packages so that every wheel the kernel loads is one this build put in the site;
- the kernel's wheels solved for WebAssembly from PyPI by the pyodide kernel's lock step, plus two built here: the
  project's own wheel, whose dependencies are cut to what runs in a tab (`BROWSER_DEPENDENCIES`: the API server's
  TLS, the kubernetes client, matplotlib and the netns/kind backends stay on the server side), and PyYAML as a pure
  wheel from its sdist (PyPI has only binary wheels for CPython);
- both editions' lessons and what a student reads beside them (`CONTENT`), and the real kubectl built for
  WebAssembly (`make kubectl-wasm`), which `lab.kubectl` finds in the site's static/kubectl/;
- the scripts every app page loads before the app (`PAGE_SCRIPTS`, lite/page/): worker-calls.js keeps the page's
  calls into the kernel's worker from losing their answer (a cell's execute reply).

Output: build/lite/ (serve it with `make lite-serve`, or any static host: README "The course in a browser tab").
Work files in build/lite.work/. Run: python lite/build.py [--lessons 01-pods-are-mortal,...]
"""
from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "build" / "lite"
WORK = ROOT / "build" / "lite.work"
ENV = ROOT / "build" / "lite-env"
KUBECTL_WASM = ROOT / "build" / "kubectl-wasm"
#: The build tools, pinned: JupyterLite 0.8.6 and its Pyodide kernel (which target Pyodide 314.0.6); the lock step's
#: pyodide-lock 0.2.1 reads Pyodide 314's lock (it asks for Python 3.12 but runs on 3.11).
TOOLS = ["jupyterlite-core==0.8.6", "jupyterlite-pyodide-kernel==0.8.6", "jupyter_server", "libarchive-c",
         "jupyterlab_widgets==3.0.17", "uv"]
LOCK_TOOL = "pyodide-lock==0.2.1"
PYODIDE = "314.0.6"
PYYAML = "6.0.3"
#: What the project needs in a tab: pure Python, all of it.
BROWSER_DEPENDENCIES = ["pyyaml>=6.0", "networkx>=3.2", "ipywidgets>=8.1", "dnslib>=0.9.24", "jsonpatch>=1.33",
                        "websockets>=12"]
#: What the kernel itself needs from the lock (its package installer, which the kernel imports as it starts).
KERNEL_PACKAGES = ["micropip"]
#: Loaded while Pyodide starts, before the first cell asks for them.
PREFETCH = ["labsupport", "networkx", "pyyaml", "ipywidgets", "dnslib", "jsonpatch"]
#: The site's files: {path in the site: path in the repository}; the lessons are added by `lessons()`.
CONTENT = {"0-in-a-browser-tab.md": "lite/pages/in-a-browser-tab.md",
           "ru/0-во-вкладке-браузера.md": "lite/pages/ru-in-a-browser-tab.md",
           "README.md": "notebooks/README.md", "ru/README.md": "notebooks/ru/README.md",
           "ru/GLOSSARY.md": "notebooks/ru/GLOSSARY.md"}
#: Loaded by each app page (lab/index.html) before the app, from the site's static/page/.
PAGE_SCRIPTS = ["worker-calls.js"]
#: The page settings: the notebook opens ready to run, the app is reachable from the page (the tests drive it).
PAGE_CONFIG = {"appName": "Kubernetes Services, hands-on", "exposeAppInBrowser": True,
               "disabledExtensions": ["@jupyterlite/application-extension:share-file"]}


class BuildError(SystemExit):
    """A step failed; the message says which and what to do."""


def log(message: str) -> None:
    print(f"[lite] {message}", flush=True)


def run(argv: list, what: str, **kwargs) -> subprocess.CompletedProcess:
    """Run a step; BuildError with its output when it fails."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise BuildError(f"[lite] {what} failed (exit code {done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}")
    return done


def tools() -> Path:
    """The build venv, made once per set of pins; returns its bin/."""
    stamp = ENV / ".pins"
    pins = "\n".join([*TOOLS, LOCK_TOOL, sys.version])
    if not (stamp.is_file() and stamp.read_text() == pins):
        log("build tools: " + " ".join(TOOLS + [LOCK_TOOL]))
        shutil.rmtree(ENV, ignore_errors=True)
        run([sys.executable, "-m", "venv", ENV], "making the build venv")
        pip = [ENV / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        run([*pip, *TOOLS], "installing the build tools")
        run([*pip, "--ignore-requires-python", LOCK_TOOL], "installing pyodide-lock")
        stamp.write_text(pins)
    return ENV / "bin"


def unpack_npm(packed: Path, target: Path) -> None:
    """The files of an npm package (`npm pack`'s tarball: its `package/` folder) into target, made afresh. A member
    that would land outside target stops the build (Debian's Python 3.11.2 has no tarfile extraction filters)."""
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(packed) as tar:
        for member in tar.getmembers():
            if not (member.isfile() and member.name.startswith("package/")):
                continue
            name = PurePosixPath(member.name[len("package/"):])
            if name.is_absolute() or ".." in name.parts or not name.parts:
                raise SystemExit(f"lite/build.py: {packed.name} holds {member.name!r}, a path outside the package")
            dest = target.joinpath(*name.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as source, open(dest, "wb") as out:
                shutil.copyfileobj(source, out)


def pyodide(target: Path) -> None:
    """Pyodide's core from npm into the lite dir's static/pyodide/, its lock emptied of packages."""
    cache = ROOT / "build" / "lite-cache"
    packed = cache / f"pyodide-{PYODIDE}.tgz"
    if not packed.is_file():
        log(f"npm pack pyodide@{PYODIDE}")
        cache.mkdir(parents=True, exist_ok=True)
        done = run(["npm", "pack", f"pyodide@{PYODIDE}"], f"npm pack pyodide@{PYODIDE} (is npm installed?)",
                   cwd=cache)
        (cache / done.stdout.strip().splitlines()[-1]).rename(packed)
    unpack_npm(packed, target)
    lock = json.loads((target / "pyodide-lock.json").read_text())
    lock["packages"] = {}
    (target / "pyodide-lock.json").write_text(json.dumps(lock))


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def project_wheel(bin_dir: Path, wheels: Path) -> Path:
    """The project's wheel, its dependencies cut to `BROWSER_DEPENDENCIES` (METADATA and RECORD rewritten)."""
    scratch = WORK / "wheel"
    shutil.rmtree(scratch, ignore_errors=True)
    run([bin_dir / "python", "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", scratch, ROOT],
        "building the project's wheel")
    (built,) = scratch.glob("labsupport-*.whl")
    target = wheels / built.name
    with zipfile.ZipFile(built) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        rows = []
        record = next(n for n in source.namelist() if n.endswith(".dist-info/RECORD"))
        for item in source.infolist():
            if item.filename == record:
                continue
            data = source.read(item.filename)
            if item.filename.endswith(".dist-info/METADATA"):
                lines = [line for line in data.decode().split("\n") if not line.startswith("Requires-Dist:")]
                at = next(i for i, line in enumerate(lines) if line.startswith("Requires-Python:")) + 1
                lines[at:at] = [f"Requires-Dist: {dep}" for dep in BROWSER_DEPENDENCIES]
                data = "\n".join(lines).encode()
            out.writestr(item.filename, data)
            rows.append(_record_line(item.filename, data))
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([*rows, [record, "", ""]])
        out.writestr(record, text.getvalue())
    return target


def pyyaml_wheel(bin_dir: Path, wheels: Path) -> Path:
    """PyYAML as a pure wheel (`py3-none-any`) built from its sdist without the libyaml extension."""
    cache = ROOT / "build" / "lite-cache" / "pyyaml"
    found = sorted(cache.glob(f"pyyaml-{PYYAML}-py3-none-any.whl")) + sorted(cache.glob(f"PyYAML-{PYYAML}-*.whl"))
    if not found:
        log(f"PyYAML {PYYAML}: a pure wheel from the sdist")
        shutil.rmtree(cache, ignore_errors=True)
        run([bin_dir / "python", "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-binary", "pyyaml",
             f"pyyaml=={PYYAML}", "-w", cache], "building PyYAML from its sdist",
            env={**os.environ, "PYYAML_FORCE_LIBYAML": "0"})
        found = sorted(cache.glob("*.whl"))
    (wheel,) = found
    if not wheel.name.endswith("-py3-none-any.whl"):
        raise BuildError(f"[lite] PyYAML built as {wheel.name}, not a pure wheel: the tab cannot load it")
    shutil.copy(wheel, wheels / wheel.name)
    return wheels / wheel.name


def lessons(chosen: list[str] | None) -> dict[str, str]:
    """{path in the site: path in the repository} for each lesson of both editions (or the ones chosen)."""
    out = {}
    for edition, folder in (("", ROOT / "notebooks"), ("ru/", ROOT / "notebooks" / "ru")):
        for notebook in sorted(folder.glob("[0-9][0-9]-*.ipynb")):
            if chosen is None or notebook.stem in chosen:
                out[edition + notebook.name] = str(notebook.relative_to(ROOT))
    return out


def contents(files: Path, chosen: list[str] | None) -> None:
    """The lessons and the pages beside them into the lite dir's files/."""
    shutil.rmtree(files, ignore_errors=True)
    for target, source in {**CONTENT, **lessons(chosen)}.items():
        (files / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / source, files / target)


def configure(lite_dir: Path) -> None:
    """jupyter-lite.json (the page) and jupyter_lite_config.json (the build) in the lite dir."""
    (lite_dir / "jupyter-lite.json").write_text(json.dumps({
        "jupyter-lite-schema-version": 0, "jupyter-config-data": PAGE_CONFIG}, indent=2))
    (lite_dir / "jupyter_lite_config.json").write_text(json.dumps({
        "LiteBuildConfig": {"apps": ["lab"], "no_sourcemaps": True, "no_unused_shared_packages": True},
        "PyodideLockAddon": {"enabled": True, "prefetch_extra": PREFETCH,
                             "excludes_extra": ["widgetsnbextension", "jupyterlab-widgets"]},
    }, indent=2))


def kubectl(site: Path) -> None:
    """The real kubectl for WebAssembly (`make kubectl-wasm`) into the site's static/kubectl/."""
    if not (KUBECTL_WASM / "kubectl.wasm").is_file():
        raise BuildError("[lite] build/kubectl-wasm/kubectl.wasm is missing: run `make kubectl-wasm` first")
    target = site / "static" / "kubectl"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(KUBECTL_WASM, target)


def page_scripts(site: Path) -> list[Path]:
    """`PAGE_SCRIPTS` into the site's static/page/, and a tag for each at the top of every app page's <head> (a page
    that loads the app's bundle); the pages changed."""
    target = site / "static" / "page"
    target.mkdir(parents=True, exist_ok=True)
    for name in PAGE_SCRIPTS:
        shutil.copy2(HERE / "page" / name, target / name)
    changed = []
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        if 'id="jupyter-lite-main"' not in html or "<head>" not in html:
            continue
        root = os.path.relpath(target, page.parent).replace(os.sep, "/")
        tags = "".join(f'\n    <script src="{root}/{name}"></script>' for name in PAGE_SCRIPTS)
        page.write_text(html.replace("<head>", "<head>" + tags, 1), encoding="utf-8")
        changed.append(page)
    if not changed:
        raise BuildError("[lite] no app page (an index.html that loads the app's bundle) to load lite/page/'s scripts")
    return changed


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lessons", help="only these lessons (comma-separated names such as 01-pods-are-mortal), "
                                          "for a quick build; default every lesson of both editions")
    args = parser.parse_args(argv)
    chosen = args.lessons.split(",") if args.lessons else os.environ.get("LABSUPPORT_LITE_LESSONS", "").split(",")
    chosen = [c for c in chosen if c] or None
    started = time.monotonic()
    bin_dir = tools()
    lite_dir = WORK / "site"
    shutil.rmtree(lite_dir, ignore_errors=True)
    wheels = WORK / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    pyodide(lite_dir / "static" / "pyodide")
    project_wheel(bin_dir, wheels)
    pyyaml_wheel(bin_dir, wheels)
    contents(lite_dir / "files", chosen)
    configure(lite_dir)
    shutil.rmtree(OUT, ignore_errors=True)
    log("jupyter lite build")
    specs = [f"--pyodide-lock-specs={spec}" for spec in ["labsupport", *BROWSER_DEPENDENCIES, *KERNEL_PACKAGES]]
    run([bin_dir / "jupyter", "lite", "build", "--lite-dir", lite_dir, "--output-dir", OUT,
         "--contents", lite_dir / "files", "--pyodide-lock", *specs,
         *[f"--pyodide-lock-wheels={wheel}" for wheel in sorted(wheels.glob("*.whl"))]],
        "jupyter lite build", cwd=lite_dir, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    kubectl(OUT)
    page_scripts(OUT)
    log(f"build/lite/: {size_of(OUT) / 2**20:.1f} MiB in {time.monotonic() - started:.0f} s "
        f"({len(lessons(chosen))} lessons); serve it with `make lite-serve`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
