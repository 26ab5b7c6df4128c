# nginx serving its welcome page on port 80 in the foreground, as the lessons' nginx image does.
FROM labsupport/debian:bookworm
RUN printf '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is successfully installed and working.</p></body></html>\n' > /var/www/html/index.html \
    && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
STOPSIGNAL SIGQUIT
EXPOSE 80
CMD ["nginx", "-g", "daemon off;"]
