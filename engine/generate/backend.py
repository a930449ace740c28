"""Generation backends behind one interface, and the `transformers` backend.

A backend turns prompts given as token ids into greedy continuations (token ids). It knows
nothing about FIM or samples: prompts, cleaning and error rows live in the stage. Two kinds:
`transformers` (here, `generate()`) and `vllm` (engine/llm/vllm_backend.py, the only
module that imports vllm; the request and output types are engine/llm/requests.py's). Both stop at the first of the given stop ids, and return it.

Loaded backends belong to the model registry (engine.runtime.registry): `get_backend` asks it
for the backend of a spec. A vLLM engine always runs in a worker process of its own (vLLM
cannot free an engine in-process), so any number of vLLM generators follow each other in one
run; the registry ends the previous worker before the next one starts when both do not fit.
"""
from __future__ import annotations

import gc
import logging
from collections.abc import Sequence

from engine.llm.requests import Backend, BackendSpec, GenerationOutput, GenerationRequest, cut_at_stop

logger = logging.getLogger(__name__)
__all__ = ["Backend", "BackendSpec", "GenerationOutput", "GenerationRequest", "TransformersBackend", "cut_at_stop", "get_backend"]


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


def get_backend(spec: BackendSpec, stage: str = "generate") -> Backend:
    """The loaded backend for `spec`, from the model registry (loaded there on first use).

    A vLLM engine lives in a worker process of its own (engine.runtime.model_process); a
    transformers model in this process. Callers keep it only while they use it: the registry
    decides when it is freed.
    """
    from engine.runtime.memory import device_of, estimate_model_bytes
    from engine.runtime.registry import acquire

    device = device_of(spec.kind, spec.device)
    return acquire(("generator", spec), lambda: _load_backend(spec), model=spec.model, stage=stage, device=device,
                   estimate_bytes=lambda: estimate_model_bytes(
                       spec.model, backend=spec.kind, dtype=spec.dtype, device=device, max_model_len=spec.max_model_len,
                       gpu_memory_utilization=spec.gpu_memory_utilization))


def _load_backend(spec: BackendSpec) -> Backend:
    logger.info("loading generator %s with the %s backend", spec.model, spec.kind)
    if spec.kind == "vllm":
        # vLLM cannot free an engine in-process: it lives in a worker process of its own.
        from engine.runtime.memory import device_of
        from engine.runtime.model_process import ProcessModel

        return ProcessModel("engine.llm.vllm_backend:VllmBackend", spec, attrs=("max_model_len",),  # type: ignore[return-value]
                            label=f"generator {spec.model}", device=device_of(spec.kind, spec.device),
                            devices=spec.tensor_parallel_size)
    return TransformersBackend(spec)
