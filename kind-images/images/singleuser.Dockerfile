# A student's server for JupyterHub's KubeSpawner: JupyterHub's single-user server, JupyterLab and this project in
# a venv on Debian's Python, run as the unprivileged user jovyan (uid 1000) with `python -m labsupport.student_lab`.
# The context holds requirements.txt (the project's dependencies and the hub's JupyterHub release, a layer that
# changes rarely) and project/ (pyproject.toml, README.md and labsupport/, installed without dependencies on top);
# pip-ca.pem holds the certificate authorities this machine's pip trusts where a proxy re-signs PyPI's certificates
# (empty otherwise), for the installs only.
# Every step runs at the lowest CPU priority: the build shares the machine with test runs.
FROM labsupport/debian:bookworm
RUN nice -n 19 apt-get update \
    && nice -n 19 apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
    && python3 -m venv /opt/lab \
    && useradd --create-home --uid 1000 --shell /bin/bash jovyan
ENV PATH=/opt/lab/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY requirements.txt pip-ca.pem /tmp/
RUN if [ -s /tmp/pip-ca.pem ]; then export PIP_CERT=/tmp/pip-ca.pem; fi \
    && nice -n 19 pip install --quiet -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY project /tmp/project
RUN if [ -s /tmp/pip-ca.pem ]; then export PIP_CERT=/tmp/pip-ca.pem; fi \
    && nice -n 19 pip install --quiet --no-deps /tmp/project && rm -rf /tmp/project /tmp/pip-ca.pem
USER 1000
WORKDIR /home/jovyan
ENV HOME=/home/jovyan
EXPOSE 8888
CMD ["python", "-m", "labsupport.student_lab"]
