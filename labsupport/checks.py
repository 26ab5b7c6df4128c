"""Assertions shared by the notebooks' self-checks and the course's autograder tests.

Every check raises `CheckFailed` (an AssertionError) with a message that says what is wrong and where to look,
and returns something useful when it passes. Checks only use the Lab's verbs, so they work on every backend.

>>> from labsupport import Lab
>>> with Lab(seed=0) as lab:
...     slice_has_ready_addresses(lab, "web", 3)  # doctest: +ELLIPSIS
Traceback (most recent call last):
labsupport.checks.CheckFailed: there is no Service "web" in namespace "default": did the cell that creates it ...
"""
from __future__ import annotations

import math
import os
import re
from typing import Any, Iterable, NoReturn
from urllib.parse import urlsplit

from labsupport.apps.stop import hook_seconds
from labsupport.check_display import wrapped_message
from labsupport.control.clock import parse_rfc3339
from labsupport.errors import LabError, NotFound
from labsupport.i18n import tr
from labsupport.remote.client import RemoteBackend

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


class CheckFailed(LabError, AssertionError):
    """A check did not hold; the message says what is wrong and where to look (an AssertionError too, for graders).
    Like every LabError, a notebook shows it under the student's line, without this package's frames."""


def _fail(message: str) -> NoReturn:
    # The message is the whole story: the lookup that failed on the way (a NotFound, a TypeError) is not shown.
    raise CheckFailed(message) from None


# --- reading the cluster ---------------------------------------------------------------------------------

def find(lab: Any, kind: str, name: str, namespace: str = "default", hint: str = "") -> dict:
    """The object, or a failure that says it is missing and how to list what exists."""
    try:
        return lab.get(kind, name, namespace=namespace)
    except NotFound:
        listing = f"lab.get({kind!r}" + (")" if namespace == "default" else f", namespace={namespace!r})")
        _fail(tr('there is no {kind} "{name}" in namespace "{namespace}": did the cell that creates it '
                 "run without an error? {hint}", kind=_kind_word(kind), name=name, namespace=namespace,
                 hint=hint or tr("List what exists with {listing}.", listing=listing)))


def _kind_word(kind: str) -> str:
    return {"svc": "Service", "service": "Service", "services": "Service", "deploy": "Deployment",
            "deployment": "Deployment", "sts": "StatefulSet", "statefulset": "StatefulSet",
            "pod": "Pod", "pods": "Pod"}.get(kind.lower(), kind)


def slices(lab: Any, service: str, namespace: str = "default") -> list[dict]:
    """The EndpointSlices of a Service (the ones labelled kubernetes.io/service-name=<service>)."""
    return lab.get("endpointslices", namespace=namespace, selector=f"{SERVICE_NAME_LABEL}={service}")


def endpoints(slice_or_slices: Any) -> list[dict]:
    """Every endpoint of a slice, a list of slices, or a `lab.get("endpointslices", …)` result."""
    if isinstance(slice_or_slices, dict):
        if "addresses" in slice_or_slices:
            return [slice_or_slices]
        if slice_or_slices.get("kind") == "EndpointSliceList" or "items" in slice_or_slices:
            return endpoints(slice_or_slices.get("items") or [])
        return list(slice_or_slices.get("endpoints") or [])
    out: list[dict] = []
    for item in slice_or_slices or []:
        out.extend(endpoints(item))
    return out


def _ready(endpoint: dict) -> bool:
    # An unset condition counts as true, as the API documents.
    return (endpoint.get("conditions") or {}).get("ready") is not False


def ready_addresses(lab: Any, service: str, namespace: str = "default") -> list[str]:
    """The addresses the Service's slices list as ready, sorted."""
    return sorted(a for e in endpoints(slices(lab, service, namespace)) if _ready(e) for a in e.get("addresses", []))


def pod_is_ready(pod: dict) -> bool:
    """Whether the pod's Ready condition is True."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def ready_pod_ips(lab: Any, selector: str, namespace: str = "default") -> list[str]:
    """The IPs of the Ready, not terminating pods a label selector picks, sorted."""
    return sorted(p["status"]["podIP"] for p in lab.get("pods", namespace=namespace, selector=selector)
                  if pod_is_ready(p) and not p["metadata"].get("deletionTimestamp") and p["status"].get("podIP"))


def node_ips(lab: Any) -> dict[str, str]:
    """Each node's InternalIP, by node name."""
    out = {}
    for node in lab.get("nodes", namespace=None):
        for addr in (node.get("status") or {}).get("addresses") or []:
            if addr.get("type") == "InternalIP":
                out[node["metadata"]["name"]] = addr["address"]
                break
    return out


def _selector_text(selector: dict | None) -> str:
    return ",".join(f"{k}={v}" for k, v in (selector or {}).items())


def _what_pods_carry(lab: Any, selector: dict | None, namespace: str) -> str:
    """A hint for a selector that picks no pod: the labels the pods of the namespace do have."""
    pods = lab.get("pods", namespace=namespace)
    if not pods:
        return tr(' There is no pod at all in namespace "{namespace}".', namespace=namespace)
    picked = lab.get("pods", namespace=namespace, selector=_selector_text(selector) or None)
    if selector and picked:
        return tr(" It picks {count} pod(s), but none has an IP yet (still Pending?): "
                  "lab.get('pods', selector={selector!r}).", count=len(picked), selector=_selector_text(selector))
    keys = set(selector or {})
    seen: dict[str, int] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        shown = {k: v for k, v in labels.items() if k in keys} or labels
        text = _selector_text(shown) or tr("no labels")
        seen[text] = seen.get(text, 0) + 1
    listing = ", ".join(tr("{text} ({n} pods)", text=text, n=n) if n > 1 else tr("{text} (1 pod)", text=text)
                        for text, n in sorted(seen.items(), key=lambda item: -item[1])[:5])
    return tr(' No pod has the labels {selector}; the pods in namespace "{namespace}" have: {listing}.',
              selector=_selector_text(selector), namespace=namespace, listing=listing)


# --- exercise 1: Deployments, Services and their EndpointSlices ------------------------------------------

