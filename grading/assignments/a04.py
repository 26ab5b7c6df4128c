"""Assignment 4: reading kube-proxy's rules in iptables mode, and the same Service in nftables and IPVS."""
from grading.build_source import Notebook, code, graph_cell, locked, md, setup, solution, task, tests

WEB = '''WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx:1.27, ports: [{containerPort: 80, name: http}]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 80}]
"""
lab.apply(WEB)
lab.scale("web", task.replicas)   # your number of replicas
lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == task.replicas)
lab.get("svc", "web")["spec"]["clusterIP"]'''


def notebook() -> Notebook:
    """The notebook."""
    return Notebook("04-kube-proxy-rules", "rules", "Assignment 4: reading kube-proxy's rules", [
        md("""
kube-proxy does not carry packets. It watches Services and EndpointSlices and writes rules into each node's
kernel; the kernel rewrites a packet sent to a ClusterIP into a packet to one pod. `lab.proxy_rules(node)` prints
those rules exactly as the node shows them: `iptables-save`, `nft list ruleset`, or `ipvsadm -Ln` with the few
iptables rules IPVS still needs. Here you read them, in all three modes."""),
        setup(),
        *task("04-kube-proxy-rules"),
        md("The cell below runs `web` with your number of replicas (`task.replicas`) behind a ClusterIP Service."),
        locked("provided-web", WEB),
        md("""
## Exercise 1: the Service's chain (2 points)

Set `rules` to `lab.proxy_rules("lab-worker")` (iptables mode). In the `nat` table, the chain `KUBE-SERVICES` has
one rule per Service port, commented `"<namespace>/<service>:<port name> cluster IP"`, jumping to that port's
`KUBE-SVC-…` chain. Set `svc_chain` to the name of the chain for `default/web:http`, found with code, not
copied by hand (the name is a hash, and you will need the code again)."""),
        code('rules = lab.proxy_rules("lab-worker")\nprint("\\n".join(l for l in rules.splitlines() if "web" in l))'),
        solution("service-chain", '''
import re

rules = lab.proxy_rules("lab-worker")
line = next(l for l in rules.splitlines()
            if l.startswith("-A KUBE-SERVICES") and '"default/web:http cluster IP"' in l)
svc_chain = re.search(r"-j (\\S+)", line).group(1)''', after="svc_chain"),
        tests("service-chain-test", 2, '''
checks.service_chain(svc_chain, lab, "web", node="lab-worker")'''),
        md("""
## Exercise 2: one chain per endpoint (1 point)

The `KUBE-SVC-…` chain first marks traffic from outside the pod network for masquerading, then has one rule per
endpoint, each jumping to a `KUBE-SEP-…` chain that DNATs to that pod. Set `sep_chains` to the list of those
`KUBE-SEP-…` names, in the order of the rules."""),
        solution("endpoint-chains", '''
svc_rules = [l for l in rules.splitlines() if l.startswith(f"-A {svc_chain} ")]
sep_chains = [re.search(r"-j (KUBE-SEP-\\S+)", l).group(1) for l in svc_rules if "KUBE-SEP-" in l]''',
                 after="sep_chains"),
        tests("endpoint-chains-test", 1, '''
checks.slice_has_ready_addresses(lab, "web", task.replicas)
checks.endpoint_chains(sep_chains, lab, "web", node="lab-worker")'''),
        md("""
## Exercise 3: the probabilities (3 points)

Each endpoint rule but the last carries `-m statistic --mode random --probability p`. Set `probabilities` to the
list of `p` for each rule in order, using `1.0` for the last rule (it has no statistic match: whatever reaches it
matches). Then set `shares` to the overall fraction of new connections each endpoint gets: a rule only sees the
connections that every rule before it let through."""),
        solution("probabilities", '''
probabilities = []
for l in svc_rules:
    if "KUBE-SEP-" in l:
        m = re.search(r"--probability ([0-9.]+)", l)
        probabilities.append(float(m.group(1)) if m else 1.0)
shares, left = [], 1.0
for p in probabilities:
    shares.append(left * p)
    left *= 1 - p''', after="probabilities, shares"),
        tests("probabilities-test", 2, '''
checks.slice_has_ready_addresses(lab, "web", task.replicas)
checks.probabilities(probabilities, lab, "web", node="lab-worker")'''),
        tests("shares-test", 1, '''
assert len(shares) == task.replicas, "one share per endpoint"''', hidden='''
checks.equal_shares(shares, task.replicas)'''),
        md("""
## Exercise 4: scale out (2 points)

Scale `web` to your new number of replicas (`task.scale_to`) and wait until the Service has that many ready
addresses. Without reading the new rules first, compute the probabilities kube-proxy now writes into the chain
(rule `i`, from 0, of `N`), as `probabilities_scaled`. Then print the new chain and compare."""),
        solution("five", '''
lab.scale("web", task.scale_to)
lab.wait(lambda l: len(checks.ready_addresses(l, "web")) == task.scale_to)
probabilities_scaled = [1 / (task.scale_to - i) for i in range(task.scale_to)]''', after="probabilities_scaled"),
        tests("five-test", 2, '''
checks.slice_has_ready_addresses(lab, "web", task.scale_to)
checks.probabilities(probabilities_scaled, lab, "web", node="lab-worker")'''),
        md("""
## Exercise 5: the same Service in nftables mode (2 points)

Switch kube-proxy to nftables with `lab.set_proxy_mode("nftables")` (it edits the `kube-proxy` ConfigMap and
restarts the kube-proxy pods, as on a real cluster). In the new rules there is no chain of probabilities to walk:
the Service's chain `service-…-default/web/tcp/http` DNATs to a random endpoint with one rule,
`meta l4proto tcp dnat ip addr . port to numgen random mod N map { … }`. Set `numgen_rule` to that line of
`lab.proxy_rules("lab-worker")`."""),
        solution("nftables", '''
lab.set_proxy_mode("nftables")
nft_rules = lab.proxy_rules("lab-worker")
numgen_rule = next(l for l in nft_rules.splitlines() if "default/web/tcp/http " in l and "numgen" in l)''',
                 after="numgen_rule"),
        tests("nftables-test", 2, '''
checks.nft_numgen(numgen_rule, lab, "web", node="lab-worker")''', hidden='''
assert f"numgen random mod {task.scale_to} map" in numgen_rule, f"{task.scale_to} endpoints: mod {task.scale_to}"'''),
        md("""
## Exercise 6: and in IPVS mode (3 points)

Switch to IPVS (`lab.set_proxy_mode("ipvs")`). Each ClusterIP:port becomes an IPVS virtual server with the pods
as real servers; `ipvsadm -Ln` lists them. Set `real_servers` to the list of `ip:port` real servers of `web`'s
virtual server, and `scheduler` to the scheduler it uses (the word after the virtual server's address)."""),
        solution("ipvs", '''
lab.set_proxy_mode("ipvs")
ipvs_rules = lab.proxy_rules("lab-worker")
vip = lab.get("svc", "web")["spec"]["clusterIP"]
lines = ipvs_rules.splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith(f"TCP  {vip}:80 "))
scheduler = lines[start].split()[-1]
real_servers = []
for l in lines[start + 1:]:
    if not l.startswith("  -> "):
        break
    real_servers.append(l.split()[1])''', after="real_servers, scheduler"),
        tests("ipvs-test", 2, '''
checks.slice_has_ready_addresses(lab, "web", task.scale_to)
checks.ipvs_real_servers(real_servers, lab, "web", node="lab-worker")'''),
        tests("ipvs-scheduler-test", 1, '''
assert isinstance(scheduler, str), "scheduler should be a string such as the one ipvsadm prints"''', hidden='''
checks.choice(scheduler, "rr", ["rr", "wrr", "lc", "wlc", "sh", "dh", "mh", "random"])'''),
        md("""
## Exercise 7: which modes scale? (2 points)

Set `constant_lookup` to the set of modes, among `"iptables"`, `"nftables"` and `"ipvs"`, in which finding the
Service for a new connection does *not* mean walking a list of rules that grows with the number of Services."""),
        solution("lookup", 'constant_lookup = {"nftables", "ipvs"}', after="constant_lookup"),
        tests("lookup-test", 2, '''
assert isinstance(constant_lookup, (set, list, tuple)), "answer with a set of mode names"''', hidden='''
checks.choices(constant_lookup, {"nftables", "ipvs"}, ["iptables", "nftables", "ipvs"])'''),
        *graph_cell(),
    ])
