"""Assignment 6: the lesson's four review questions, checked where an answer can be checked."""
from grading.build_source import Notebook, answer, graph_cell, locked, md, setup, solution, task, tests

STS_DB = '''
# See for yourself: a headless Service `db` governing a StatefulSet `db` of three pods.
lab.apply("""
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432, targetPort: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: nginx:1.27}]
""")
lab.wait(lambda l: len(checks.ready_addresses(l, "db")) == 3, timeout=120)
lab.nslookup("db")'''


def notebook() -> Notebook:
    """The notebook."""
    return Notebook("06-review", "review", "Assignment 6: review questions", [
        md("""
Four questions about what you have seen. Numbers and choices are checked automatically (the checks are hidden:
the visible cells only check the form of your answer); the short written answers are read and graded by hand,
so answer in your own words, two to five sentences each."""),
        setup(),
        *task("06-review"),
        md("""
## Question 1: why do EndpointSlices scale better than one Endpoints object? (2 + 2 points)

A Service has 5,000 pods. Its one Endpoints object weighs about 1.5 MB. The cluster has 3,000 nodes, each running
a kube-proxy that watches it. One pod is replaced during a rolling update.

* `endpoints_bytes`: how many bytes the API server sends to all kube-proxies for this one change with the
  Endpoints object (the whole object goes to every watcher)?
* `slice_bytes`: the same with EndpointSlices of 100 endpoints each (assume the 1.5 MB splits evenly across
  the slices, and only the one changed slice goes out)?

These are the figures of the 2020 EndpointSlice blog post (about 300 B per endpoint), as in lesson 03. KEP-0752's
own sample case assumes about 100 B per endpoint on 5,000 nodes, which gives 50 MB: use the numbers given here."""),
        solution("q1-numbers", '''
endpoints_bytes = 1.5e6 * 3000
slice_bytes = 1.5e6 / (5000 / 100) * 3000''', after="endpoints_bytes, slice_bytes"),
        tests("q1-endpoints-test", 1, '''
assert isinstance(endpoints_bytes, (int, float)), "endpoints_bytes should be a number of bytes"''', hidden='''
checks.close_to(endpoints_bytes, 4.5e9, what="endpoints_bytes")'''),
        tests("q1-slices-test", 1, '''
assert isinstance(slice_bytes, (int, float)), "slice_bytes should be a number of bytes"''', hidden='''
checks.close_to(slice_bytes, 9e7, what="slice_bytes")'''),
        md("**Question 1, in words:** why do EndpointSlices scale better when pods change often?"),
        answer("q1-text", 2, "Why do EndpointSlices scale better than one Endpoints object when pods change often?", """
An Endpoints object holds every address of the Service, so any change to one pod rewrites the whole object in
etcd and sends all of it to every watcher (every kube-proxy): the cost of one change grows with the number of pods
times the number of nodes, and a rolling update repeats it for every pod. EndpointSlices shard the list into
objects of at most 100 endpoints; a change rewrites and ships only the slice that holds that pod, so the cost of a
change stays about 100 endpoints times the number of nodes however big the Service is.""", """
1 point: one object holds all endpoints, so each change resends the whole object to every kube-proxy (cost grows
with pods × nodes; etcd object size limit). 1 point: slices of up to 100 endpoints mean a change resends only one
slice (cost bounded by slice size × nodes)."""),
        md("""
## Question 2: why is lookup in IPVS or nftables better than iptables' list? (1 + 1 + 1 + 2 points)

* `iptables_rules_walked`: in iptables mode with your number of ClusterIP Services (`task.services`) of one port
  each, how many rules of `KUBE-SERVICES` does a new connection to the *last* Service in that chain pass
  through, roughly, before it matches? (One rule per Service port.)
* `nftables_lookups`: in nftables mode, how many lookups in the `service-ips` verdict map does the same
  connection need?
* `q2_choice`: which statement is right?
  - `"a"`: nftables compiles rules faster, but still tests them one by one
  - `"b"`: nftables and IPVS find the Service with a hash lookup on (destination IP, protocol, port), whose cost
    does not grow with the number of Services
  - `"c"`: IPVS and nftables bypass conntrack, so they need no per-connection state
  - `"d"`: IPVS and nftables move load balancing to user space"""),
        solution("q2-answers", '''
iptables_rules_walked = task.services
nftables_lookups = 1
q2_choice = "b"''', after="iptables_rules_walked, nftables_lookups, q2_choice"),
        tests("q2-walk-test", 1, '''
assert isinstance(iptables_rules_walked, (int, float)), "a number of rules"''', hidden='''
checks.close_to(iptables_rules_walked, task.services, relative=0.05, what="iptables_rules_walked")'''),
        tests("q2-lookup-test", 1, '''
assert isinstance(nftables_lookups, int), "a whole number of lookups"''', hidden='''
assert nftables_lookups == 1, "nftables_lookups is not right: look at the one rule of the services chain"'''),
        tests("q2-choice-test", 1, '''
assert q2_choice in ("a", "b", "c", "d"), "answer with one of 'a', 'b', 'c', 'd'"''', hidden='''
checks.choice(q2_choice, "b", "abcd")'''),
        md("**Question 2, in words:** why does this matter on large clusters, for packets and for rule updates?"),
        answer("q2-text", 2, "Why is the backend lookup of IPVS/nftables better than iptables' linear list on large "
               "clusters?", """
In iptables mode the kernel walks KUBE-SERVICES rule by rule, so a new connection's cost grows with the number of
Services (tens of thousands of rules on a big cluster). Updates are big too: since 1.28 a sync rewrites only the
chains of the Services that changed, but KUBE-SERVICES and KUBE-NODEPORTS are written whole every time, in one
iptables-restore under the xtables lock. IPVS keeps virtual servers in a hash table and nftables uses a verdict map
keyed on address, protocol and port: one lookup whatever the number of Services, and nftables updates only the
elements and chains that changed. iptables is still kube-proxy's default on Linux; nftables (GA since 1.33) is the
recommended mode but must be chosen (mode: nftables, or --proxy-mode); IPVS is deprecated.""", """
1 point: iptables is a linear walk (cost grows with the number of Services/rules) and/or every sync rewrites the
big shared chains (KUBE-SERVICES, KUBE-NODEPORTS; since 1.28 only changed Services' own chains are rewritten — an
answer claiming "the whole table every time" is outdated but still earns this point if the linear walk is there).
1 point: hash/map lookup in IPVS/nftables is constant-time, with incremental updates (nftables). Mentioning that
nftables is the recommended replacement earns no extra points; calling it the default is a factual error to
correct in the feedback (iptables is the default on Linux, nftables is opt-in), without losing the point. The 2017
"11 minutes at 5,000 Services" figure is history (full rewrites), not today's cost."""),
        md("""
## Question 3: what does `externalTrafficPolicy: Local` do, and at what price? (2 + 2 points)

`q3_true`: the set of true statements.
* `"a"`: the node that receives the traffic sends it only to pods on that node, without SNAT, so the app sees the
  client's IP
* `"b"`: Local forwards traffic to pods on other nodes without SNAT
* `"c"`: a node without a local pod of the Service drops the traffic for its nodePort
* `"d"`: with Local, traffic is spread evenly over the pods whatever the number each node runs
* `"e"`: cloud load balancers use the Service's `healthCheckNodePort` to skip nodes without local pods"""),
        solution("q3-answers", 'q3_true = {"a", "c", "e"}', after="q3_true"),
        tests("q3-test", 2, '''
assert isinstance(q3_true, (set, list, tuple)), "answer with a set of letters"''', hidden='''
checks.choices(q3_true, {"a", "c", "e"}, "abcde")'''),
        md("**Question 3, in words:** what does Local do and what does it cost?"),
        answer("q3-text", 2, "What exactly does externalTrafficPolicy: Local do, and at what price does it keep the "
               "client's source IP?", """
With Local, kube-proxy on a node sends external traffic (NodePort, LoadBalancer IPs) only to that node's own
pods of the Service, so it never has to forward to another node and never SNATs: the pod sees the client's address.
The price: a node with no local pod drops such traffic (the load balancer must avoid it, which it learns from
healthCheckNodePort), and the load is spread per node, not per pod, so pods on nodes with fewer replicas get
more traffic each.""", """
1 point: only local endpoints, no SNAT, hence the client IP is kept. 1 point: the cost: drops on nodes without
pods (and the need for health checks) and/or uneven spreading across pods."""),
        md("""
## Question 4: why headless Services, and why does a StatefulSet need one? (1 + 1 + 2 points)

* `q4_choice`: what does DNS answer for `db`, a headless Service with three ready pods?
  `"a"`: its ClusterIP; `"b"`: the three pods' IPs; `"c"`: the nodes' IPs; `"d"`: NXDOMAIN.
* `q4_name`: the full DNS name of your pod of a StatefulSet `db` whose `serviceName` is `db`: the pod that
  started as number `task.pod_number` (counting from one), in your namespace (`task.namespace`; cluster domain
  `cluster.local`).

The cell below shows such a StatefulSet (in `default`) if you want to check."""),
        locked("q4-demo", STS_DB),
        solution("q4-answers", '''
q4_choice = "b"
q4_name = f"db-{task.pod_number - 1}.db.{task.namespace}.svc.cluster.local"''', after="q4_choice, q4_name"),
        tests("q4-choice-test", 1, '''
assert q4_choice in ("a", "b", "c", "d"), "answer with one of 'a', 'b', 'c', 'd'"''', hidden='''
checks.choice(q4_choice, "b", "abcd")'''),
        tests("q4-name-test", 1, '''
assert isinstance(q4_name, str), "a DNS name"''', hidden='''
assert q4_name.rstrip(".") == f"db-{task.pod_number - 1}.db.{task.namespace}.svc.cluster.local", \\
    "not the right name: pods are numbered from 0, and the name is <pod>.<service>.<namespace>.svc.<domain>"'''),
        md("**Question 4, in words:** what is a headless Service for, and why can a StatefulSet not do without one?"),
        answer("q4-text", 2, "Why do we need headless Services, and why are they indispensable for StatefulSets?", """
A headless Service (clusterIP: None) gets no virtual IP and no kube-proxy rules: DNS answers with the ready pods'
own addresses, so clients that need particular pods (or do their own balancing) can find them: discovery without
proxying. A StatefulSet's pods are not interchangeable (database replicas, a primary and its followers); each
needs a stable identity that peers can reach by name. The headless Service named in serviceName gives every pod a
DNS record <pod>.<service>.<ns>.svc.cluster.local that stays with the pod when it is deleted and made again, even
on another node with another IP.""", """
1 point: headless = no ClusterIP/no proxying, DNS returns the pod IPs (discovery, client picks the pod).
1 point: StatefulSet pods need stable per-pod DNS names (web-0.web…) that survive rescheduling, which only the
governing headless Service provides."""),
        *graph_cell(),
    ])