def deployment_ready(lab: Any, name: str, replicas: int, image: str | None = None,
                     namespace: str = "default") -> dict:
    """The Deployment asks for `replicas` pods of `image` (repository) and all of them are available."""
    dep = find(lab, "deployment", name, namespace)
    spec = dep.get("spec") or {}
    if spec.get("replicas", 1) != replicas:
        _fail(tr('the Deployment "{name}" asks for {got} replicas, expected {replicas}: '
                 "set spec.replicas in the manifest (or lab.scale()).", name=name, got=spec.get("replicas", 1),
                 replicas=replicas))
    if image is not None:
        images = [c.get("image", "") for c in spec["template"]["spec"].get("containers", [])]
        if not any(i.split("@")[0].split(":")[0].rsplit("/", 1)[-1] == image for i in images):
            _fail(tr('the Deployment "{name}" runs {images}, expected an image of "{image}" '
                     '(for example "{image}:1.27"): check spec.template.spec.containers[0].image.',
                     name=name, images=images, image=image))
    available = (dep.get("status") or {}).get("availableReplicas", 0)
    if available != replicas:
        _fail(tr('the Deployment "{name}" has {available} available replicas, expected {replicas}: pods take a '
                 "moment to start, so wait for them, e.g. lab.wait(lambda l: "
                 "len(checks.ready_addresses(l, {name!r})) == {replicas}), or look at lab.get('pods', "
                 "selector={selector!r}).", name=name, available=available, replicas=replicas,
                 selector=_selector_text(spec.get('selector', {}).get('matchLabels'))))
    return dep


def pre_stop_seconds(lab: Any, name: str, minimum: float = 1, namespace: str = "default") -> float:
    """The seconds the Deployment's preStop hook holds a deleted pod (at least `minimum`)."""
    dep = find(lab, "deployment", name, namespace)
    containers = dep["spec"]["template"]["spec"].get("containers", [])
    hooks = [(c.get("lifecycle") or {}).get("preStop") for c in containers]
    held = max((hook_seconds(h) for h in hooks if h), default=0.0)
    if held < minimum:
        _fail(tr('the Deployment "{name}" has no preStop hook that holds its pods (found {hooks}): add '
                 'lifecycle: {{preStop: {{exec: {{command: [sleep, "20"]}}}}}} to its container in the pod '
                 "template.", name=name, hooks=hooks))
    return held


def service_type(lab: Any, name: str, expected: str, namespace: str = "default") -> dict:
    """The Service exists and has `spec.type` `expected` (ClusterIP, NodePort, LoadBalancer)."""
    svc = find(lab, "service", name, namespace)
    got = (svc.get("spec") or {}).get("type", "ClusterIP")
    if got != expected:
        _fail(tr('the Service "{name}" is of type {got}, expected {expected}: set spec.type in its manifest.',
                 name=name, got=got, expected=expected))
    return svc


def slice_has_ready_addresses(lab: Any, service: str, count: int, namespace: str = "default") -> list[str]:
    """The Service's EndpointSlices list exactly `count` ready addresses; returns them."""
    svc = find(lab, "service", service, namespace)
    found = slices(lab, service, namespace)
    if not found:
        _fail(tr('the Service "{service}" has no EndpointSlice: the controller writes one as soon as the Service '
                 "exists; look with lab.get('endpointslices', selector='{label}={service}').",
                 service=service, label=SERVICE_NAME_LABEL))
    addresses = ready_addresses(lab, service, namespace)
    if len(addresses) != count:
        selector = _selector_text((svc.get("spec") or {}).get("selector"))
        all_eps = endpoints(found)
        extra = ""
        if not all_eps:
            extra = (tr(" The slice is empty: does the selector {selector!r} match any pod's labels?",
                        selector=selector) + _what_pods_carry(lab, (svc.get("spec") or {}).get("selector"), namespace))
        elif len(addresses) < count:
            extra = tr(" {count} endpoint(s) are listed but not ready: are all pods Ready "
                       "(readiness probe), or still starting? Try lab.get('pods', selector={selector!r}).",
                       count=len(all_eps) - len(addresses), selector=selector)
        _fail(tr('the slices of "{service}" list {got} ready address(es), expected {count}: '
                 "are all pods Ready? try lab.get('pods', selector={selector!r}).", service=service,
                 got=len(addresses), count=count, selector=selector) + extra)
    return addresses


def slice_matches_pods(lab: Any, service: str, selector: str, namespace: str = "default") -> list[str]:
    """The ready addresses of the Service are exactly the IPs of the Ready pods `selector` picks."""
    addresses = ready_addresses(lab, service, namespace)
    pods = ready_pod_ips(lab, selector, namespace)
    if addresses != pods:
        extra = ""
        svc_selector = ((find(lab, "service", service, namespace).get("spec") or {}).get("selector"))
        if not endpoints(slices(lab, service, namespace)):
            extra = _what_pods_carry(lab, svc_selector, namespace)
        _fail(tr('the slices of "{service}" list {addresses} but the Ready pods with {selector} have {pods}: the '
                 "slice follows the Service's selector and the pods' readiness; compare the Service's "
                 "spec.selector ({service_selector!r}) with the pods' labels.", service=service,
                 addresses=addresses, selector=selector, pods=pods,
                 service_selector=_selector_text(svc_selector)) + extra)
    return addresses


def same_addresses(addresses: Iterable[str], lab: Any, service: str, namespace: str = "default") -> None:
    """`addresses` (what you read) are the ready addresses the Service's slices list now."""
    if isinstance(addresses, str) or addresses is None:
        _fail(tr("expected a list of IP strings, got {addresses!r}: collect e['addresses'][0] for every endpoint "
                 "e of every slice.", addresses=addresses))
    got = sorted(addresses)
    want = ready_addresses(lab, service, namespace)
    if got != want:
        _fail(tr('you have {got}, but the slices of "{service}" list {want} as ready: read them from '
                 "lab.get('endpointslices', selector='{label}={service}'), "
                 "each slice's endpoints[*].addresses.", got=got, service=service, want=want,
                 label=SERVICE_NAME_LABEL))


