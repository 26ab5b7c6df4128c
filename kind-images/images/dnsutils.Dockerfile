# nslookup and dig from Debian's dnsutils; idles until told what to run.
# It runs as nobody (uid 65534): a student namespace admits only pods that run as non-root.
FROM labsupport/debian:bookworm
USER 65534:65534
CMD ["sleep", "3600"]
