"""The netns backend's pure helpers: they need no kernel and run everywhere."""
from __future__ import annotations

from labsupport.netns.rules import _declared_chains, _with_deletions
from labsupport.netns.namespaces import link_name, ns_name

DUMP = """*filter
:KUBE-SERVICES - [0:0]
COMMIT
*nat
:KUBE-SERVICES - [0:0]
:KUBE-SVC-A - [0:0]
-A KUBE-SERVICES -j KUBE-SVC-A
COMMIT
"""


def test_full_restore_deletes_chains_that_went_away():
    assert _declared_chains(DUMP) == {"filter": {"KUBE-SERVICES"}, "nat": {"KUBE-SERVICES", "KUBE-SVC-A"}}
    text = _with_deletions(DUMP, {"nat": ["KUBE-SVC-OLD"], "filter": []})
    nat = text.split("*nat\n", 1)[1]
    assert nat.index(":KUBE-SVC-OLD - [0:0]") < nat.index("-X KUBE-SVC-OLD") < nat.index("COMMIT")
    assert _with_deletions(DUMP, {"nat": []}) == DUMP


def test_names_carry_the_prefix_and_fit():
    name = ns_name("lsk-1-2", "pod-default-" + "x" * 300)
    assert name.startswith("lsk-1-2-pod-default-") and len(name) <= 120
    assert ns_name("lsk-1-2", "pod-a") != ns_name("lsk-1-2", "pod-b")
    veth = link_name("lsk-1-2/uid")
    assert veth.startswith("lsk") and len(veth) <= 15
