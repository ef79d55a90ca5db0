# Two commands for a newcomer: `make lab` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test lint format test-gpu notebooks slides report bench-trace clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

# JupyterLab refuses to start as root unless told; containers often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) notebooks/

# The lectures are tracked only as jupytext scripts (notebooks/NN_topic.py, see jupytext.toml); the .ipynb
# files that the tests, slides and handouts execute are generated here, outside the tracked tree.
NOTEBOOK_SOURCES := $(wildcard notebooks/[0-9]*.py)
NOTEBOOKS_BUILD  := build/notebooks

notebooks: $(STAMP)
	rm -rf $(NOTEBOOKS_BUILD) && mkdir -p $(NOTEBOOKS_BUILD)
	for f in $(NOTEBOOK_SOURCES); do \
	  $(BIN)/jupytext --quiet --to ipynb --output $(NOTEBOOKS_BUILD)/$$(basename $$f .py).ipynb $$f || exit 1; \
	done

test: notebooks
	$(BIN)/python -m pytest -n 2 -q tests --nbmake --nbmake-timeout=300 $(NOTEBOOKS_BUILD)

# Lint: ruff (rules and format) over the tree, mypy over simlib. `make format` applies ruff's fixes.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	for f in $(NOTEBOOK_SOURCES); do $(BIN)/jupytext --quiet --to py:percent --output $$f $$f || exit 1; done

# GPU tests, on a machine with a CUDA GPU. Uses $(PYTHON) itself (no .venv: the device machine's python3
# has pytest, numba, cupy and torch): `make test-gpu` there, `make test-gpu PYTHON=.venv/bin/python` here.
# FLASHIO_GPU=1 takes the kernels off the simulator; tests/conftest.py stops in one line without a GPU and
# fails the run if no GPU test passed.
test-gpu:
	FLASHIO_GPU=1 $(PYTHON) -m pytest -q -p no:cacheprovider -m gpu -rfs tests

# Lectures as reveal.js slides: slide types and speaker notes come from the cells' slideshow metadata,
# cells tagged remove-input show only their output. Open build/slides/NN_topic.slides.html and press S
# for the speaker view (reveal.js itself is loaded from a CDN when the page opens).
slides: notebooks
	mkdir -p build/slides
	$(BIN)/jupyter nbconvert --to slides --execute --ExecutePreprocessor.kernel_name=python3 \
	  --ExecutePreprocessor.timeout=600 --no-prompt --SlidesExporter.reveal_scroll=True \
	  --TagRemovePreprocessor.enabled=True --TagRemovePreprocessor.remove_input_tags='["remove-input"]' \
	  --output-dir build/slides $(NOTEBOOKS_BUILD)/*.ipynb

# Every lecture executed top to bottom, as HTML with code and outputs: build/report/NN_topic.html.
report: notebooks
	mkdir -p build/report
	$(BIN)/jupyter nbconvert --to html --execute --ExecutePreprocessor.kernel_name=python3 \
	  --ExecutePreprocessor.timeout=600 --output-dir build/report $(NOTEBOOKS_BUILD)/*.ipynb

bench-trace: $(STAMP)
	$(BIN)/python benchmarks/trace_scale.py

clean:
	rm -rf $(VENV) build
