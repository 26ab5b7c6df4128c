"""A lesson never closes its lab: when the notebook's kernel shuts down, a netns lab still leaves nothing behind."""
from __future__ import annotations

import subprocess

import pytest

from labsupport.testing import require_kernel

pytestmark = pytest.mark.kernel


def namespaces_of(pid: int) -> list[str]:
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listing.splitlines() if line.startswith(f"lsk-{pid}-")]


def test_shutting_the_kernel_down_removes_the_netns_lab():
    require_kernel("nft", "iptables-restore", "conntrack")
    from jupyter_client.manager import start_new_kernel
    manager, client = start_new_kernel(kernel_name="python3")
    pid, outputs = None, []
    try:
        reply = client.execute_interactive(
            "import os\nfrom labsupport import Lab\nlab = Lab(backend='netns')\ngraph = lab.graph()\n"
            "print('PID', os.getpid())", timeout=300, output_hook=lambda msg: outputs.append(msg))
        assert reply["content"]["status"] == "ok", reply["content"]
        pid = int(next(m["content"]["text"].split()[1] for m in outputs
                       if m["msg_type"] == "stream" and "PID" in m["content"]["text"]))
        assert namespaces_of(pid), "the lab made no namespaces"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)          # what Kernel ▸ Shut Down Kernel asks for
    left = namespaces_of(pid) if pid else []
    for name in left:                               # only this kernel's own, if the test fails
        subprocess.run(["ip", "netns", "delete", name], capture_output=True)
    assert not left, f"the kernel's shutdown left {len(left)} namespaces: {left[:3]}"

