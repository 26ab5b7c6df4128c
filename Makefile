# The two commands: `make lab` starts JupyterLab on the embedded cluster, `make test` runs every test tier.
# Both create .venv when it is missing and reinstall only when pyproject.toml changed.
# (PORT and IP choose where `make lab` listens; see the lab target.)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test times clean-lab doctor bench upstream hub-proxy kind-images kubectl-wasm lite lite-serve

# rfc3987-syntax comes with jsonschema's format-nongpl extra (jupyter-events asks for it) and only checks the "iri"
# formats, which no schema here uses; importing it builds an Earley parser, 1.5 s of CPU in every process that
# imports nbformat (each nbgrader command, each Jupyter server), so it is left out.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip uninstall --quiet --yes rfc3987-syntax
	@touch $(STAMP)

# labsupport's modules compiled ahead: where PYTHONDONTWRITEBYTECODE is set, no process writes them, and each one
# that imports labsupport (a graded kernel, its lab server, its test runner) would compile them again.
COMPILE := $(BIN)/python -m compileall -q -j 0 labsupport > /dev/null

# make lab PORT=8890 IP=0.0.0.0 — JupyterLab's port and the address it listens on (its defaults: 8888, localhost)
lab: $(STAMP)
	@$(COMPILE)
	LABSUPPORT_BACKEND=$${LABSUPPORT_BACKEND:-sim} $(BIN)/python -m labsupport.student_lab --notebook-dir=notebooks \
	    $(if $(PORT),--port=$(PORT)) $(if $(IP),--ip=$(IP))

# `make test` runs four pytest sessions. First the `sim` tier (nothing but Python) on SIM_WORKERS processes at once
# (pytest-xdist, each test file in one process, so a module's shared setup is made once; four on two cores, because
# its grading tests spend much of their time waiting for a sandboxed kernel or a cell's time limit). Then two side by
# side, as they share nothing: the kernel and upstream tiers (network namespaces, the real kube-proxy and CoreDNS),
# and the browser, lite and classroom tiers (Chromium, JupyterLab, JupyterLite, a hub); the second one's output goes
# to test-artifacts/pytest-browser-tiers.log and is printed when it ends. The kind tier last, alone: beside the others
# it lost requests and kernels to the contention (docs/ci.md). PYTEST_ARGS go to every session; a session PYTEST_ARGS
# leaves without a test counts as passed. All record their times in one table (`make times`). When the sim tier ends,
# the file LABSUPPORT_SIM_TIER_DONE names (if any) is created: .ci/run makes the kind tier's clusters from then on.
SIM_WORKERS ?= 4
SIM_TIER    := not kernel and not upstream and not browser and not classroom and not lite and not kind
NETNS_TIERS := (kernel or upstream) and not browser and not classroom and not lite and not kind
BROWSER_TIERS := (browser or classroom or lite) and not kind

test: $(STAMP)
	@$(COMPILE)
	@mkdir -p test-artifacts; if [ -z "$$LABSUPPORT_CI_TIMES" ]; then \
	    export LABSUPPORT_CI_TIMES="$(CURDIR)/test-artifacts/ci-times.jsonl"; : > "$$LABSUPPORT_CI_TIMES"; \
	fi; \
	echo "== the sim tier, $(SIM_WORKERS) processes"; \
	LABSUPPORT_CI_TIMES_LABEL="pytest, the sim tier" \
	    $(BIN)/python -m pytest -m "$(SIM_TIER)" -n $(SIM_WORKERS) --dist loadfile $(PYTEST_ARGS); sim=$$?; \
	[ -z "$$LABSUPPORT_SIM_TIER_DONE" ] || touch "$$LABSUPPORT_SIM_TIER_DONE"; \
	echo "== the kernel and upstream tiers, beside the browser, lite and classroom tiers (test-artifacts/pytest-browser-tiers.log)"; \
	LABSUPPORT_CI_TIMES_LABEL="pytest, browser, lite and classroom" \
	    $(BIN)/python -m pytest -m "$(BROWSER_TIERS)" $(PYTEST_ARGS) > test-artifacts/pytest-browser-tiers.log 2>&1 & browsers=$$!; \
	LABSUPPORT_CI_TIMES_LABEL="pytest, kernel and upstream" \
	    $(BIN)/python -m pytest -m "$(NETNS_TIERS)" $(PYTEST_ARGS); netns=$$?; \
	wait $$browsers; browser=$$?; \
	echo "== the browser, lite and classroom tiers (test-artifacts/pytest-browser-tiers.log)"; \
	cat test-artifacts/pytest-browser-tiers.log; \
	echo "== the kind tier"; \
	LABSUPPORT_CI_TIMES_LABEL="pytest, kind" \
	    $(BIN)/python -m pytest -m kind $(PYTEST_ARGS); kind=$$?; \
	all5=1; for code in $$sim $$netns $$browser $$kind; do [ $$code = 5 ] || all5=0; done; [ $$all5 = 0 ] || exit 5; \
	for code in $$sim $$netns $$browser $$kind; do [ $$code = 0 ] || [ $$code = 5 ] || exit $$code; done

