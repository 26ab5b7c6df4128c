"""`kubectl describe` computes event ages on its own clock; they must match `kubectl get events`."""
from __future__ import annotations

from labsupport.apiserver.eventtime import for_client


def test_describe_and_get_events_show_the_same_ages(lab, kubectl):
    lab.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: aged}\n"
              "spec:\n  containers: [{name: c, image: busybox, command: [sleep, '3600']}]\n")
    lab.advance(125)
    listed = kubectl("get events --field-selector involvedObject.name=aged").stdout.splitlines()[1:]
    ages = {line.split()[2]: seconds(line.split()[0]) for line in listed}
    described = kubectl("describe pod aged").stdout.split("Events:")[1].splitlines()[3:]
    shown = {line.split()[1]: seconds(line.split()[2]) for line in described if line.strip()}
    events = kubectl("events --for pod/aged").stdout.splitlines()[1:]
    printed = {line.split()[2]: seconds(line.split()[0]) for line in events}
    assert ages["Scheduled"] == 125
    # kubectl reads its own clock a moment after the server answered: at most a second apart
    for other in (shown, printed):
        assert other.keys() == ages.keys() and all(0 <= other[k] - ages[k] <= 1 for k in ages), (ages, other)


def seconds(age: str) -> int:
    """`2m5s` → 125."""
    total, number = 0, ""
    for ch in age:
        if ch.isdigit():
            number += ch
        else:
            total += int(number) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[ch]
            number = ""
    return total


def test_only_events_move_and_tables_keep_cluster_time():
    event = {"kind": "Event", "metadata": {"name": "e", "creationTimestamp": "2026-01-01T00:00:10Z"},
             "firstTimestamp": "2026-01-01T00:00:10Z", "lastTimestamp": "2026-01-01T00:00:20Z",
             "eventTime": "2026-01-01T00:00:20.500000Z"}
    moved = for_client(event, virtual_now=1767225630.0, wall_now=1767225630.0 + 3600)
    assert moved["firstTimestamp"] == "2026-01-01T01:00:10Z" and moved["lastTimestamp"] == "2026-01-01T01:00:20Z"
    assert moved["eventTime"] == "2026-01-01T01:00:20.500000Z"
    assert event["lastTimestamp"] == "2026-01-01T00:00:20Z"
    pod = {"kind": "Pod", "metadata": {"creationTimestamp": "2026-01-01T00:00:10Z"}}
    assert for_client(pod, 1767225630.0, 1767229230.0) is pod