def captured_slices(captured: Any, service: str | None = None, namespace: str = "default") -> list[dict]:
    """`captured` is what `lab.get("endpointslices", …)` returned for one Service (a list of slices, or one slice):
    EndpointSlice objects, labelled with the Service's name (`service`; None: any one Service). Returns them."""
    if captured is None:
        _fail(tr("nothing was captured: store the slice (or the list lab.get('endpointslices', …) returns) in a "
                 "variable right after deleting the pod, before moving the clock."))
    items = [captured] if isinstance(captured, dict) else list(captured) if isinstance(captured, (list, tuple)) \
        else None
    if not items:
        _fail(tr("captured holds {captured!r}, not the EndpointSlices of a Service: keep the list "
                 "lab.get('endpointslices', selector='{label}=<service>') returns, unchanged; an empty list "
                 "shows nothing, so it proves nothing.", captured=captured, label=SERVICE_NAME_LABEL))
    owners = set()
    for item in items:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or item.get("kind") != "EndpointSlice" \
                or not str(item.get("apiVersion", "")).startswith("discovery.k8s.io/"):
            shown = sorted(item)[:6] if isinstance(item, dict) else type(item).__name__
            _fail(tr("captured holds something that is not an EndpointSlice object as the cluster returns it (it "
                     "has {shown}, without kind EndpointSlice and its metadata): keep what "
                     "lab.get('endpointslices', …) returned, unchanged, not a dict written by hand.", shown=shown))
        owners.add(((meta.get("labels") or {}).get(SERVICE_NAME_LABEL), meta.get("namespace", namespace)))
    want = {(service, namespace)} if service is not None else {next(iter(owners))}
    if owners != want:
        _fail(tr('captured holds the slices of {owners}, not those of the Service "{service}" in namespace '
                 '"{namespace}": select them with lab.get(\'endpointslices\', selector=\'{label}={service}\').',
                 owners=sorted(f"{ns}/{name}" for name, ns in owners), service=service or "?",
                 namespace=namespace, label=SERVICE_NAME_LABEL))
    return items


def _termination_note(lab: Any, service: str | None, namespace: str) -> str:
    """How long a deleted pod of the Service stays in its slices, read from its pods' own preStop hooks ("" without
    a lab to ask)."""
    if lab is None or service is None:
        return ""
    try:
        selector = _selector_text((lab.get("svc", service, namespace=namespace).get("spec") or {}).get("selector"))
        pods = lab.get("pods", namespace=namespace, selector=selector) if selector else []
    except LabError:
        return ""
    held = max((hook_seconds(hook) for p in pods for c in (p.get("spec") or {}).get("containers") or []
                for hook in [((c.get("lifecycle") or {}).get("preStop"))] if hook), default=0.0)
    if held:
        return tr("here the preStop hook holds it {seconds:g} s", seconds=held)
    return tr("here there is none, so it ends about a second after the delete")


def _not_listed(captured: Any, pod_ip: str, service: str | None, namespace: str) -> tuple[list[dict], list[str]]:
    """The captured endpoints of `pod_ip` (none when it is not listed), and every address the capture lists."""
    eps = endpoints(captured_slices(captured, service, namespace))
    return [e for e in eps if pod_ip in e.get("addresses", [])], sorted(a for e in eps for a in e.get("addresses", []))


def was_listed(captured: Any, pod_ip: str, service: str | None = None, namespace: str = "default", *,
               lab: Any = None) -> dict:
    """The captured EndpointSlice(s) of `service` list an endpoint for `pod_ip`; returns it. With `lab`, a failure
    says how long the Service's pods stay listed once deleted (their preStop hook)."""
    match, listed = _not_listed(captured, pod_ip, service, namespace)
    if not match:
        _fail(tr("the captured slice has no endpoint for {pod_ip} (it lists {listed}). A deleted pod stays in the "
                 "slice only while it terminates: until its preStop hook ends ({hold}) and its container quits on the "
                 "stop signal. The grace period (terminationGracePeriodSeconds, 30 s by default) is only the "
                 "deadline for a kill, not how long the pod stays. Capture the slice right after lab.delete(...), "
                 "before the clock moves, and check that the pod you deleted had this IP.", pod_ip=pod_ip,
                 listed=listed, hold=_termination_note(lab, service, namespace)))
    return match[0]


def victim_in_capture(captured: Any, pod_ip: str, service: str | None = None, namespace: str = "default", *,
                      lab: Any = None) -> dict:
    """For a step after the capture: the captured slice(s) list the endpoint of `pod_ip`, the pod deleted then;
    a failure says that the capture, not this step, is what to fix. Returns the endpoint."""
    match, listed = _not_listed(captured, pod_ip, service, namespace)
    if not match:
        _fail(tr("this test starts from the slice you captured at the delete (captured), and it has no endpoint for "
                 "{pod_ip} (it lists {listed}), so it cannot tell that the pod you waited for is the one you "
                 "deleted. The mistake is the capture, not this step: it was taken after the pod had terminated "
                 "(after its preStop hook; {hold}), and it costs the capture's own test too. Capture the slice right "
                 "after lab.delete(...), before the clock moves, then run that cell, this one and their tests "
                 "again.", pod_ip=pod_ip, listed=listed, hold=_termination_note(lab, service, namespace)))
    return match[0]


def endpoint_terminating(captured: Any, pod_ip: str, service: str | None = None, namespace: str = "default", *,
                         lab: Any = None) -> dict:
    """In the captured EndpointSlice(s) of `service` the endpoint of `pod_ip` is terminating: ready false, serving
    true, terminating true."""
    endpoint = was_listed(captured, pod_ip, service, namespace, lab=lab)
    cond = endpoint.get("conditions") or {}
    if not cond.get("terminating"):
        _fail(tr("the endpoint {pod_ip} in the captured slice is not terminating (conditions: {cond}): capture the "
                 "slice AFTER lab.delete(...) of that pod, not before.", pod_ip=pod_ip, cond=cond))
    if cond.get("ready") is not False:
        _fail(tr("the endpoint {pod_ip} is terminating but still ready (conditions: {cond}): unless its Service "
                 "sets publishNotReadyAddresses, a terminating endpoint is never ready; is this really the slice "
                 "after the delete?", pod_ip=pod_ip, cond=cond))
    return endpoint


def deleted_at(lab: Any, captured: Any, pod_ip: str, service: str, namespace: str = "default") -> float:
    """When the pod that had `pod_ip` was deleted (cluster time, epoch seconds): its endpoint in the captured slices
    of `service` names the pod, and the kubelet's Killing event of that pod says when."""
    endpoint = victim_in_capture(captured, pod_ip, service, namespace, lab=lab)
    ref = endpoint.get("targetRef") or {}
    for event in lab.get("events", namespace=namespace):
        involved = event.get("involvedObject") or {}
        if event.get("reason") == "Killing" and involved.get("uid") == ref.get("uid"):
            return parse_rfc3339(event.get("firstTimestamp") or event.get("lastTimestamp"))
    _fail(tr('the cluster has no record of deleting the pod {pod} ({pod_ip}): delete it with lab.delete("pod", '
             "name), then wait.", pod=ref.get("name"), pod_ip=pod_ip))


