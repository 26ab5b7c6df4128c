# nginx serving its welcome page from /usr/share/nginx/html on port 80 in the foreground, as the lessons' nginx
# image does (the lessons remove index.html there to fail a readiness probe).
FROM labsupport/debian:bookworm
RUN mkdir -p /usr/share/nginx/html \
    && printf '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is successfully installed and working.</p></body></html>\n' > /usr/share/nginx/html/index.html \
    && sed -i 's#root /var/www/html;#root /usr/share/nginx/html;#' /etc/nginx/sites-available/default \
    && grep -q 'root /usr/share/nginx/html;' /etc/nginx/sites-available/default \
    && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
STOPSIGNAL SIGQUIT
EXPOSE 80
CMD ["nginx", "-g", "daemon off;"]
