"""A judge's chat backend: from the model registry for a local model, made per call for a server.

The backends themselves live in engine/llm/ (chat requests in, raw answers out): `vllm`
(vllm_backend.py: offline `LLM`, structured outputs with xgrammar), `transformers`
(transformers_backend.py: greedy `generate()` on the chat template, no structured outputs) and
`http` (http_backend.py: an OpenAI-compatible server). A backend never raises for one request's
failure: the request's answer carries the error instead. A vLLM judge runs in a worker process
of its own, since vLLM cannot free an engine in-process.
"""
from __future__ import annotations

import logging
from pathlib import Path

from engine.judge.params import JudgeParams, RunBudget
from engine.llm.http_budget import Caps, JudgeBudget
from engine.llm.requests import ChatBackend
from engine.runtime import resolve_model

logger = logging.getLogger(__name__)


def _engine_key(params: JudgeParams) -> tuple:
    """Options that decide the loaded engine (not the prompts): judges sharing them share it."""
    # vllm: one engine serves every adapter of a rank limit (per request); transformers: one model per adapter
    lora = (lora_rank_limit(params),) if params.backend == "vllm" else (params.lora,)
    return (params.backend, params.model, params.tokenizer, params.dtype, params.max_model_len, params.enforce_eager,
            params.gpu_memory_utilization, params.enable_prefix_caching, params.seed, *lora)


def lora_rank_limit(params: JudgeParams) -> int | None:
    """vllm: the LoRA rank limit its engine starts with (None: no LoRA)."""
    if params.lora is None:
        return None
    from engine.judge.adapter import adapter_rank, served_rank

    return served_rank(adapter_rank(params.lora))


def get_chat_backend(params: JudgeParams, budget: JudgeBudget | None = None) -> ChatBackend:
    """The backend of a judge. A local model comes from the model registry (a vLLM engine in a
    worker process of its own); an http backend holds no model and is made for each call, with
    the part's `budget` (caps, prices, answer cache) if given."""
    if params.backend == "http":
        from engine.llm.http_backend import HttpChatBackend

        return HttpChatBackend(params, budget=budget)
    from engine.runtime.memory import device_of, estimate_model_bytes
    from engine.runtime.model_registry import acquire

    device = device_of(params.backend, "auto")
    return acquire(("judge", _engine_key(params)), lambda: _load(params), model=params.model, stage="judge", device=device,
                   estimate_bytes=lambda: estimate_model_bytes(
                       params.model, backend=params.backend, dtype=params.dtype, device=device,
                       max_model_len=params.max_model_len, gpu_memory_utilization=params.gpu_memory_utilization))


def part_backend(params: JudgeParams, run_budget: RunBudget, run_root: Path, task: str, part: int,
                 entry: int) -> ChatBackend:
    """The backend that judges one part; an http judge's paid answers are cached as they come and
    its caps (the judge's own, at `judge.judges[entry]`, and the run's) checked before each call."""
    budget = None
    if params.backend == "http":
        budget = JudgeBudget(run_root, task, part, Caps.of(params, f"judge.judges[{entry}]"),
                             Caps.of(run_budget, "judge.budget"), params.price_per_million)
    return get_chat_backend(params, budget)


def _load(params: JudgeParams) -> ChatBackend:
    logger.info("loading judge %s with the %s backend", params.model, params.backend)
    if params.backend == "vllm":
        from engine.runtime.memory import device_of
        from engine.runtime.model_process import ProcessModel

        # vLLM cannot free an engine in-process: it lives in a worker process of its own.
        return ProcessModel(  # type: ignore[return-value]
            "engine.llm.vllm_backend:VllmChatBackend", label=f"judge {params.model}", device=device_of(params.backend, "auto"),
            model=resolve_model(params.model).path, tokenizer=resolve_model(params.tokenizer or params.model).path,
            dtype=params.dtype, seed=params.seed, max_model_len=params.max_model_len, enforce_eager=params.enforce_eager,
            gpu_memory_utilization=params.gpu_memory_utilization, enable_prefix_caching=params.enable_prefix_caching,
            max_lora_rank=lora_rank_limit(params),
        )
    from engine.llm.transformers_backend import TransformersChatBackend

    return TransformersChatBackend(params, stage="judge")
