# The two commands: `make lab` starts JupyterLab on the embedded cluster, `make test` runs every test tier.
# Both create .venv when it is missing and reinstall only when pyproject.toml changed.
# (PORT and IP choose where `make lab` listens; see the lab target.)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test clean-lab doctor bench upstream hub-proxy kind-images

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# make lab PORT=8890 IP=0.0.0.0 — JupyterLab's port and the address it listens on (its defaults: 8888, localhost)
lab: $(STAMP)
	LABSUPPORT_BACKEND=$${LABSUPPORT_BACKEND:-sim} $(BIN)/python -m labsupport.student_lab --notebook-dir=notebooks \
	    $(if $(PORT),--port=$(PORT)) $(if $(IP),--ip=$(IP))

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

doctor: $(STAMP)
	$(BIN)/labsupport doctor

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b --quick || exit 1; done

# The real kube-proxy and CoreDNS (the `upstream` test tier's oracle), built from the pinned modules in upstream/.
# Go's module and build caches make a rebuild cheap; make skips it when upstream/go.mod and go.sum are unchanged.
GO           ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
UPSTREAM_BIN := .upstream/bin
# the release kube-proxy reports (`kube-proxy --version`), as upstream's build stamps it
KUBE_VERSION  = $(shell cd upstream && $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_LDFLAGS  = -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                -X k8s.io/component-base/version.gitMajor=1 \
                -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) -X k8s.io/component-base/version.gitTreeState=clean

upstream: $(UPSTREAM_BIN)/kube-proxy $(UPSTREAM_BIN)/coredns

$(UPSTREAM_BIN)/kube-proxy $(UPSTREAM_BIN)/coredns &: upstream/go.mod upstream/go.sum
	@mkdir -p $(UPSTREAM_BIN)
	cd upstream && $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o ../$(UPSTREAM_BIN)/ \
	    k8s.io/kubernetes/cmd/kube-proxy github.com/coredns/coredns
	@touch $(UPSTREAM_BIN)/kube-proxy $(UPSTREAM_BIN)/coredns

# A kind cluster with no registry: kind, Kubernetes, etcd, CoreDNS and the lessons' images built here from Go
# modules and Debian packages into a local node image (kind-images/build.py says what and how). Starts a Docker
# engine when none answers. Where a registry is reachable this is not needed: kind pulls kindest/node.
kind-images: $(STAMP) upstream
	PATH="$$PATH:$(dir $(GO))" $(BIN)/python kind-images/build.py

clean-lab: $(STAMP)
	$(BIN)/labsupport clean

# JupyterHub's proxy (configurable-http-proxy) from the npm registry into .node/ (git-ignored), for `labsupport class`
# and the classroom tier; `labsupport class up` installs it by itself too when it is missing.
hub-proxy: $(STAMP)
	$(BIN)/python -m labsupport.hub.proxy_install