def waited(seconds: Any, lab: Any, captured: Any, pod_ip: str, service: str, namespace: str = "default") -> float:
    """`seconds` (what lab.wait returned) is a wait the cluster really had: no longer than the cluster time since the
    pod with `pod_ip` was deleted."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        _fail(tr("expected the number lab.wait returned, got {seconds!r}.", seconds=seconds))
    since = lab.now - deleted_at(lab, captured, pod_ip, service, namespace)
    if seconds > since + 1:
        _fail(tr("{seconds:g} s is more cluster time than has passed since the pod was deleted ({since:g} s): "
                 "store what lab.wait(...) returns, do not write the number yourself.", seconds=seconds,
                 since=round(since, 1)))
    return since


def address_gone(lab: Any, service: str, address: str, namespace: str = "default") -> None:
    """`address` is no longer listed in any of the Service's slices (its pod is gone)."""
    listed = [a for e in endpoints(slices(lab, service, namespace)) for a in e.get("addresses", [])]
    if address in listed:
        _fail(tr('{address} is still listed in the slices of "{service}": its pod is terminating until its preStop '
                 "hook ends and its container quits (at the latest when its grace period runs out); advance the "
                 "clock (lab.advance(seconds) or lab.wait(...)) until it is gone.", address=address, service=service))


# --- exercise 2: headless Services and DNS ---------------------------------------------------------------

def headless(lab: Any, name: str, namespace: str = "default") -> dict:
    """The Service is headless: `spec.clusterIP` is "None"."""
    svc = find(lab, "service", name, namespace)
    ip = (svc.get("spec") or {}).get("clusterIP")
    if ip != "None":
        _fail(tr('the Service "{name}" has clusterIP {ip!r}, so it is not headless: set spec.clusterIP: None. '
                 "clusterIP cannot change on an existing Service, so delete it (lab.delete('svc', "
                 "{name!r})) and create it again.", name=name, ip=ip))
    return svc


def _answer_addresses(answer: Any) -> list[str]:
    if answer is None or not hasattr(answer, "addresses"):
        _fail(tr("expected the answer of lab.nslookup(...), got {answer!r}.", answer=answer))
    return sorted(answer.addresses)


def nslookup_returns_pod_ips(answer: Any, lab: Any, selector: str, namespace: str = "default") -> list[str]:
    """The nslookup answer lists the IPs of the Ready pods `selector` picks, not a ClusterIP."""
    got = _answer_addresses(answer)
    want = ready_pod_ips(lab, selector, namespace)
    if not want:
        _fail(tr("no pod with {selector} is Ready, so an answer that finds no address would match an empty list and "
                 "prove nothing: keep the pods that were provided and wait until they are Ready.",
                 selector=selector))
    if got == want:
        return got
    if not got:
        _fail(tr("nslookup found no address ({rcode}): a headless Service with no ready "
                 "endpoints is NXDOMAIN; are the pods with {selector} Ready? The answer was:\n{text}",
                 rcode=getattr(answer, 'rcode', '?'), selector=selector, text=answer.text))
    service_ips = {s["spec"].get("clusterIP") for s in lab.get("services", namespace=namespace)}
    if len(got) == 1 and got[0] in service_ips:
        _fail(tr("nslookup returned one address, {address}, which is a Service's ClusterIP: the Service is not "
                 "headless (clusterIP: None), so DNS answers with its virtual IP instead of the pods.",
                 address=got[0]))
    _fail(tr("nslookup returned {got}, but the Ready pods with {selector} have {want}: query the Service's name "
             "and check its selector.", got=got, selector=selector, want=want))


def nslookup_is_pod(answer: Any, lab: Any, pod: str, namespace: str = "default") -> str:
    """The nslookup answer is exactly the IP of one pod (a StatefulSet pod's own DNS name)."""
    got = _answer_addresses(answer)
    ip = find(lab, "pod", pod, namespace)["status"].get("podIP")
    if got != [ip]:
        _fail(tr('expected the one address of pod "{pod}" ({ip}), got {got}: a StatefulSet pod is named '
                 "<pod>.<serviceName>, e.g. web-0.web, and the Service must be headless with the StatefulSet's "
                 "serviceName as its name.", pod=pod, ip=ip, got=got))
    return ip


def pod_replaced(lab: Any, pod: str, namespace: str = "default") -> dict:
    """The pod named `pod` is a new one: the cluster's events name an earlier pod of that name (another uid)."""
    current = find(lab, "pod", pod, namespace)
    if current["metadata"].get("deletionTimestamp"):
        _fail(tr("{pod} is still terminating: wait for the new one.", pod=pod))
    uid = current["metadata"].get("uid")
    earlier = {(e.get("involvedObject") or {}).get("uid") for e in lab.get("events", namespace=namespace)
               if (e.get("involvedObject") or {}).get("kind") == "Pod"
               and (e.get("involvedObject") or {}).get("name") == pod} - {uid, None}
    if not earlier:
        _fail(tr("{pod} is the pod that was there before (the cluster never ran another pod of that name): delete "
                 "your pod and wait for its replacement.", pod=pod))
    return current


def statefulset_pods(lab: Any, name: str, replicas: int, service: str | None = None,
                     namespace: str = "default") -> list[str]:
    """The StatefulSet runs pods <name>-0 … <name>-(replicas-1), all Ready, governed by a headless Service."""
    sts = find(lab, "statefulset", name, namespace)
    governing = (sts.get("spec") or {}).get("serviceName")
    if service is not None and governing != service:
        _fail(tr('the StatefulSet "{name}" has serviceName {governing!r}, expected {service!r}: the serviceName '
                 "names the headless Service that gives each pod its DNS name.", name=name, governing=governing,
                 service=service))
    headless(lab, governing or name, namespace)
    want = [f"{name}-{i}" for i in range(replicas)]
    selector = _selector_text((sts["spec"].get("selector") or {}).get("matchLabels"))
    pods = {p["metadata"]["name"]: p for p in lab.get("pods", namespace=namespace, selector=selector)}
    missing = [n for n in want if n not in pods or not pod_is_ready(pods[n])]
    if missing:
        _fail(tr("pods {missing} are missing or not Ready: a StatefulSet starts its pods one at a time, in order "
                 "(web-1 only after web-0 is Ready), so wait longer, e.g. lab.wait(lambda l: "
                 "len(checks.ready_addresses(l, {service!r})) == {replicas}, timeout=120).", missing=missing,
                 service=governing or name, replicas=replicas))
    return want


# --- exercise 3: NodePort and the client's source IP -----------------------------------------------------

def node_port(lab: Any, service: str, namespace: str = "default", index: int = 0) -> int:
    """The nodePort the API server gave the Service's port `index`."""
    svc = find(lab, "service", service, namespace)
    ports = (svc.get("spec") or {}).get("ports") or []
    if len(ports) <= index or not ports[index].get("nodePort"):
        _fail(tr('the Service "{service}" has no nodePort: only NodePort and LoadBalancer Services get one; '
                 "set spec.type: NodePort.", service=service))
    return ports[index]["nodePort"]


