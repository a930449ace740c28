"""Judge backends behind one interface: chat requests in, raw answers out.

Three kinds: `vllm` (offline `LLM`, chat template from the tokenizer, structured outputs
with xgrammar; in engine/llm/vllm_backend.py, the one module that imports vllm),
`transformers` (greedy `generate()` on the chat-templated prompt; no structured outputs) and
`http` (an OpenAI-compatible server, engine/judge/http_backend.py). A backend never raises
for one request's failure: the request's answer carries the error instead.

Local models belong to the model registry (engine.runtime.registry); a vLLM judge runs in a
worker process of its own, since vLLM cannot free an engine in-process.
"""
from __future__ import annotations

import gc
import logging
import time
from typing import Any, Sequence

from engine.errors import ModelLoadError, StageError
from engine.judge.config import JudgeParams
from engine.llm.requests import ChatBackend, ChatRequest, ChatResponse, window_error
from engine.runtime import resolve_model

logger = logging.getLogger(__name__)
__all__ = ["ChatBackend", "ChatRequest", "ChatResponse", "TransformersChatBackend", "get_chat_backend", "window_error"]


class TransformersChatBackend:
    """Greedy generation with transformers on the tokenizer's chat template (free text only)."""

    def __init__(self, params: JudgeParams):
        import torch

        from engine.runtime import load_model, load_tokenizer

        self.params = params
        try:
            self.tokenizer = load_tokenizer(params.tokenizer or params.model, fast=False)
            loaded = load_model(params.model, "AutoModelForCausalLM", dtype=params.dtype, device="auto")
        except ModelLoadError as exc:
            raise ModelLoadError(f"cannot load judge {params.model!r} with transformers: {exc}") from exc
        self.model, self.device = loaded.model, torch.device(loaded.device)
        if params.lora is not None:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(self.model, params.lora).eval()
        self.window = params.max_model_len or int(getattr(self.model.config, "max_position_embeddings", 2048))

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        import torch

        out = []
        for request in requests:
            if request.schema is not None:
                raise StageError("judge", "the transformers backend has no structured outputs")
            if request.lora != self.params.lora:
                raise StageError("judge", f"this transformers judge applies adapter {self.params.lora!r}, not {request.lora!r}")
            start = time.perf_counter()
            ids = self.tokenizer.apply_chat_template(list(request.messages), add_generation_prompt=True, tokenize=True)
            ids = list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
            if len(ids) + request.max_tokens > self.window:
                out.append(window_error(request.request_id, len(ids), self.window, request.max_tokens))
                continue
            torch.manual_seed(request.seed)
            with torch.inference_mode():
                generated = self.model.generate(
                    input_ids=torch.tensor([ids], device=self.device), attention_mask=torch.ones((1, len(ids)), dtype=torch.long, device=self.device),
                    max_new_tokens=request.max_tokens, do_sample=False, num_beams=1,
                    eos_token_id=self.tokenizer.eos_token_id, pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                )[0, len(ids):].tolist()
            stopped = bool(generated) and generated[-1] == self.tokenizer.eos_token_id
            text = self.tokenizer.decode(generated, skip_special_tokens=True)
            out.append(ChatResponse(request.request_id, text, "stop" if stopped or len(generated) < request.max_tokens else "length",
                                    len(ids), len(generated), time.perf_counter() - start))
        return out

    def close(self) -> None:
        del self.model
        gc.collect()


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


def get_chat_backend(params: JudgeParams, budget: Any = None) -> ChatBackend:
    """The backend of a judge. A local model comes from the model registry (a vLLM engine in a
    worker process of its own); an http backend holds no model and is made for each call, with
    the part's `budget` (engine/judge/budget.py JudgeBudget: caps, prices, answer cache) if given."""
    if params.backend == "http":
        from engine.judge.http_backend import HttpChatBackend

        return HttpChatBackend(params, budget=budget)
    from engine.runtime.memory import device_of, estimate_model_bytes
    from engine.runtime.registry import acquire

    device = device_of(params.backend, "auto")
    return acquire(("judge", _engine_key(params)), lambda: _load(params), model=params.model, stage="judge", device=device,
                   estimate_bytes=lambda: estimate_model_bytes(
                       params.model, backend=params.backend, dtype=params.dtype, device=device,
                       max_model_len=params.max_model_len, gpu_memory_utilization=params.gpu_memory_utilization))


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
    return TransformersChatBackend(params)
