# kube-proxy with iptables, nftables, conntrack, ipset and ipvsadm from the base file system.
FROM labsupport/debian:bookworm
COPY kube-proxy /usr/local/bin/kube-proxy
RUN update-alternatives --set iptables /usr/sbin/iptables-nft && update-alternatives --set ip6tables /usr/sbin/ip6tables-nft
