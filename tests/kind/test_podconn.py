"""The pieces of a keep-alive connection from a pod that need no cluster: finding nc's socket in /proc, reading nc's
failures in curl's words, and the pipe to a running command that carries the HTTP bytes."""
from __future__ import annotations

import sys
import time

import pytest

from labsupport import tool_output
from labsupport.httpstream import ResponseReader, StreamEnded, request_bytes
from labsupport.kind.podconn import PipeStream, nc_failure

#: `ls -l /proc/<pid>/fd` of busybox's nc holding one connection (busybox's ls, as in the busybox image).
FDS = """total 0
lr-x------    1 root     root            64 Dec  6 01:40 0 -> pipe:[391022]
l-wx------    1 root     root            64 Dec  6 01:40 1 -> pipe:[391023]
l-wx------    1 root     root            64 Dec  6 01:40 2 -> pipe:[391024]
lrwx------    1 root     root            64 Dec  6 01:40 3 -> socket:[390551]
"""
#: /proc/net/tcp and tcp6 of the client pod 10.244.2.5: nc's connection to a ClusterIP, an older TIME_WAIT one to
#: the same address, and a listener of a sidecar on [::]:8080.
TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0502F40A:A3C2 7B6C600A:0050 06 00000000:00000000 03:00000F2A 00000000     0        0 0 3 0000000000000000
   1: 0502F40A:B1E6 7B6C600A:0050 01 00000000:00000000 00:00000000 00000000     0        0 390551 1 00000000a1b2c3d4 20 4 30 10 -1
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 388001 1 00000000deadbeef 100 0 0 10 0
   1: 0000000000000000FFFF00000502F40A:1F90 0000000000000000FFFF00000102F40A:D431 01 00000000:00000000 00:00000000 00000000     0        0 388002 1 00000000feedface 20 4 30 10 -1
"""


def test_proc_net_tcp_reads_both_ends_state_and_inode():
    sockets = tool_output.parse_proc_net_tcp(TCP)
    assert [(s.local_ip, s.local_port, s.remote_ip, s.remote_port, s.state, s.inode) for s in sockets] == [
        ("10.244.2.5", 41922, "10.96.108.123", 80, "TIME-WAIT", 0),
        ("10.244.2.5", 45542, "10.96.108.123", 80, "ESTAB", 390551),
        ("::", 8080, "::", 0, "LISTEN", 388001),
        ("10.244.2.5", 8080, "10.244.2.1", 54321, "ESTAB", 388002),
    ]


def test_the_socket_a_process_holds_is_found_by_its_inode():
    found = tool_output.process_socket(FDS, TCP)
    assert found is not None and (found.local_ip, found.local_port, found.state) == ("10.244.2.5", 45542, "ESTAB")


def test_a_process_without_a_socket_holds_none():
    assert tool_output.socket_inodes(FDS.replace("socket:[390551]", "/dev/null")) == []
    assert tool_output.process_socket(FDS.replace("socket:[390551]", "/dev/null"), TCP) is None
    assert tool_output.process_socket(FDS, "") is None, "a socket missing from the tables was invented"


@pytest.mark.parametrize("said,code,line", [
    ("nc: can't connect to remote host (10.96.0.44): Connection refused\n", 7,
     "curl: (7) Failed to connect to web port 80 after 12 ms: Couldn't connect to server"),
    ("nc: connect to web port 80 (tcp) failed: Connection refused\n", 7,
     "curl: (7) Failed to connect to web port 80 after 12 ms: Couldn't connect to server"),
    ("nc: bad address 'web'\n", 6, "curl: (6) Could not resolve host: web"),
    ("nc: getaddrinfo for host \"web\" port 80: Name or service not known\n", 6,
     "curl: (6) Could not resolve host: web"),
    ("nc: timed out\n", 28, "curl: (28) Failed to connect to web port 80 after 12 ms: Timeout was reached"),
])
def test_nc_failures_read_as_curl_reports_them(said, code, line):
    assert nc_failure(said, "web", 80, 12) == (code, line)


def test_an_nc_that_said_nothing_connected():
    assert nc_failure("", "web", 80, 12) is None


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


#: A command that answers every request line it reads with one HTTP response, on one stream, until its input ends.
ECHO_SERVER = python(
    "import sys\n"
    "n = 0\n"
    "for line in sys.stdin.buffer:\n"
    "    if line.startswith(b'GET '):\n"
    "        n += 1\n"
    "        body = b'answer %d to ' % n + line.split()[1]\n"
    "        sys.stdout.buffer.write(b'HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n%x\\r\\n%s\\r\\n0\\r\\n\\r\\n'"
    " % (len(body), body))\n"
    "        sys.stdout.buffer.flush()\n")


def test_requests_and_responses_ride_one_running_command_in_turn():
    stream = PipeStream(ECHO_SERVER, None)
    reader = ResponseReader(stream.receive)
    try:
        answers = []
        for path in ("/a", "/b", "/c"):
            stream.deadline = time.monotonic() + 20
            assert stream.send(request_bytes("GET", path, "web"))
            answers.append(reader.read().text)
        assert answers == ["answer 1 to /a", "answer 2 to /b", "answer 3 to /c"]
        stream.end_input()
        assert stream.wait(20) == 0
        with pytest.raises(StreamEnded):
            reader.read()
        assert not stream.send(b"GET / HTTP/1.1\r\n\r\n") or stream.ended
    finally:
        stream.stop()


def test_a_silent_command_times_the_read_out_and_its_stderr_is_kept():
    stream = PipeStream(python("import sys, time\nsys.stderr.write('nc: timed out\\n')\nsys.stderr.flush()\n"
                               "time.sleep(30)"), None)
    try:
        stream.deadline = time.monotonic() + 0.5
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            stream.receive()
        assert 0.4 < time.monotonic() - started < 10
        assert stream.wait(0.1) is None
    finally:
        stream.stop()
    assert stream.ended and stream.stderr() == "nc: timed out\n"


def test_a_missing_program_is_named():
    from labsupport.errors import BackendUnavailable
    with pytest.raises(BackendUnavailable, match="kubectl is not installed"):
        PipeStream(["/nonexistent/kubectl", "exec"], None)
