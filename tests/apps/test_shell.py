"""The containers' shell: a real interpreter over the image's files, environment and network verbs."""
from __future__ import annotations

import pytest

from labsupport.apps import app_for
from labsupport.apps.container import ClusterDNS
from labsupport.apps.shell import ShellSyntaxError, parse
from labsupport.results import CurlResult, NslookupAnswer


class Env:
    """A pod's view of a tiny cluster: one Service `web` answering 'hello', nothing else."""

    def __init__(self):
        self.fetched = []

    def now(self):
        return 1767225600.0

    def nslookup(self, name):
        fqdn = name.rstrip(".") if name.endswith(".") else f"{name}.default.svc.cluster.local"
        if fqdn == "web.default.svc.cluster.local":
            return NslookupAnswer(["10.96.0.20"], "NOERROR", "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10#53\n\n"
                                  "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.0.20\n", fqdn)
        return NslookupAnswer([], "NXDOMAIN", f"Server:\t\t10.96.0.10\nAddress:\t10.96.0.10#53\n\n"
                              f"** server can't find {name.rstrip('.')}: NXDOMAIN\n", fqdn)

    def fetch(self, url):
        self.fetched.append(url)
        if "://web" in url or "10.244.1.5" in url:
            return CurlResult(url, "pod", status=200, body="hello\n")
        return CurlResult(url, "pod", error="curl: (6) Could not resolve host: nope", exit_code=6)

    def pod_ip(self):
        return "10.244.1.5"

    def services(self):
        return [{"metadata": {"name": "web", "namespace": "default"},
                 "spec": {"clusterIP": "10.96.0.20", "ports": [{"port": 80, "protocol": "TCP"}]}}]

    def cluster_dns(self):
        return ClusterDNS()


def container(image, env=None):
    pod = {"metadata": {"name": "box", "namespace": "default"}, "spec": {"containers": []}}
    return app_for(pod, {"name": "c", "image": image, "command": ["sleep", "3600"]}, env or Env())


def run(image, script, env=None):
    app = container(image, env)
    return app, app.shell().run(script)


def test_pipes_lists_and_exit_codes():
    _, r = run("busybox", "echo one two | wc -w; false || echo fallback && echo $?; false; echo status=$?")
    assert r.stdout == "2\nfallback\n0\nstatus=1\n"
    _, r = run("busybox", "false && echo never")
    assert r.code == 1 and r.stdout == ""


def test_quotes_variables_and_command_substitution():
    _, r = run("busybox", "X='a  b'; echo \"$X\" $X '$X'; echo host=$(hostname) ${UNSET:-dflt}")
    assert r.stdout == "a  b a b $X\nhost=box dflt\n"


def test_redirection_into_the_containers_files():
    app, r = run("busybox", "echo hi > /tmp/f; echo more >> /tmp/f; cat < /tmp/f; ls /tmp; cat /nope 2>&1")
    assert r.stdout == "hi\nmore\ntmp_placeholder\n".replace("tmp_placeholder", "f") + \
        "cat: can't open '/nope': No such file or directory\n"
    assert app.files["/tmp/f"] == "hi\nmore\n"


def test_the_kubelet_files_and_environment():
    _, r = run("busybox", "cat /etc/resolv.conf; grep box /etc/hosts; env | grep WEB_SERVICE_HOST; cd /etc; pwd")
    assert r.stdout == ("search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n"
                        "options ndots:5\n10.244.1.5\tbox\nWEB_SERVICE_HOST=10.96.0.20\n/etc\n")


def test_busybox_has_wget_and_busybox_nslookup_but_no_curl():
    _, r = run("busybox", "wget -qO- http://web")
    assert r.code == 0 and r.stdout == "hello\n"
    _, r = run("busybox", "nslookup web")
    assert r.stdout == ("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n"
                        "Name:\tweb.default.svc.cluster.local\nAddress: 10.96.0.20\n\n"
                        "** server can't find web.svc.cluster.local: NXDOMAIN\n\n"
                        "** server can't find web.cluster.local: NXDOMAIN\n\n"
                        "** server can't find web: NXDOMAIN\n\n")
    _, r = run("busybox", "nslookup nope")
    assert r.code == 0 and "** server can't find nope.default.svc.cluster.local: NXDOMAIN\n\n" in r.stdout
    _, r = run("busybox", "nslookup web.default.svc.cluster.local.")
    assert r.stdout.endswith("Address:\t10.96.0.10:53\n\nName:\tweb.default.svc.cluster.local\n"
                             "Address: 10.96.0.20\n\n")
    _, r = run("busybox", "curl web")
    assert r.code == 127 and r.stderr == "sh: curl: not found\n"


def test_dnsutils_nslookup_is_binds():
    _, r = run("registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7", "nslookup web")
    assert r.stdout.startswith("Server:\t\t10.96.0.10\nAddress:\t10.96.0.10#53\n")


