# The two commands: `make lab` starts JupyterLab on the embedded cluster, `make test` runs every test tier.
# Both create .venv when it is missing and reinstall only when pyproject.toml changed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test clean-lab doctor bench

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

lab: $(STAMP)
	LABSUPPORT_BACKEND=$${LABSUPPORT_BACKEND:-sim} $(BIN)/python -m labsupport.student_lab --notebook-dir=notebooks

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

doctor: $(STAMP)
	$(BIN)/labsupport doctor

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b --quick || exit 1; done

clean-lab: $(STAMP)
	$(BIN)/labsupport clean
