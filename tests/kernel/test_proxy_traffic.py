"""Real connections through the loaded rules, inside one fresh namespace (node, endpoint and client all local)."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from labsupport.proxy import KubeProxy

from labsupport.testing import require_kernel
from tests.proxy.fixtures import GOLDEN_CONFIG, node, scenario, two_services

pytestmark = pytest.mark.kernel

SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8); s.settimeout(10)
print("ready", flush=True)
while True:
    try:
        c, peer = s.accept()
    except socket.timeout:
        break
    c.sendall(("%s:%d from %s" % (sys.argv[1], int(sys.argv[2]), peer[0])).encode()); c.close()
"""

CLIENT = """
import socket, sys
s = socket.socket(); s.settimeout(3)
try:
    s.connect((sys.argv[1], int(sys.argv[2]))); print(s.recv(200).decode())
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")
"""


def prepare(netns) -> None:
    """lo up; a veth pair (both ends here) holding the node IP and endpoint IPs; the service range routed to it."""
    netns.run("ip", "link", "set", "lo", "up")
    netns.run("ip", "link", "add", "lsk0", "type", "veth", "peer", "name", "lsk1")
    netns.run("ip", "link", "set", "lsk0", "up")
    netns.run("ip", "link", "set", "lsk1", "up")
    for address in ("192.168.0.2/24", "10.0.1.1/32", "10.0.2.1/32"):
        netns.run("ip", "addr", "add", address, "dev", "lsk0")
    netns.run("ip", "route", "add", "172.30.0.0/16", "dev", "lsk0")


def serve(netns, ip: str, port: int) -> subprocess.Popen:
    """Start a one-line TCP server inside the namespace."""
    proc = subprocess.Popen(["ip", "netns", "exec", netns.name, sys.executable, "-c", SERVER, ip, str(port)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def connect(netns, ip: str, port: int) -> str:
    """Connect from inside the namespace; the server's answer, "refused" or "timeout"."""
    return netns.run(sys.executable, "-c", CLIENT, ip, str(port)).stdout.strip()


def load(netns, mode: str, kp: KubeProxy, services, slices) -> None:
    """Sync and write the rules into the namespace the way a node would."""
    kp.sync(services, slices)
    if mode == "iptables":
        netns.run("iptables-restore", input=kp.rules_with_jumps)
    else:
        netns.run("nft", "-f", "-", input=kp.rules)


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_cluster_ip_reaches_endpoint_and_no_endpoints_is_refused(netns, mode):
    require_kernel("iptables-restore", "nft")
    prepare(netns)
    services, slices = two_services()
    kp = KubeProxy(node(), mode, GOLDEN_CONFIG, service_cidrs=("172.30.0.0/16",))
    load(netns, mode, kp, services, slices)
    servers = [serve(netns, "10.0.1.1", 80), serve(netns, "10.0.2.1", 8080)]
    try:
        assert connect(netns, "172.30.0.41", 80).startswith("10.0.1.1:80 from ")
        assert connect(netns, "172.30.0.42", 8080).startswith("10.0.2.1:8080 from ")
        empty = [slices[0], dict(slices[1], endpoints=[])]
        if mode == "iptables":
            netns.run("iptables-restore", "--noflush", input=kp.sync(services, empty).text)
        else:
            netns.run("nft", "-f", "-", input=kp.sync(services, empty).text)
        start = time.monotonic()
        assert connect(netns, "172.30.0.42", 8080) == "refused"
        assert time.monotonic() - start < 2
        assert connect(netns, "172.30.0.41", 80).startswith("10.0.1.1:80")
    finally:
        for proc in servers:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_affinity_keeps_a_client_on_one_endpoint(netns, mode):
    require_kernel("iptables-restore", "nft")
    prepare(netns)
    services, slices = scenario("affinity")
    kp = KubeProxy(node(), mode, GOLDEN_CONFIG, service_cidrs=("172.30.0.0/16",))
    load(netns, mode, kp, services, slices)
    servers = [serve(netns, "10.0.1.1", 80), serve(netns, "10.0.2.1", 80)]
    try:
        answers = {connect(netns, "172.30.0.41", 80).split(" from ")[0] for _ in range(6)}
        assert len(answers) == 1 and answers <= {"10.0.1.1:80", "10.0.2.1:80"}
    finally:
        for proc in servers:
            proc.kill()
            proc.wait()
