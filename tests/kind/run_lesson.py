"""Run one lesson notebook top to bottom and save it with its outputs: `python -m tests.kind.run_lesson IN OUT`.

The kind tier runs several lessons at once, each in a process of its own with its own environment (the cluster and
namespace its `Lab()` finds through LABSUPPORT_KIND_*); exit code 0 when every cell ran, 1 when one failed (the
saved notebook holds the error), 2 on bad arguments.
"""
from __future__ import annotations

import pathlib
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

#: The longest one cell may take on a loaded machine.
CELL_TIMEOUT = 600


def main(argv: list[str]) -> int:
    """Execute argv[0] in its own folder's copy, write the result to argv[1]."""
    if len(argv) != 2:
        print("usage: python -m tests.kind.run_lesson NOTEBOOK OUT", file=sys.stderr)
        return 2
    source, out = pathlib.Path(argv[0]), pathlib.Path(argv[1])
    nb = nbformat.read(source, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(out.parent)}})
    try:
        client.execute()
        code = 0
    except (CellExecutionError, CellTimeoutError) as e:
        print(str(e)[-2000:], file=sys.stderr)
        code = 1
    nbformat.write(nb, out)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
