"""What the kubelet writes into every container: resolv.conf, hosts, hostname and the Service variables."""
from __future__ import annotations

from labsupport.apps.container import (ClusterDNS, container_environment, hosts_file, resolv_conf,
                                       service_variables)


def pod(name="web-1", namespace="default", **spec):
    return {"metadata": {"name": name, "namespace": namespace, "uid": "u-1"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def service(name, ip, *ports, namespace="default"):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterIP": ip, "ports": [dict(p) for p in ports]}}


KUBERNETES = service("kubernetes", "10.96.0.1", {"name": "https", "port": 443, "protocol": "TCP"})


def test_resolv_conf_for_cluster_first():
    assert resolv_conf(pod(namespace="shop")) == ("search shop.svc.cluster.local svc.cluster.local cluster.local\n"
                                                  "nameserver 10.96.0.10\noptions ndots:5\n")


def test_resolv_conf_follows_the_cluster_domain_and_dns_config():
    text = resolv_conf(pod(dnsConfig={"searches": ["corp.example"], "options": [{"name": "ndots", "value": "2"},
                                                                                {"name": "edns0"}]}),
                       ClusterDNS("10.96.0.53", "lab.local"))
    assert text == ("search default.svc.lab.local svc.lab.local lab.local corp.example\n"
                    "nameserver 10.96.0.53\noptions ndots:2 edns0\n")


def test_resolv_conf_for_default_and_none_and_host_network():
    assert "10.96.0.10" not in resolv_conf(pod(dnsPolicy="Default"))
    assert "10.96.0.10" not in resolv_conf(pod(hostNetwork=True))
    assert "10.96.0.10" in resolv_conf(pod(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet"))
    assert resolv_conf(pod(dnsPolicy="None", dnsConfig={"nameservers": ["1.1.1.1"]})) == "nameserver 1.1.1.1\n"


def test_hosts_file_names_the_pod():
    text = hosts_file(pod(), "10.244.1.7")
    assert text.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert text.endswith("fe00::2\tip6-allrouters\n10.244.1.7\tweb-1\n")


def test_hosts_file_with_subdomain_and_aliases():
    text = hosts_file(pod("db-0", hostname="db-0", subdomain="db",
                          hostAliases=[{"ip": "1.2.3.4", "hostnames": ["foo.local", "bar.local"]}]), "10.244.2.3")
    assert "10.244.2.3\tdb-0.db.default.svc.cluster.local\tdb-0\n" in text
    assert text.endswith("\n# Entries added by HostAliases.\n1.2.3.4\tfoo.local\tbar.local\n")


def test_service_variables_docker_link_style():
    web = service("my-web", "10.96.12.7", {"name": "http", "port": 80, "protocol": "TCP"},
                  {"name": "dns", "port": 53, "protocol": "UDP"})
    env = service_variables([KUBERNETES, web], "default")
    assert env["MY_WEB_SERVICE_HOST"] == "10.96.12.7"
    assert env["MY_WEB_SERVICE_PORT"] == "80"
    assert env["MY_WEB_SERVICE_PORT_HTTP"] == "80" and env["MY_WEB_SERVICE_PORT_DNS"] == "53"
    assert env["MY_WEB_PORT"] == "tcp://10.96.12.7:80"
    assert env["MY_WEB_PORT_53_UDP"] == "udp://10.96.12.7:53"
    assert env["MY_WEB_PORT_53_UDP_PROTO"] == "udp"
    assert env["MY_WEB_PORT_80_TCP_PORT"] == "80" and env["MY_WEB_PORT_80_TCP_ADDR"] == "10.96.12.7"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1" and env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"


def test_only_the_pods_namespace_headless_skipped_and_links_can_be_off():
    other = service("cart", "10.96.3.3", {"port": 80}, namespace="shop")
    headless = service("db", "None", {"port": 5432})
    env = service_variables([KUBERNETES, other, headless], "default")
    assert not any(k.startswith(("CART_", "DB_")) for k in env)
    assert "CART_SERVICE_HOST" in service_variables([KUBERNETES, other], "shop")
    off = service_variables([KUBERNETES, other], "shop", enable_links=False)
    assert "CART_SERVICE_HOST" not in off and off["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"


def test_container_env_wins_over_service_variables_and_expands():
    p = pod()
    c = {"name": "c", "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "mine"},
                              {"name": "ME", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                              {"name": "URL", "value": "http://$(ME):80"}]}
    env = container_environment(p, c, [KUBERNETES], "10.244.1.9")
    assert env["KUBERNETES_SERVICE_HOST"] == "mine" and env["URL"] == "http://10.244.1.9:80"
    assert env["HOSTNAME"] == "web-1" and env["PATH"].endswith("/bin")