def external_traffic_policy(lab: Any, service: str, expected: str, namespace: str = "default") -> dict:
    """The Service's `spec.externalTrafficPolicy` is `expected` (Cluster or Local)."""
    svc = find(lab, "service", service, namespace)
    got = (svc.get("spec") or {}).get("externalTrafficPolicy", "Cluster")
    if got != expected:
        _fail(tr('the Service "{service}" has externalTrafficPolicy {got}, expected {expected}: set '
                 "spec.externalTrafficPolicy in its manifest and apply it again.", service=service, got=got,
                 expected=expected))
    return svc


def _check_result(result: Any) -> None:
    if result is None or not hasattr(result, "status"):
        _fail(tr("expected the result of lab.curl(...), got {result!r}.", result=result))


def seen_ip(result: Any) -> str | None:
    """The client address the app saw: the peer of the connection as the cluster recorded it (the result's
    client_ip), else what agnhost reports as the peer on `/clientip` ("ip:port"). Never a body the request shaped:
    agnhost's `/echo` answers with whatever it was sent."""
    _check_result(result)
    if result.client_ip:
        return result.client_ip
    path = urlsplit(result.url if "://" in result.url else f"http://{result.url}").path
    body = (result.body or "").strip()
    match = re.fullmatch(r"\[?([0-9a-fA-F.:]+?)\]?:\d+", body) if path == "/clientip" else None
    return match.group(1) if match else None


def reached_node_port(result: Any, lab: Any, service: str, namespace: str = "default") -> str:
    """The request went from outside the cluster to <node IP>:<nodePort of service> and got an HTTP answer."""
    _check_result(result)
    port = node_port(lab, service, namespace)
    parts = urlsplit(result.url if "://" in result.url else f"http://{result.url}")
    ips = node_ips(lab)
    if parts.hostname not in ips.values() and parts.hostname not in ips:
        _fail(tr("the request went to {host}, which is not a node's IP ({ips}): a "
                 "NodePort is opened on every node's own address; read one from lab.get('nodes').",
                 host=parts.hostname, ips=sorted(ips.values())))
    if parts.port != port:
        _fail(tr('the request went to port {got}, but the nodePort of "{service}" is {port}: find it in '
                 "lab.get('svc', {service!r})['spec']['ports'][0]['nodePort'] (the PORT(S) column shows "
                 "80:{port}/TCP).", got=parts.port, service=service, port=port))
    if result.source not in ("client", "outside", "external"):
        _fail(tr("the request came from {source!r}: send it from outside the cluster, source='client'.",
                 source=result.source))
    if not result.ok:
        _fail(tr("the request to {host}:{port} got no answer ({error}): a timeout on a Local "
                 "Service means this node has no pod of it; refused means no endpoints at all.",
                 host=parts.hostname, port=port, error=result.error))
    return parts.hostname


def sent_to(result: Any, lab: Any, node: str, port: int | None = None) -> str:
    """The request went to the IP of `node` (and to `port`, when given)."""
    _check_result(result)
    ips = node_ips(lab)
    if node not in ips:
        _fail(tr("{node!r} is not a node name: the nodes are {nodes}.", node=node, nodes=sorted(ips)))
    parts = urlsplit(result.url if "://" in result.url else f"http://{result.url}")
    if parts.hostname != ips[node] or (port is not None and parts.port != port):
        _fail(tr("the request went to {host}:{got}, not to {node} ({ip}:{port}): send it to that node's IP, so the "
                 "answer shows what happens on that node.", host=parts.hostname, got=parts.port, node=node,
                 ip=ips[node], port=port if port is not None else parts.port))
    return ips[node]


def source_ip_snatted(result: Any, lab: Any) -> str:
    """The app saw a node's address instead of the client's: the request was masqueraded (SNAT)."""
    _check_result(result)
    if not result.ok:
        _fail(tr("the request got no answer ({error}), so there is no source IP to look at.", error=result.error))
    ip = seen_ip(result)
    nodes = set(node_ips(lab).values())
    if ip in nodes or _is_pod_gateway(ip):
        return ip
    _fail(tr("the app saw {ip}, not a node address: with externalTrafficPolicy Cluster a request to a node "
             "without a local pod is forwarded and SNATed to the node's IP. Send it to a node whose pods are "
             "elsewhere, and check the Service's policy.", ip=ip))


def _is_pod_gateway(ip: str | None) -> bool:
    # A masqueraded packet delivered to a pod on the same node leaves with the node's bridge address (x.y.z.1).
    return bool(ip) and ip.startswith("10.244.") and ip.endswith(".1")


def source_ip_preserved(result: Any, lab: Any | None = None) -> str:
    """The app saw the client's own address: no SNAT on the way."""
    _check_result(result)
    if not result.ok:
        _fail(tr("the request got no answer ({error}): with externalTrafficPolicy Local only nodes that "
                 "run a pod of the Service answer; send it to such a node (see each pod's spec.nodeName).",
                 error=result.error))
    ip = seen_ip(result)
    nodes = set(node_ips(lab).values()) if lab is not None else set()
    if ip in nodes or _is_pod_gateway(ip):
        _fail(tr("the app saw {ip}, a node's address: the request was masqueraded (SNAT). Set "
                 "externalTrafficPolicy: Local on the Service and send the request to a node that runs a pod.",
                 ip=ip))
    return ip


def dropped(result: Any) -> None:
    """The connection got no answer at all: it was silently dropped and timed out."""
    _check_result(result)
    if result.ok:
        _fail(tr("the request was answered ({status} from pod {pod} on {node}): with "
                 "externalTrafficPolicy Local, a node WITHOUT a pod of the Service drops it; pick a node where no "
                 "pod runs.", status=result.status, pod=result.pod, node=result.node))
    if not result.timed_out:
        _fail(tr("the request failed with {error!r}, not a timeout: a Local policy drop is silent "
                 "(no REJECT), the client waits and times out.", error=result.error))


def node_without_pod(lab: Any, node: str, selector: str, namespace: str = "default") -> str:
    """No pod picked by `selector` runs on `node`."""
    if node not in node_ips(lab):
        _fail(tr("{node!r} is not a node name: the nodes are {nodes}.", node=node, nodes=sorted(node_ips(lab))))
    here = [p["metadata"]["name"] for p in lab.get("pods", namespace=namespace, selector=selector)
            if p["spec"].get("nodeName") == node]
    if here:
        _fail(tr("pods {here} run on {node}: look at each pod's spec.nodeName for the nodes that have one.",
                 here=here, node=node))
    return node


