"""The `transformers` backends: a causal LM's greedy or sampled continuations of token-id
prompts (generation), and a chat model's answers on its tokenizer's chat template (the judge).

Neither knows about FIM, samples or judgments: prompts, cleaning and error rows live in the
stages. The vLLM backends of the same interfaces are engine/llm/vllm_backend.py (the only module
that imports vllm); the request and answer types are engine/llm/requests.py's.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from typing import Protocol

from engine.errors import ModelLoadError, StageError
from engine.llm.requests import BackendSpec, ChatRequest, ChatResponse, GenerationOutput, GenerationRequest, cut_at_stop, window_error

__all__ = ["ChatModelSettings", "TransformersBackend", "TransformersChatBackend"]


class TransformersBackend:
    """Greedy `generate()` of a causal LM, prompts left-padded into batches of similar length."""

    def __init__(self, spec: BackendSpec):
        import torch

        from engine.runtime import load_model

        self.spec = spec
        loaded = load_model(spec.model, "AutoModelForCausalLM", dtype=spec.dtype, device=spec.device)
        self.model, self.dtype = loaded.model, loaded.dtype
        self.device = torch.device(loaded.device)
        config = self.model.config
        self._window = spec.max_model_len or int(getattr(config, "max_position_embeddings", 0) or 2048)
        self._pad_id = int(config.pad_token_id if config.pad_token_id is not None else 0)

    @property
    def max_model_len(self) -> int:
        return self._window

    def generate(self, requests: Sequence[GenerationRequest], stop_ids: Sequence[int]) -> list[GenerationOutput]:
        import torch
        from transformers import GenerationConfig

        from engine.runtime import halve_on_oom

        def run(group: Sequence[GenerationRequest]) -> list[GenerationOutput]:
            limit = group[0].max_new_tokens
            width = max(len(r.prompt_ids) for r in group)
            ids = torch.full((len(group), width), self._pad_id, dtype=torch.long)  # (B, T)
            mask = torch.zeros((len(group), width), dtype=torch.long)  # (B, T)
            for row, request in enumerate(group):
                n = len(request.prompt_ids)
                ids[row, width - n :] = torch.tensor(request.prompt_ids, dtype=torch.long)
                mask[row, width - n :] = 1
            config = GenerationConfig(
                max_new_tokens=limit, do_sample=False, num_beams=1,
                eos_token_id=list(stop_ids), pad_token_id=self._pad_id,
            )
            torch.manual_seed(group[0].seed)
            with torch.inference_mode():
                out = self.model.generate(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device), generation_config=config
                )  # (B, T + new)
            results = []
            for request, tokens in zip(group, out[:, width:].tolist()):
                kept, reason = cut_at_stop(tokens, stop_ids)
                results.append(GenerationOutput(request.request_id, kept, reason))
            return results

        outputs: dict[str, GenerationOutput] = {  # out of memory on one request: TransientError
            r.request_id: halve_on_oom(lambda one: [self._sample_one(one[0], stop_ids)], [r])[0]
            for r in requests if r.temperature > 0
        }
        requests_greedy = [r for r in requests if r.temperature <= 0]
        # Long prompts first: similar lengths share a batch (little padding) and a prompt that
        # does not fit in memory fails at once rather than at the end.
        order = sorted(requests_greedy, key=lambda r: (-len(r.prompt_ids), r.max_new_tokens, r.request_id))
        for start in range(0, len(order), self.spec.batch_size):
            batch = order[start : start + self.spec.batch_size]
            for limit in sorted({r.max_new_tokens for r in batch}):
                group = [r for r in batch if r.max_new_tokens == limit]
                for output in halve_on_oom(run, group):
                    outputs[output.request_id] = output
        return [outputs[r.request_id] for r in requests]

    def _sample_one(self, request: GenerationRequest, stop_ids: Sequence[int]) -> GenerationOutput:
        """One sampled continuation, alone in its batch and seeded by its own seed, so it does not
        depend on which other requests came with it."""
        import torch
        from transformers import GenerationConfig

        ids = torch.tensor([request.prompt_ids], dtype=torch.long)  # (1, T)
        config = GenerationConfig(
            max_new_tokens=request.max_new_tokens, do_sample=True, temperature=request.temperature, top_k=0, top_p=1.0,
            num_beams=1, eos_token_id=list(stop_ids), pad_token_id=self._pad_id,
        )
        torch.manual_seed(request.seed)
        with torch.inference_mode():
            out = self.model.generate(input_ids=ids.to(self.device), attention_mask=torch.ones_like(ids).to(self.device),
                                      generation_config=config)  # (1, T + new)
        kept, reason = cut_at_stop(out[0, ids.shape[1]:].tolist(), stop_ids)
        return GenerationOutput(request.request_id, kept, reason)

    def close(self) -> None:
        import torch

        del self.model
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


class ChatModelSettings(Protocol):
    """What a local chat backend reads of its model entry (a judge's JudgeParams has these)."""

    model: str
    tokenizer: str | None
    dtype: str
    lora: str | None  # a LoRA adapter folder applied to the model
    max_model_len: int | None  # None: the model's own window


class TransformersChatBackend:
    """Greedy generation with transformers on the tokenizer's chat template (free text only)."""

    def __init__(self, params: ChatModelSettings, *, stage: str):
        import torch

        from engine.runtime import load_model, load_tokenizer

        self.params, self.stage = params, stage  # the stage its errors name
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
                raise StageError(self.stage, "the transformers backend has no structured outputs")
            if request.lora != self.params.lora:
                raise StageError(self.stage, f"this transformers judge applies adapter {self.params.lora!r}, not {request.lora!r}")
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
