"""runc, minus CAP_SYS_RESOURCE: for hosts whose root lacks that capability in its bounding set.

dockerd runs this as its default runtime (see engine.py). Before handing over to the real runc it removes the
capability from the container's config.json (`create`, `run`) or from an exec's process file (`exec --process`),
since runc cannot grant a capability the host does not have. Runs on the host's Python, standard library only.
"""
import json
import os
import sys

CAPABILITY = "CAP_SYS_RESOURCE"
RUNC = os.environ.get("LABSUPPORT_REAL_RUNC", "runc")


def option(argv, name):
    """The value of `--name value` or `--name=value` in argv, or None."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def drop(process):
    """Remove the capability from every set of an OCI process object."""
    caps = process.get("capabilities") or {}
    for key in ("bounding", "effective", "inheritable", "permitted", "ambient"):
        if key in caps:
            caps[key] = [c for c in caps[key] if c != CAPABILITY]


def rewrite(path, process_only):
    """Rewrite a config.json (or an exec's process.json) in place without the capability."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return
    drop(doc if process_only else doc.get("process") or {})
    with open(path, "w") as f:
        json.dump(doc, f)


def main(argv):
    """Rewrite what the subcommand reads, then become the real runc."""
    if "create" in argv or "run" in argv:
        bundle = option(argv, "--bundle") or option(argv, "-b") or "."
        rewrite(os.path.join(bundle, "config.json"), False)
    elif "exec" in argv:
        process = option(argv, "--process") or option(argv, "-p")
        if process:
            rewrite(process, True)
    os.execvp(RUNC, [RUNC, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