# --- exercise 4: reading kube-proxy's rules --------------------------------------------------------------

def _port_name(lab: Any, service: str, namespace: str) -> str:
    svc = find(lab, "service", service, namespace)
    name = ((svc.get("spec") or {}).get("ports") or [{}])[0].get("name")
    return f"{namespace}/{service}:{name}" if name else f"{namespace}/{service}"


def iptables_service_chain(rules: str, port_name: str) -> str | None:
    """The KUBE-SVC-… (or KUBE-SVL-…) chain KUBE-SERVICES jumps to for "<ns>/<svc>:<port>" cluster IP traffic."""
    for line in rules.splitlines():
        if line.startswith("-A KUBE-SERVICES ") and f'--comment "{port_name} cluster IP"' in line:
            match = re.search(r"-j (KUBE-SV[CL]-\w+)", line)
            if match:
                return match.group(1)
    return None


def iptables_chain_rules(rules: str, chain: str) -> list[str]:
    """The `-A <chain> …` lines of one chain, in order."""
    return [line for line in rules.splitlines() if line.startswith(f"-A {chain} ")]


def iptables_endpoint_jumps(rules: str, chain: str) -> list[tuple[str, float]]:
    """(KUBE-SEP chain, probability) for each endpoint rule of a service chain; the last rule's is 1.0."""
    out = []
    for line in iptables_chain_rules(rules, chain):
        match = re.search(r"-j (KUBE-SEP-\w+)", line)
        if match:
            prob = re.search(r"--probability ([0-9.]+)", line)
            out.append((match.group(1), float(prob.group(1)) if prob else 1.0))
    return out


def _no_endpoint_rules(service: str) -> NoReturn:
    _fail(tr('the rules have no endpoint of "{service}" to read: kube-proxy writes one per ready endpoint, and an '
             "empty list matches no rules at all, so it proves nothing. Keep {service}'s pods running and Ready "
             "(lab.get('pods')).", service=service))


def _rules(lab: Any, node: str | None, mode: str) -> str:
    if lab.proxy_mode != mode:
        _fail(tr("kube-proxy runs in {current} mode, not {mode}: switch with lab.set_proxy_mode({mode!r}).",
                 current=lab.proxy_mode, mode=mode))
    return lab.proxy_rules(node)


def service_chain(answer: Any, lab: Any, service: str, node: str | None = None, namespace: str = "default") -> str:
    """`answer` is the KUBE-SVC chain of the Service's first port in the node's iptables rules."""
    rules = _rules(lab, node, "iptables")
    port_name = _port_name(lab, service, namespace)
    chain = iptables_service_chain(rules, port_name)
    if chain is None:
        _fail(tr('no rule in KUBE-SERVICES carries the comment "{port_name} cluster IP": does the Service have '
                 "ready endpoints? (without any, kube-proxy writes only a REJECT in the filter table)",
                 port_name=port_name))
    if answer != chain:
        _fail(tr("{answer!r} is not the chain for {port_name}: find the -A KUBE-SERVICES line whose comment is "
                 '"{port_name} cluster IP" and take its -j target (a KUBE-SVC-… name).', answer=answer,
                 port_name=port_name))
    return chain


def endpoint_chains(answer: Any, lab: Any, service: str, node: str | None = None,
                    namespace: str = "default") -> list[str]:
    """`answer` lists the KUBE-SEP chains the Service's chain jumps to, in rule order."""
    rules = _rules(lab, node, "iptables")
    chain = iptables_service_chain(rules, _port_name(lab, service, namespace)) or ""
    want = [sep for sep, _ in iptables_endpoint_jumps(rules, chain)]
    if not want:
        _no_endpoint_rules(service)
    got = list(answer) if isinstance(answer, (list, tuple)) else answer
    if got != want:
        if isinstance(got, list) and sorted(got) == sorted(want):
            _fail(tr("you found the right KUBE-SEP chains but not in the order of the rules: the order matters, "
                     "it decides the probabilities."))
        _fail(tr("expected the {count} KUBE-SEP-… targets of the -A {chain} rules, in order; got {got!r}.",
                 count=len(want), chain=chain, got=got))
    return want


def probabilities(answer: Any, lab: Any, service: str, node: str | None = None,
                  namespace: str = "default") -> list[float]:
    """`answer` lists the probability on each endpoint rule of the Service's chain, in order (the last is 1)."""
    rules = _rules(lab, node, "iptables")
    chain = iptables_service_chain(rules, _port_name(lab, service, namespace)) or ""
    want = [p for _, p in iptables_endpoint_jumps(rules, chain)]
    if not want:
        _no_endpoint_rules(service)
    try:
        got = [float(x) for x in answer]
    except (TypeError, ValueError):
        _fail(tr("expected a list of numbers, got {answer!r}.", answer=answer))
    if len(got) != len(want):
        _fail(tr("the chain has {want} endpoint rules, you gave {got} probabilities.", want=len(want), got=len(got)))
    if not all(math.isclose(g, w, abs_tol=1e-6) for g, w in zip(got, want)):
        _fail(tr("{got} are not the probabilities in the rules: rule i (from 0) of N matches with probability "
                 "1/(N-i) of the packets that reach it; the last rule has no statistic match, so it takes all "
                 "the rest (1.0).", got=got))
    return want


def equal_shares(answer: Any, count: int, tolerance: float = 1e-6) -> None:
    """`answer` lists the overall share of new connections each of `count` endpoints gets: 1/count each."""
    try:
        got = [float(x) for x in answer]
    except (TypeError, ValueError):
        _fail(tr("expected a list of numbers, got {answer!r}.", answer=answer))
    if len(got) != count or not all(math.isclose(g, 1 / count, abs_tol=tolerance) for g in got):
        _fail(tr("{got} are not the overall shares: endpoint i is picked when every rule before it missed and "
                 "its own rule matched, e.g. for 3 endpoints: 1/3, (1 - 1/3) * 1/2, (1 - 1/3) * (1 - 1/2) * 1.",
                 got=got))