def test_nginx_has_curl_and_its_files():
    _, r = run("nginx:1.27", "curl -s -o /dev/null -w '%{http_code}' http://web; echo; head -1 "
                             "/usr/share/nginx/html/index.html; grep -c listen /etc/nginx/conf.d/default.conf")
    assert r.stdout == "200\n<!DOCTYPE html>\n2\n"
    _, r = run("nginx:1.27", "wget web")
    assert r.code == 127


def test_curl_failures_are_curls():
    _, r = run("nginx:1.27", "curl http://nope; echo code=$?")
    assert r.stdout == "code=6\n" and r.stderr == "curl: (6) Could not resolve host: nope\n"
    _, r = run("nginx:1.27", "curl -s -w '%{http_code}' http://nope")
    assert r.stdout == "000" and r.stderr == ""


def test_localhost_is_the_pods_own_address():
    env = Env()
    _, r = run("nginx:1.27", "curl -s localhost:80/", env)
    assert r.stdout == "hello\n" and env.fetched == ["http://10.244.1.5:80/"]


def test_exec_of_a_missing_program_fails_as_the_runtime_says():
    app = container("nginx:1.27")
    result = app.exec(["nslookup", "web"])
    assert result.code == 126 and 'exec: "nslookup": executable file not found in $PATH' in result.stdout


def test_exit_and_syntax_errors():
    app = container("busybox")
    sh = app.shell()
    assert sh.run("echo a; exit 3; echo b").stdout == "a\n" and sh.exited == 3
    assert app.shell().run("echo 'open").code == 2
    with pytest.raises(ShellSyntaxError):
        parse("| wc")


def test_wget_says_where_it_connects_and_what_it_wrote():
    app, r = run("busybox", "wget http://web/; cat index.html; wget -O- web")
    assert r.stderr.startswith("Connecting to web (10.96.0.20:80)\nsaving to 'index.html'\n")
    assert "Connecting to web (10.96.0.20:80)\nwriting to stdout\n" in r.stderr
    assert r.stderr.endswith("written to stdout\n")
    assert r.stdout == "hello\nhello\n" and app.files["/index.html"] == "hello\n"
    _, r = run("busybox", "wget -q nope")
    assert r.code == 1 and r.stderr == "wget: bad address 'nope'\n"


def test_a_terminal_shows_each_commands_output_in_order():
    _, r = run("busybox", "cat /nope; echo after")
    assert r.shown == "cat: can't open '/nope': No such file or directory\nafter\n"


def test_loops_and_conditionals():
    _, r = run("busybox", "for i in $(seq 3); do echo n=$i; done; for w in a 'b c'; do echo \"$w\"; done")
    assert r.stdout == "n=1\nn=2\nn=3\na\nb c\n"
    _, r = run("busybox", "i=0; while [ $i -lt 3 ]; do echo $i; i=$((i + 1)); done; echo $((7 / 2)) $((2 * $i))")
    assert r.stdout == "0\n1\n2\n3 6\n"
    _, r = run("busybox", "if grep -q box /etc/hosts; then echo found; else echo missing; fi")
    assert r.stdout == "found\n"
    _, r = run("busybox", "if false; then echo a; elif true; then echo b; else echo c; fi; echo $?")
    assert r.stdout == "b\n0\n"
    _, r = run("busybox", "for i in 1 2 3 4; do if [ $i = 3 ]; then break; fi; echo $i; done")
    assert r.stdout == "1\n2\n"
    _, r = run("busybox", "for i in 1 2 3; do [ $i = 2 ] && continue; echo $i; done")
    assert r.stdout == "1\n3\n"


def test_a_load_balancing_loop_reaches_the_service_each_round():
    env = Env()
    _, r = run("busybox", "for i in 1 2 3; do wget -qO- http://web/; done", env)
    assert r.stdout == "hello\n" * 3 and len(env.fetched) == 3


def test_an_endless_loop_is_stopped():
    _, r = run("busybox", "while true; do :; done")
    assert r.code == 130 and r.stderr == "sh: loop stopped after 1000 rounds\n"


def test_unfinished_compound_commands_are_syntax_errors():
    _, r = run("busybox", "for i in 1 2; do echo $i")
    assert r.code == 2 and r.stderr == 'sh: syntax error: unexpected end of file (expecting "done")\n'
    _, r = run("busybox", "echo done; fi")
    assert r.code == 2 and 'unexpected "fi"' in r.stderr


def test_endless_loops_are_recognised_with_their_period():
    from labsupport.apps.loops import endless_loop
    loop = endless_loop("echo hi; while true; do wget -qO- web; sleep 2; sleep 0.5; done")
    assert loop is not None and loop.period == 2.5 and len(loop.setup) == 1
    assert endless_loop("while :; do date; done").period == 1.0
    assert endless_loop("while [ -f /tmp/x ]; do sleep 1; done") is None
    assert endless_loop("for i in 1 2; do echo $i; done") is None
    assert endless_loop("while true; do") is None
