# kube-router from its Go module, run with only its network-policy firewall (the lab's CNI routes the pods): it turns
# each NetworkPolicy into iptables rules and ipsets on the node (iptables-nft, as the node and kube-proxy use).
FROM labsupport/debian:bookworm
COPY kube-router /usr/local/bin/kube-router
RUN update-alternatives --set iptables /usr/sbin/iptables-nft && update-alternatives --set ip6tables /usr/sbin/ip6tables-nft
ENTRYPOINT ["/usr/local/bin/kube-router"]