def nft_numgen(answer: Any, lab: Any, service: str, node: str | None = None, namespace: str = "default") -> str:
    """`answer` is the `numgen random mod N` rule of the Service's nftables service chain: since v1.36
    `… dnat ip addr . port to numgen random mod N map { … }`, with session affinity `numgen random mod N vmap { … }`."""
    rules = _rules(lab, node, "nftables")
    svc = find(lab, "service", service, namespace)
    port = (svc["spec"].get("ports") or [{}])[0]
    name = f"{namespace}/{service}/{port.get('protocol', 'TCP').lower()}/{port.get('name') or port.get('port')}"
    want = [line for line in rules.splitlines() if "numgen random mod" in line
            and re.search(r"service-\w{8}-" + re.escape(name) + " ", line)]
    if not want:
        _fail(tr("there is no numgen rule for {name}: does the Service have ready endpoints?", name=name))
    if not isinstance(answer, str) or answer.strip() not in [w.strip() for w in want]:
        _fail(tr("{answer!r} is not the rule: look for the line 'add rule ip kube-proxy service-…-{name} … numgen "
                 "random mod …' in lab.proxy_rules().", answer=answer, name=name))
    return want[0]


def ipvs_real_servers(answer: Any, lab: Any, service: str, node: str | None = None,
                      namespace: str = "default") -> list[str]:
    """`answer` lists the real servers ("ip:port") of the Service's IPVS virtual server for its ClusterIP."""
    rules = _rules(lab, node, "ipvs")
    svc = find(lab, "service", service, namespace)
    port = (svc["spec"].get("ports") or [{}])[0]
    head = f"{port.get('protocol', 'TCP')}  {svc['spec'].get('clusterIP')}:{port.get('port')} "
    want: list[str] = []
    inside = False
    for line in rules.splitlines():
        if line.startswith(head):
            inside = True
            continue
        if inside:
            match = re.match(r"\s+-> (\S+)", line)
            if not match:
                break
            want.append(match.group(1))
    if not want:
        _no_endpoint_rules(service)
    got = sorted(answer) if isinstance(answer, (list, tuple, set)) else answer
    if got != sorted(want):
        _fail(tr("expected the real servers under '{head} …' in the ipvsadm -Ln part of "
                 "lab.proxy_rules(), got {answer!r}.", head=head.strip(), answer=answer))
    return want


# --- exercise 5: troubleshooting -------------------------------------------------------------------------

def service_answers(lab: Any, service: str, source: str, path: str = "/", namespace: str = "default",
                    port: int | None = None) -> Any:
    """A request from `source` to http://<service>[:port]<path> gets HTTP 200 from one of the Service's pods."""
    svc = find(lab, "service", service, namespace)
    host = service if namespace == "default" else f"{service}.{namespace}"
    url = f"http://{host}{f':{port}' if port else ''}{path}"
    result = lab.curl(url, source=source)
    selector = _selector_text((svc.get("spec") or {}).get("selector"))
    if result.ok and result.status == 200:
        return result
    ready = ready_addresses(lab, service, namespace)
    if result.ok:
        _fail(tr("{url} answered {status}: the app is reached but {path} is not served.", url=url,
                 status=result.status, path=path))
    if not ready:
        every = endpoints(slices(lab, service, namespace))
        if every:
            _fail(tr("{url}: {error}. The Service has {count} endpoint(s) but none is ready: look at "
                     "the pods' readiness probe (lab.get('pods', selector={selector!r}) and the Unhealthy events "
                     "in lab.get('events')).", url=url, error=result.error, count=len(every), selector=selector))
        _fail(tr("{url}: {error}. The Service has no endpoints at all: its selector {selector!r} matches "
                 "no pod.", url=url, error=result.error, selector=selector)
              + _what_pods_carry(lab, (svc.get("spec") or {}).get("selector"), namespace))
    if result.refused:
        _fail(tr("{url}: {error}. The Service has {count} ready endpoint(s), yet the connection is "
                 "refused at the pod: the targetPort does not match the port the container listens on "
                 "(port is the Service's port, targetPort the container's).", url=url, error=result.error,
                 count=len(ready)))
    _fail(f"{url}: {result.error}.")


def balanced(hits: dict, pods: int, minimum_share: float = 0.15) -> None:
    """`hits` (pod name → requests) spreads over `pods` pods, each with at least `minimum_share` of them."""
    if not isinstance(hits, dict) or not hits:
        _fail(tr("expected a dict of pod name → number of requests, got {hits!r}.", hits=hits))
    total = sum(hits.values())
    if len(hits) < pods:
        _fail(tr("the requests reached only {reached} of {pods} pods: a kept-alive connection stays on the "
                 "pod it first reached, even after a scale-up; open new connections (or close and reopen them) "
                 "so kube-proxy picks a pod for each.", reached=sorted(hits), pods=pods))
    low = {k: v for k, v in hits.items() if v < minimum_share * total}
    if low:
        _fail(tr("the spread {hits} is uneven: {low} got under {share:.0%} of {total} requests.", hits=hits,
                 low=sorted(low), share=minimum_share, total=total))


#: The verbs that write: a refusal an exercise asks for comes from one of them.
WRITE_VERBS = ("apply", "create", "delete", "scale")


def _shown(value: Any, limit: int = 200) -> str:
    """A value as a message quotes it: its repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def refusal(answer: Any, lab: Any, *fragments: str, kind: str | None = None, name: str | None = None,
            field: str | None = None, value: Any = None, detail: str | None = None) -> str:
    """`answer` is the message of an error the cluster returned (`str(err)` of what you caught, unchanged), and it
    says each of `fragments`. A lab server (grading) judges the refusal by its own record of the request it refused
    with that message, never by the text: a write (apply, create, delete, scale) of `kind` `name`, refused for
    `field` with `value` and `detail` (those given). So a message the student shaped — a read of an object named
    after the expected text, an object whose field holds it — does not count. A local cluster keeps no record: the
    fragments alone are checked there."""
    if not isinstance(answer, str) or not answer:
        _fail(tr("expected the message of the error you caught (str(err)), got {answer}.", answer=_shown(answer)))
    records = _refused_by_server(lab, answer)
    if records is not None:
        if not records:
            _fail(tr("{answer} is not a message the cluster returned to you: catch the error (except Invalid as "
                     "err) and keep str(err) unchanged; a message typed or edited by hand does not count.",
                     answer=_shown(answer)))
        if not any(_asked_for(record, kind, name, field, value, detail) for record in records):
            record = records[0]
            _fail(tr("the cluster did return {answer}, but when you made a {verb} of {kind} {name}, not as the refusal "
                     "asked for ({expected}): make that request as the exercise says and keep str(err) of its "
                     "error.", answer=_shown(answer), verb=record.get("verb"), kind=record.get("kind") or "?",
                     name=_shown(record.get("name"), 60), expected=_expected(kind, name, field, value, detail)))
    missing = [f for f in fragments if f not in answer]
    if missing:
        _fail(tr("the cluster did say {answer}, but that is not the refusal asked for: it should say {missing}.",
                 answer=_shown(answer), missing=missing))
    return answer


def _asked_for(record: dict, kind: str | None, name: str | None, field: str | None, value: Any,
               detail: str | None) -> bool:
    """Whether the server's record of a refused request is the refusal asked for."""
    if record.get("verb") not in WRITE_VERBS:
        return False
    if kind is not None and record.get("kind") != kind or name is not None and record.get("name") != name:
        return False
    if field is None:
        return True
    return any(cause.get("field") == field and (value is None or cause.get("value") == value)
               and (detail is None or cause.get("detail") == detail) for cause in record.get("causes") or [])


