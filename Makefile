# Two commands for a newcomer: `make lab` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab check test test-browser lint format test-gpu notebooks slides handouts bench-trace stress clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

# JupyterLab refuses to start as root unless told; containers often run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# JupyterLab on notebooks/ with tools/lab/jupyter_lab_config.py: each .py lecture opens as a notebook (Jupytext
# Notebook is the default viewer, python3 kernel), a save writes the script back without outputs, one entry
# per lecture in the file browser, no news pop-up or update check. Writes nothing tracked.
LAB_CONFIG := tools/lab/jupyter_lab_config.py

# `make lab PORT=8899` serves on that port (and fails if it is taken) instead of the first free one from 8888.
PORT_FLAG := $(if $(PORT),--ServerApp.port=$(PORT) --ServerApp.port_retries=0,)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) --config $(LAB_CONFIG) --ServerApp.root_dir=notebooks $(PORT_FLAG)

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

# The quick check, under a minute once .venv exists: lint-clean, every package imports, one count, and
# lecture 01 executed (jupytext --execute into build/check/, outside the tracked tree).
check: $(STAMP)
	$(BIN)/ruff check --quiet . && $(BIN)/ruff format --check --quiet .
	$(BIN)/python -c "import simlib, measurements, gpu_kernels, evidence, course"
	mkdir -p build/check
	$(BIN)/python -m simlib count --algorithm fa2 --seq-len 4096 --head-dim 64 --sram 192KiB > build/check/count.txt
	head -3 build/check/count.txt
	$(BIN)/jupytext --quiet --to ipynb --execute --output build/check/01_memory_hierarchy.ipynb notebooks/01_memory_hierarchy.py
	@echo "make check: OK"

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

# The course build (tools/build_course.py): each lecture executed once into build/executed/ (again only when
# the lecture, simlib/, measurements/, evidence/, course/ or data/ changed), then exported. Pages load
# reveal.js, require.js, jQuery and MathJax from tools/vendor/ by a relative path (versions and licences:
# tools/vendor/README.md), so they open and work without network. An image output whose cell has no alt="..." stops the build with one line naming the
# lecture and cell (tools/alt_text.py).
EXECUTED    := $(patsubst notebooks/%.py,build/executed/%.ipynb,$(NOTEBOOK_SOURCES))
COURSE_DEPS := $(shell find simlib measurements evidence course data -type f -not -path '*/__pycache__/*' 2>/dev/null) tools/build_course.py

build/executed/%.ipynb: notebooks/%.py $(COURSE_DEPS) | $(STAMP)
	$(BIN)/python -m tools.build_course execute $< --out build/executed

# Lectures as reveal.js slides, offline: build/slides/NN_topic.slides.html. Slide types come from the cells'
# slideshow metadata; cells with slide_type "notes" appear only in the speaker view (press S); cells tagged
# solution are left out, cells tagged remove-input show only their output; every image has its cell's alt.
slides: $(EXECUTED)
	$(BIN)/python -m tools.build_course slides $(EXECUTED) --out build/slides

# The rendered course, committed: docs/handouts/NN_topic.html (code and outputs, solutions collapsed under
# "Solution") and docs/handouts/index.html. Each page records the sha256 of its lecture script;
# tests/test_build_handouts.py fails when a lecture changed and its handout was not rebuilt.
handouts: $(EXECUTED)
	$(BIN)/python -m tools.build_course handouts $(EXECUTED) --out docs/handouts

# A real browser (tests/test_browser.py): JupyterLab as `make lab` starts it, lecture 07 run in headless
# Chromium, a slider moved (the chart must change, no cell may show an error), the notebook saved with
# Ctrl+S (the script and `git status notebooks/` must not change); every control of lectures 03, 04 and 07
# moved once (its chart must change, each redraw under 1 s of CPU, course.live.REDRAWS); then every deck of
# `make slides` opened at 1280x800 with the network blocked (no slide may overflow or scroll, no request may
# leave file://) and lecture 07's speaker notes checked (hidden from the audience, shown in the speaker view).
# Installs Debian's chromium and chromium-driver with apt-get when missing; nothing is downloaded at run time.
# `FLASHIO_BROWSER_ALL=1 make test-browser` also runs and saves every lecture in JupyterLab (about 3 minutes).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

test-browser: $(STAMP) slides
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || { $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends chromium chromium-driver; }
	FLASHIO_BROWSER=1 $(BIN)/python -m pytest -p no:xdist -p no:cacheprovider -q -rs tests/test_browser.py

# The simulator suites (tensor-core and fp32 kernels), 20 rounds of `pytest -n 2` beside a spinning process
# and with forced preemption (tests/sim_preempt.py): zero failures, or the simulator is not deterministic
# (gpu_kernels/simulator.py). 3-10 min a round on 2 cores (idle to busy). `make stress STRESS_ARGS="--rounds 3"`.
stress: $(STAMP)
	$(BIN)/python -m tools.stress_simulator $(STRESS_ARGS)

bench-trace: $(STAMP)
	$(BIN)/python benchmarks/trace_scale.py

clean:
	rm -rf $(VENV) build
