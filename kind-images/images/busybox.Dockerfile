# busybox's applets first on PATH (sh, sleep, nslookup, wget, nc …), Debian's tools behind them.
FROM labsupport/debian:bookworm
RUN mkdir -p /busybox/bin && busybox --install -s /busybox/bin
ENV PATH=/busybox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["sh"]
