# Two commands for a newcomer: `make lab` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test test-gpu slides report bench-trace clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q tests --nbmake notebooks

test-gpu: $(STAMP)
	$(BIN)/python -m pytest -q -m gpu tests

slides: $(STAMP)
	mkdir -p build/slides
	$(BIN)/jupyter nbconvert --to slides --execute --output-dir build/slides notebooks/*.ipynb

report: $(STAMP)
	mkdir -p build/report
	$(BIN)/jupyter nbconvert --to html --execute --output-dir build/report notebooks/*.ipynb

bench-trace: $(STAMP)
	$(BIN)/python benchmarks/trace_scale.py

clean:
	rm -rf $(VENV) build
