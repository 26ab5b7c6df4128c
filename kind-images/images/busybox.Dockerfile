# busybox's applets first on PATH (sh, sleep, nslookup, wget, nc …), Debian's tools behind them.
# It runs as nobody (uid 65534): a student namespace admits only pods that run as non-root.
FROM labsupport/debian:bookworm
RUN mkdir -p /busybox/bin && busybox --install -s /busybox/bin
ENV PATH=/busybox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 65534:65534
CMD ["sh"]