# where the last run's time went: each tier against its budget (docs/ci.md), the slowest tests
times:
	@$(PYTHON) -m tests.timetable

doctor: $(STAMP)
	$(BIN)/labsupport doctor

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b --quick || exit 1; done

# The real kube-proxy and CoreDNS (the `upstream` test tier's oracle), built from the pinned modules in upstream/.
# Go's module and build caches make a rebuild cheap; make skips it when upstream/go.mod and go.sum are unchanged.
GO           ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
# The Go compiler's garbage collector, less often: the cold build of kube-proxy and CoreDNS took 11 % less CPU and 13 %
# less time with GOGC=400 than with Go's default of 100 (docs/ci.md); it costs memory, which the machine has to spare.
GO_BUILD_GOGC ?= 400
UPSTREAM_BIN := .upstream/bin
# the release kube-proxy reports (`kube-proxy --version`), as upstream's build stamps it
KUBE_VERSION  = $(shell cd upstream && $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_LDFLAGS  = -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                -X k8s.io/component-base/version.gitMajor=1 \
                -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) -X k8s.io/component-base/version.gitTreeState=clean

upstream: $(UPSTREAM_BIN)/kube-proxy $(UPSTREAM_BIN)/coredns

$(UPSTREAM_BIN)/kube-proxy $(UPSTREAM_BIN)/coredns &: upstream/go.mod upstream/go.sum
	@mkdir -p $(UPSTREAM_BIN)
	cd upstream && GOGC=$(GO_BUILD_GOGC) $(GO) build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o ../$(UPSTREAM_BIN)/ \
	    k8s.io/kubernetes/cmd/kube-proxy github.com/coredns/coredns
	@touch $(UPSTREAM_BIN)/kube-proxy $(UPSTREAM_BIN)/coredns

# A kind cluster with no registry: kind, Kubernetes, etcd, CoreDNS and the lessons' images built here from Go
# modules and Debian packages into a local node image (kind-images/build.py says what and how). Starts a Docker
# engine when none answers. Where a registry is reachable this is not needed: kind pulls kindest/node.
kind-images: $(STAMP) upstream
	PATH="$$PATH:$(dir $(GO))" GOGC=$(GO_BUILD_GOGC) $(BIN)/python kind-images/build.py

# The real kubectl built from its Go modules for WebAssembly (lite/kubectl/: upstream's main package at the release
# lite/kubectl/go.mod pins), for the browser edition: build/kubectl-wasm/ holds kubectl.wasm, Go's wasm_exec.js and
# the glue that runs it in a Pyodide kernel. Skipped when its inputs are unchanged; Go's build cache makes a rebuild cheap.
kubectl-wasm:
	GO=$(GO) GOGC=$(GO_BUILD_GOGC) $(PYTHON) lite/kubectl/build.py

# The course in a browser tab: a static JupyterLite site in build/lite/ (every lesson of both editions, the project's
# own labsupport and the real kubectl in WebAssembly, Pyodide's kernel), built offline from npm and PyPI (lite/build.py
# says what and why); `make lite-serve` serves it on loopback with the headers it needs (README, "In a browser tab").
lite: $(STAMP) kubectl-wasm
	$(BIN)/python lite/build.py

lite-serve:
	$(PYTHON) lite/serve.py $(if $(PORT),--port=$(PORT))

clean-lab: $(STAMP)
	$(BIN)/labsupport clean

# JupyterHub's proxy (configurable-http-proxy) from the npm registry into .node/ (git-ignored), for `labsupport class`
# and the classroom tier; `labsupport class up` installs it by itself too when it is missing.
hub-proxy: $(STAMP)
	$(BIN)/python -m labsupport.hub.proxy_install
