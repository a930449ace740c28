"""The simulated LLM and its engine core process."""
from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import threading
import traceback
from types import SimpleNamespace

import fake_cuda

ORPHAN_LIMIT_S = 120.0  # a safety net of the simulation only: vLLM's core has no parent watch at all


def _multiproc_method() -> str:
    """vllm/utils/system_utils.py `_maybe_force_spawn`, then the env default (fork)."""
    method = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    if method == "spawn":
        return method
    ray = __import__("sys").modules.get("ray")
    in_ray_actor = ray is not None and ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None
    import torch

    if in_ray_actor or torch.cuda.is_initialized():
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
        return "spawn"
    return method


def _jit_compilers() -> None:
    """What vLLM 0.32.0 compiles during its start-up profile run on a capability-9.0 GPU with
    132 SMs (tests/runtime/test_vllm_cuda_startup.py evaluates these choices in the real wheel):
    - FlashInfer's top-k/top-p sampler unless VLLM_USE_FLASHINFER_SAMPLER=0
      (vllm/v1/sample/ops/topk_topp_sampler.py `flashinfer_sampler_supported`); flashinfer-python
      0.7.0.post1 without flashinfer-jit-cache builds it with nvcc (flashinfer/jit/core.py);
    - Triton kernels (the native top-k/top-p path, the block table), whose launcher Triton
      builds with $CC, gcc or clang against Python.h (triton 3.7.1 triton/runtime/build.py `_build`).
    """
    if os.environ.get("VLLM_USE_FLASHINFER_SAMPLER", "1") != "0" and shutil.which("nvcc") is None:
        raise RuntimeError("Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist "
                           "(FlashInfer JIT build of module 'sampling')")
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RuntimeError("Failed to find C compiler. Please specify via CC environment variable or set "
                           "triton.knobs.build.impl.")


def _start_core(utilization: float) -> None:
    """What the engine core does first: take its share of device 0 of what it sees, then
    compile what its profile run needs."""
    fake_cuda.lazy_init()  # torch.cuda's init: raises in a poisoned fork, as the real one does
    free, total = fake_cuda.mem_get_info(0)
    requested = int(utilization * total)
    if free < requested:
        raise ValueError(f"Free memory on device cuda:0 ({free / 2**30:.2f}/{total / 2**30:.2f} GiB) on startup is less "
                         f"than desired GPU memory utilization ({utilization}, {requested / 2**30:.2f} GiB). Decrease GPU "
                         "memory utilization or reduce GPU memory used by other processes.")
    fake_cuda.allocate(fake_cuda.physical_of(0), requested, "engine_start")
    _jit_compilers()


def _outputs(requests, vocab: int):
    out = []
    for ids, max_tokens in requests:
        n = min(max_tokens, 6)
        base = sum(ids[-4:]) * 31
        out.append([(base + 7 * k) % vocab for k in range(n)])
    return out


def _core_main(conn, utilization: float, vocab: int) -> None:
    try:
        _start_core(utilization)
    except BaseException:  # noqa: BLE001 - like vLLM's core: the cause goes to its log, the front end learns only that it failed
        traceback.print_exc()
        sys.stderr.flush()
        conn.send(("error", ""))
        return
    conn.send(("ready", os.getpid()))
    while True:
        try:
            requests = conn.recv()
        except (EOFError, OSError):
            threading.Event().wait(ORPHAN_LIMIT_S)  # no parent watch: it stays, holding the device
            return
        conn.send(_outputs(requests, vocab))


class LLM:
    def __init__(self, model, tokenizer=None, dtype="auto", seed=0, gpu_memory_utilization=0.9, max_model_len=None,
                 enforce_eager=False, **_options):
        from tokenizers import Tokenizer

        self._tokenizer_path = tokenizer or model
        self._fast = Tokenizer.from_file(os.path.join(self._tokenizer_path, "tokenizer.json"))
        self._tokenizer = None  # transformers' tokenizer, loaded when asked for (chat templates)
        self.llm_engine = SimpleNamespace(model_config=SimpleNamespace(max_model_len=int(max_model_len or 2048)))
        vocab = self._fast.get_vocab_size()
        if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "1") == "0":
            _start_core(gpu_memory_utilization)
            self._conn, self.engine_pid = None, os.getpid()
            self._vocab = vocab
            return
        context = multiprocessing.get_context(_multiproc_method())
        self._conn, child = context.Pipe()
        self._proc = context.Process(target=_core_main, args=(child, gpu_memory_utilization, vocab), daemon=True)
        self._proc.start()
        kind, value = self._conn.recv()
        if kind == "error":
            raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): "
                               "{'EngineCore_0': 1}")
        self.engine_pid = value

    def get_tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self._tokenizer_path)
        return self._tokenizer

    def generate(self, prompts, sampling_params, use_tqdm=True):
        requests = [(list(p["prompt_token_ids"]), s.max_tokens) for p, s in zip(prompts, sampling_params)]
        if self._conn is None:
            outputs = _outputs(requests, self._vocab)
        else:
            self._conn.send(requests)
            outputs = self._conn.recv()
        results = []
        for (ids, max_tokens), tokens in zip(requests, outputs):
            text = self._fast.decode(tokens)
            finish = "length" if len(tokens) >= max_tokens else "stop"
            results.append(SimpleNamespace(prompt_token_ids=ids,
                                           outputs=[SimpleNamespace(token_ids=tokens, text=text, finish_reason=finish)]))
        return results