def _expected(kind: str | None, name: str | None, field: str | None, value: Any, detail: str | None) -> str:
    """The refusal asked for, in words."""
    parts = [f"{kind or ''} {name!r}".strip() if name else (kind or tr("an object"))]
    if field:
        parts.append(f"{field}: {value!r}" if value is not None else field)
    if detail:
        parts.append(detail)
    return ": ".join(parts)


def _refused_by_server(lab: Any, text: str) -> list[dict] | None:
    """The lab server's records of the requests it refused with this message (None: a local cluster, which keeps
    no record). Only the grader's connection may ask; on the student's the server refuses, and so does the check."""
    backend = lab.backend
    if not isinstance(backend, RemoteBackend):
        return None
    return list(backend.refused(text) or [])


def counted(hits: Any, responses: Any, url: str, source: str) -> dict:
    """`hits` counts, per pod, the answers in `responses`: the results lab.curl returned for `url` from `source`,
    each its own request."""
    if not isinstance(responses, (list, tuple)) or not responses \
            or not all(hasattr(r, "body") and hasattr(r, "client_port") for r in responses):
        _fail(tr("responses should be the list of results lab.curl returned, one per request, got {responses!r}: "
                 "without them the counts in hits are only numbers written down.", responses=responses))
    strays = [r for r in responses if r.url != url or r.source != source or not r.ok]
    if strays:
        _fail(tr("{count} of the responses are not answers to {url} from {source} (the first: {first!r}): count only "
                 "the requests the problem asks for.", count=len(strays), url=url, source=source, first=strays[0]))
    if len({(r.client_ip, r.client_port, r.pod) for r in responses}) != len(responses):
        _fail(tr("responses holds the same result more than once: each request is its own connection, from its own "
                 "port, and counts once."))
    seen: dict[str, int] = {}
    for r in responses:
        seen[r.body] = seen.get(r.body, 0) + 1
    if hits != seen:
        _fail(tr("hits is {hits}, but the responses you kept count {seen}: count the .body of each of them.",
                 hits=hits, seen=seen))
    return seen


# --- answers to questions --------------------------------------------------------------------------------

def close_to(answer: Any, expected: float, relative: float = 0.05, what: str = "the value") -> None:
    """`answer` is a number within `relative` of `expected`."""
    if what == "the value":
        what = tr("the value")
    try:
        got = float(answer)
    except (TypeError, ValueError):
        _fail(tr("expected a number for {what}, got {answer!r}.", what=what, answer=answer))
    if not math.isclose(got, expected, rel_tol=relative):
        _fail(tr("{what} is {got:g}, which is not what the numbers give: recheck the arithmetic and the units.",
                 what=what, got=got))


def choice(answer: Any, expected: str, options: Iterable[str]) -> None:
    """`answer` is one of `options` and the right one (no hint which is right)."""
    options = list(options)
    if not isinstance(answer, str) or answer.strip().lower() not in [o.lower() for o in options]:
        _fail(tr("answer with one of {options}, got {answer!r}.", options=options, answer=answer))
    if answer.strip().lower() != expected.lower():
        _fail(tr("{answer!r} is not the right choice; reread the section and think again.", answer=answer))


def choices(answer: Any, expected: Iterable[str], options: Iterable[str]) -> None:
    """`answer` is the exact set of right options among `options`."""
    options = [o.lower() for o in options]
    try:
        got = {str(a).strip().lower() for a in answer}
    except TypeError:
        _fail(tr("answer with a set of options from {options}, got {answer!r}.", options=options, answer=answer))
    unknown = got - set(options)
    if unknown:
        _fail(tr("{unknown} are not among the options {options}.", unknown=sorted(unknown), options=options))
    want = {e.lower() for e in expected}
    if got != want:
        _fail(tr("your selection {got} is not right: {missing} right option(s) missing, "
                 "{wrong} wrong one(s) chosen.", got=sorted(got), missing=len(want - got), wrong=len(got - want)))


def _missing_answer(error: NameError) -> str:
    """A test's NameError in the words the graded feedback uses: which answer is missing, and what to run."""
    name = getattr(error, "name", None) or next(iter(re.findall(r"name '([^']+)'", str(error))), "?")
    return tr("name '{name}' is not defined: run the cell that sets it before this test", name=name)


def _explain_missing_answers(shell=None) -> bool:
    """While nbgrader validates a notebook (its kernel runs with NBGRADER_EXECUTION=validate), show a test cell's
    NameError as the feedback says it (the answer's name and the cell to run) instead of Python's bare NameError.
    Returns whether it is installed."""
    if os.environ.get("NBGRADER_EXECUTION") != "validate":
        return False
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False

    def show(self, etype, value, tb, tb_offset=None):
        stb = [wrapped_message(NameError(_missing_answer(value)))]
        self._showtraceback(etype, value, stb)
        return stb

    shell.set_custom_exc((NameError,), show)
    return True


_explain_missing_answers()      # a notebook's tests under nbgrader's Validate import this module first

__all__ = [
    "CheckFailed", "find", "slices", "endpoints", "ready_addresses", "pod_is_ready", "ready_pod_ips", "node_ips",
    "deployment_ready", "service_type", "slice_has_ready_addresses", "slice_matches_pods", "same_addresses",
    "captured_slices", "was_listed", "victim_in_capture", "endpoint_terminating", "deleted_at", "waited",
    "address_gone", "headless",
    "nslookup_returns_pod_ips", "nslookup_is_pod", "pod_replaced",
    "statefulset_pods", "node_port", "external_traffic_policy", "seen_ip", "reached_node_port",
    "sent_to", "source_ip_snatted", "source_ip_preserved", "dropped", "node_without_pod", "iptables_service_chain",
    "iptables_chain_rules", "iptables_endpoint_jumps", "service_chain", "endpoint_chains", "probabilities",
    "equal_shares", "nft_numgen", "ipvs_real_servers", "service_answers", "balanced", "counted", "refusal", "close_to",
    "choice", "choices",
]
