# nginx serving its welcome page from /usr/share/nginx/html on port 80 in the foreground, as the lessons' nginx
# image does (the lessons remove index.html there to fail a readiness probe). It runs as www-data (uid 33), not root:
# a student namespace admits only pods that run as non-root, and port 80 is open to a non-root server where the
# pod's net.ipv4.ip_unprivileged_port_start is 0 (kind's nodes: containerd's enable_unprivileged_ports; a student
# pod anywhere: the sysctl the class's admission policy adds). Its pid file, temporary files and page are its own.
FROM labsupport/debian:bookworm
RUN mkdir -p /usr/share/nginx/html \
    && printf '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is successfully installed and working.</p></body></html>\n' > /usr/share/nginx/html/index.html \
    && sed -i 's#root /var/www/html;#root /usr/share/nginx/html;#' /etc/nginx/sites-available/default \
    && grep -q 'root /usr/share/nginx/html;' /etc/nginx/sites-available/default \
    && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log \
    && sed -i -e 's#^user .*;##' -e 's#^pid .*;#pid /tmp/nginx.pid;#' /etc/nginx/nginx.conf \
    && grep -q '^pid /tmp/nginx.pid;' /etc/nginx/nginx.conf \
    && chown -R www-data:www-data /usr/share/nginx/html /var/lib/nginx /var/log/nginx
STOPSIGNAL SIGQUIT
USER 33:33
EXPOSE 80
CMD ["nginx", "-g", "daemon off;"]
