"""The sandbox a graded kernel runs in, tried directly: what code inside can see, write, reach and use."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from labsupport.grading.sandbox import Limits, Sandbox, SandboxUnavailable, problems, require as require_sandbox
from labsupport.testing import require

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROBE = r'''
import json, os, resource, socket
out = {"uid": os.getuid(), "cwd": os.getcwd(), "files": sorted(os.listdir("."))}
out["sees_grading"] = os.path.exists(ROOT + "/grading/source")
out["sees_home"] = sorted(os.listdir(os.path.expanduser("~root"))) if os.path.isdir(os.path.expanduser("~root")) else []
try:
    open(ROOT + "/labsupport/written-from-the-sandbox", "w")
    out["writes_package"] = True
except OSError:
    out["writes_package"] = False
open("answer.txt", "w").write("mine")
out["answer"] = open("answer.txt").read()
try:
    open("/etc/shadow").read()
    out["shadow"] = True
except OSError:
    out["shadow"] = False
written = 0
try:
    for n in range(40):
        with open(f"fill-{n}", "wb") as f:
            f.write(b"x" * (7 * 2**20))
        written += 7
except OSError:
    pass
out["work_mib"] = written
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
    out["network"] = True
except OSError:
    out["network"] = False
out["pid1"] = open("/proc/1/cmdline").read().split("\0")[0]
out["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
out["fds"] = sorted(int(f) for f in os.listdir("/proc/self/fd"))
hog = []
try:
    while True:
        hog.append(bytearray(32 * 2**20))
except MemoryError:
    out["memory_mib"] = len(hog) * 32
hog = None
children = 0
try:
    while children < 1000:
        pid = os.fork()
        if pid == 0:
            import time
            time.sleep(30)
            os._exit(0)
        children += 1
except OSError:
    pass
out["children"] = children
try:
    with open("/tmp/big", "wb") as f:
        f.write(b"x" * (9 * 2**20))
    out["big_file"] = True
except OSError:
    out["big_file"] = False
print(json.dumps(out))
'''


@pytest.fixture
def sandbox(tmp_path):
    """A sandbox around a one-file submission, with small limits; removed after the test."""
    require(problems(), "sandboxed grading")
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "notebook.ipynb").write_text("{}")
    box = Sandbox(submission, Limits(memory=512 * 2**20, processes=32, files=64, file_size=8 * 2**20,
                                     work_size=64 * 2**20))
    yield box
    box.close()
    assert not box.root.exists()


def test_code_in_the_sandbox_sees_and_reaches_only_its_own(sandbox, tmp_path):
    listener = __import__("socket").socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    code = PROBE.replace("ROOT", repr(str(ROOT))).replace("PORT", str(listener.getsockname()[1]))
    proc = subprocess.run(sandbox.wrap([sys.executable, "-c", code]), capture_output=True, text=True, timeout=120)
    listener.close()
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    # an ordinary grader is nobody inside; root grades as an unprivileged uid of the sandbox's own
    assert out["uid"] == (65534 if sandbox.uid is None else sandbox.uid) and out["uid"] != 0
    assert out["cwd"] == str(sandbox.work) and out["files"] == ["notebook.ipynb"] and out["answer"] == "mine"
    assert out["shadow"] is False
    assert 0 < out["work_mib"] <= 64                       # its working directory is a tmpfs of its own size
    assert not out["sees_grading"] and not out["writes_package"] and not out["network"]
    assert out["sees_home"] in ([], [".pyenv"])           # at most the interpreter, when it lives there
    assert out["pid1"].endswith("bwrap") and len(out["processes"]) <= 3
    assert out["fds"] == [0, 1, 2, 3]                      # nothing of the grader's open files
    assert 0 < out["memory_mib"] < 512
    assert out["children"] < 32
    assert out["big_file"] is False
    assert not (sandbox.work / "answer.txt").exists()     # the working copy never was on the host's disk
    assert not (ROOT / "labsupport" / "written-from-the-sandbox").exists()


def test_grading_refuses_without_bubblewrap(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailable, match=r"sandbox, which needs bubblewrap \(not installed: `apt-get install bubblewrap`.*"
                                                 "LABSUPPORT_GRADING_SANDBOX=off"):
        require_sandbox()
