# nslookup and dig from Debian's dnsutils; idles until told what to run.
FROM labsupport/debian:bookworm
CMD ["sleep", "3600"]
