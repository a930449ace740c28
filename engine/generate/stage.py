"""Stage `generate`: FIM completion of each file's removed comment by one generator.

Input: sample rows (SAMPLE_SCHEMA; one row per file as the build stage writes them, or one
row per (file, generator) — the first row of each file_id is used, as all rows of a file
share its source and comment). Output: GENERATION_SCHEMA rows, one per file, with
`sample_id = "<file_id>/<generator name>"`, `generator` the generator name, `prime` the start
of the reference the model was given, `prediction` the cleaned generation (text after the
prime up to the first stop token or stop string of the family card), `raw_generation`
everything generated. Labels and error
codes are cleared: they judged an earlier prediction, not this one. Running the stage once
per generator and concatenating gives the study's one row per (file, generator).

The generation limit is the mean plus 3 standard deviations (population std) of the token
lengths of the whole reference comments under the generator's tokenizer, rounded up. It must
be computed over the whole input, not per part, or parts would get different limits: the run
calls `plan_generation(every part's samples, params)` once (the stage's corpus pre-pass) and
passes its limit to every `generate_samples` call (or `max_new_tokens` is fixed in the params).

Bad rows never stop the stage: an empty file, offsets out of range, a prompt that with the
limit does not fit the model window, a tokenizer without the family's FIM tokens, or a
backend failure on one prompt each give a row with `generation_error` set and no prediction.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import re
import time
from pathlib import Path
from typing import Any, Iterable, Literal

import pyarrow as pa

from engine.errors import StageError
from engine.generate.cards import get_card
from engine.generate.prompts import FimPromptBuilder, FimTokenError, PromptError
from engine.llm.loading import get_backend
from engine.llm.requests import BackendSpec, GenerationRequest
from engine.params import Params, require
from engine.records import GENERATION_SCHEMA, REQUIRED_SAMPLE_COLUMNS
from engine.runtime import check_dtype, resolve_device, resolve_dtype, resolve_model
from engine.runtime import load_tokenizer as _runtime_tokenizer
from engine.stages.base import MODEL_PATH_OPTIONS, SAMPLES, NamesGenerators, PartContext, PartStage, Rates, Reusable, StageTask

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class GenerateParams(Params):
    """One generator of the `generate` stage.

    model: hub id, local directory or `pypi:<name>`; card: its family in the model cards file;
    name: the generator name in sample ids and the `generator` column (default: the last path
    component of `model`, e.g. `starcoder2-7b`); prime_tokens, prime_rule: how much of the
    reference the prompt keeps (rule None: the card's `prime_rule`, `letters` by default: the
    comment up to the end of its `prime_tokens`-th token containing a letter); max_new_tokens: fixed generation limit (None:
    mean + 3 std of the reference token lengths, see the module docstring); batch_size:
    prompts per `generate()` call of the transformers backend (vLLM schedules by itself);
    tensor_parallel_size, gpu_memory_utilization, enforce_eager: passed to `vllm.LLM` (on a
    CPU machine gpu_memory_utilization is the share of host memory vLLM requires free at start,
    and VLLM_CPU_KVCACHE_SPACE=<GiB> sizes its KV cache; 0.2 and 1 suit tiny models).

    Keys:
        model: the generator: hub id, local directory, pypi:<name> or demo:<name>.
        card: its FIM family in the model cards file (prompt format and stop tokens).
        name: generator name in sample ids and the `generator` column (null: last path component of model).
        tokenizer: tokenizer location when it differs from model (null: model's own).
        backend: `vllm` (GPU; vllm-cpu on CPU machines) or `transformers` (generate()); same greedy output.
        max_new_tokens: fixed generation limit (null: mean + 3 std of the reference token lengths).
        prime_tokens: tokens of the reference comment given as the prime (counted by prime_rule).
        prime_rule: `letters` (count tokens that contain a letter, the comment tokenized with its opener)
            or `text-tokens` (opener + tokens of the text tokenized alone); null: the card's rule.
        seed: sampling seed (decoding is greedy).
        dtype: model dtype; `auto`: the device probe's choice (bfloat16 where the device computes it
            natively, float16 on older tensor-core GPUs, else float32).
        strict_dtype: refuse the config when the device computes `dtype` > 4x slower than float32
            (otherwise float32 is used with one warning).
        device: `auto` (cuda when visible, else cpu), `cpu`, `cuda`, `cuda:N` (transformers backend).
        max_model_len: model window in tokens (null: the model's own).
        batch_size: prompts per generate() call (transformers backend).
        tensor_parallel_size: GPUs per vLLM model.
        gpu_memory_utilization: share of GPU (CPU: host) memory vLLM may take.
        enforce_eager: vLLM without CUDA graphs (slower, starts faster).
        cards_file: model cards YAML (null: the packaged engine/resources/model_cards.yaml).
    """

    model: str
    card: str
    name: str | None = None
    tokenizer: str | None = None
    backend: Literal["vllm", "transformers"] = "transformers"
    max_new_tokens: int | None = None
    prime_tokens: int = 3
    prime_rule: Literal["letters", "text-tokens"] | None = None
    seed: int = 0
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    strict_dtype: bool = False
    device: str = "auto"
    max_model_len: int | None = None
    batch_size: int = 8
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False
    cards_file: str | None = None

    def __post_init__(self) -> None:
        require(bool(self.model.strip()), "model", self.model, "a hub id, a local directory or pypi:<name>")
        get_card(self.card, self.cards_file)  # raises ConfigError naming the known families
        if self.name is not None:
            require(bool(self.name) and "/" not in self.name and self.name.strip() == self.name,
                    "name", self.name, "a non-empty name without '/' or surrounding spaces")
        require(self.max_new_tokens is None or self.max_new_tokens >= 1, "max_new_tokens", self.max_new_tokens,
                "null (mean + 3 std of the reference lengths) or an integer >= 1")
        require(0 <= self.prime_tokens <= 64, "prime_tokens", self.prime_tokens, "an integer in [0, 64]")
        require(self.seed >= 0, "seed", self.seed, "an integer >= 0")
        require(self.max_model_len is None or self.max_model_len >= 16, "max_model_len", self.max_model_len,
                "null (the model's own) or an integer >= 16")
        require(self.batch_size >= 1, "batch_size", self.batch_size, "an integer >= 1")
        require(re.fullmatch(r"auto|cpu|cuda(:\d+)?", self.device) is not None, "device", self.device,
                "auto, cpu, cuda or cuda:N")
        require(self.tensor_parallel_size >= 1, "tensor_parallel_size", self.tensor_parallel_size, "an integer >= 1")
        require(0.0 < self.gpu_memory_utilization <= 1.0, "gpu_memory_utilization", self.gpu_memory_utilization,
                "a number in (0, 1]")
        if self.strict_dtype:  # refused at config time, before any work, when the device is slow in it
            check_dtype(self.dtype, self.device, True, "dtype")

    @property
    def generator_name(self) -> str:
        return self.name or Path(self.model.rstrip("/")).name.removeprefix("pypi:")

    @property
    def tokenizer_name(self) -> str:
        return self.tokenizer or self.model

    @property
    def resolved_dtype(self) -> str:
        """The dtype the generator actually runs in on this machine (the probe's choice for auto)."""
        return resolve_dtype(self.dtype, self.device, self.strict_dtype)

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


def load_tokenizer(name: str) -> Any:
    """The fast tokenizer of a generator (offsets are needed for the prime), once per process."""
    return _runtime_tokenizer(name, fast=True)


def signature(params: GenerateParams, plan: dict[str, Any] | None = None) -> str:
    """The generation signature: model and tokenizer with their identities, dtype actually used, decoding."""
    from engine.signature import format_signature, package_version

    model = resolve_model(params.model, "model")
    tokenizer = resolve_model(params.tokenizer_name, "tokenizer")
    fields: dict[str, object] = {
        "stage": "generate",
        "model": params.model,
        "model_id": model.short_identity,
        "tok": params.tokenizer_name,
        "tok_id": tokenizer.short_identity,
        "card": params.card,
        "prime_rule": params.prime_rule or get_card(params.card, params.cards_file).prime_rule,
        "backend": params.backend,
        "dtype": params.resolved_dtype,
        "decode": "greedy",
        "prime": params.prime_tokens,
        "seed": params.seed,
        "max_new": (plan or {}).get("max_new_tokens", params.max_new_tokens or "mean+3std"),
        "transformers": package_version("transformers"),
        "torch": package_version("torch"),
    }
    if params.backend == "vllm":
        fields["vllm"] = package_version("vllm") if package_version("vllm") != "absent" else package_version("vllm-cpu")
    return format_signature(fields)


def first_row_per_file(samples: pa.Table) -> list[dict[str, Any]]:
    missing = [c for c in REQUIRED_SAMPLE_COLUMNS if c not in samples.column_names]
    if missing:
        raise StageError("generate", f"input lacks the columns {missing}; the build stage or a converter writes them")
    rows: dict[str, dict[str, Any]] = {}
    for row in samples.to_pylist():
        rows.setdefault(row["file_id"], row)
    return list(rows.values())


def _reference_lengths(rows: Iterable[dict[str, Any]], tokenizer: Any) -> list[int]:
    return [len(tokenizer(r["reference"], add_special_tokens=False)["input_ids"]) for r in rows]


def _limit_from_lengths(lengths: list[int]) -> int:
    """ceil(mean + 3 * population std) of token lengths, at least 1."""
    if not lengths:
        raise StageError("generate", "no samples to compute the generation limit from; set max_new_tokens")
    mean = sum(lengths) / len(lengths)
    std = math.sqrt(sum((n - mean) ** 2 for n in lengths) / len(lengths))
    return max(1, math.ceil(mean + 3 * std - 1e-9))


def generation_limit(samples: pa.Table, tokenizer: Any) -> int:
    """ceil(mean + 3 * std) of the token lengths of the references (one per file), at least 1."""
    return _limit_from_lengths(_reference_lengths(first_row_per_file(samples), tokenizer))


def plan_generation(tables: Iterable[pa.Table], params: GenerateParams) -> dict[str, Any]:
    """What every part of a run must share, computed once over the whole input (JSON-ready).

    tables: the run's sample parts, read one at a time (a file never spans two parts).
    `max_new_tokens`: `params.max_new_tokens`, or mean + 3 std of the reference token lengths
    over all files; pass it to every `generate_samples` call.
    """
    tokenizer = None if params.max_new_tokens is not None else load_tokenizer(params.tokenizer_name)
    files = 0
    lengths: list[int] = []
    for table in tables:
        rows = first_row_per_file(table)
        files += len(rows)
        if tokenizer is not None:
            lengths += _reference_lengths(rows, tokenizer)
    if params.max_new_tokens is not None:
        limit, source = params.max_new_tokens, "config"
    else:
        limit, source = _limit_from_lengths(lengths), "mean+3std"
    logger.info("generator %s: generation limit %d tokens (%s, %d files)", params.generator_name, limit, source, files)
    return {"max_new_tokens": int(limit), "limit_source": source, "generator": params.generator_name, "files": files}


def _request_seed(seed: int, file_id: str) -> int:
    digest = hashlib.sha256(f"{seed}:{file_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def output_row(row: dict[str, Any], name: str) -> dict[str, Any]:
    out = {field.name: row.get(field.name) for field in GENERATION_SCHEMA}
    out.update(sample_id=f"{row['file_id']}/{name}", generator=name, prime=None, prediction=None,
               label=None, error_codes=None, raw_generation=None, prompt_tokens=None, generated_tokens=None,
               generation_error=None)
    return out


def generate_samples(samples: pa.Table, params: GenerateParams, max_new_tokens: int | None = None) -> pa.Table:
    """Generate the comment of every file of `samples` with one generator; GENERATION_SCHEMA rows.

    `max_new_tokens` (or `params.max_new_tokens`) should be given: computing the limit here
    uses only these samples (see the module docstring), which is logged as a warning.
    """
    name = params.generator_name
    rows = first_row_per_file(samples)
    out = [output_row(r, name) for r in rows]
    if not rows:
        return pa.Table.from_pylist([], schema=GENERATION_SCHEMA)
    card = get_card(params.card, params.cards_file)
    tokenizer = load_tokenizer(params.tokenizer_name)
    try:
        builder = FimPromptBuilder(card, tokenizer, params.prime_tokens, params.prime_rule)
    except FimTokenError as exc:
        logger.error("generator %s: %s", name, exc)
        for o in out:
            o["generation_error"] = str(exc)
        return pa.Table.from_pylist(out, schema=GENERATION_SCHEMA)

    limit = max_new_tokens or params.max_new_tokens
    if limit is None:
        limit = generation_limit(samples, tokenizer)
        logger.warning("generator %s: generation limit %d computed over this part only; pass it explicitly "
                       "so every part uses the same limit", name, limit)

    pending: list[tuple[int, GenerationRequest]] = []
    for i, (row, o) in enumerate(zip(rows, out)):
        try:
            prompt = builder.build(row["source"], row["comment_start"], row["comment_end"])
        except PromptError as exc:
            o["generation_error"] = str(exc)
            continue
        o["prime"] = prompt.prime
        o["prompt_tokens"] = len(prompt.prompt_ids)
        pending.append((i, GenerationRequest(o["sample_id"], prompt.prompt_ids, limit,
                                             _request_seed(params.seed, row["file_id"]))))

    if pending:
        backend = get_backend(params.backend_spec(), stage="generate")
        window = backend.max_model_len
        fitting = []
        for i, request in pending:
            if len(request.prompt_ids) + limit > window:
                out[i]["generation_error"] = (
                    f"prompt of {len(request.prompt_ids)} tokens + generation limit {limit} exceeds the model "
                    f"window of {window} tokens"
                )
            else:
                fitting.append((i, request))
        started = time.perf_counter()
        results = _generate_isolating_failures(backend, [r for _i, r in fitting], builder.stop_ids)
        elapsed = time.perf_counter() - started
        n_tokens = 0
        for (i, _request), result in zip(fitting, results):
            if isinstance(result, str):
                out[i]["generation_error"] = result
                continue
            raw, cleaned = builder.clean(result.token_ids)
            out[i].update(raw_generation=raw, prediction=cleaned, generated_tokens=len(result.token_ids))
            n_tokens += len(result.token_ids)
        if fitting:
            logger.info("generator %s: %d prompts in %.1f s (%.2f prompts/s, %.1f output tokens/s)", name,
                        len(fitting), elapsed, len(fitting) / max(elapsed, 1e-9), n_tokens / max(elapsed, 1e-9))
    n_errors = sum(o["generation_error"] is not None for o in out)
    if n_errors:
        logger.warning("generator %s: %d of %d rows are error rows (generation_error set)", name, n_errors, len(out))
    return pa.Table.from_pylist(out, schema=GENERATION_SCHEMA)


def _generate_isolating_failures(backend: Any, requests: list[GenerationRequest], stop_ids: tuple[int, ...]) -> list:
    """Backend outputs in request order; a request that fails alone gets its error as a string
    (engine.isolation: out of memory on one prompt fails the part, to be retried)."""
    from engine.isolation import ItemFailure, run_isolated

    results = run_isolated(lambda batch: backend.generate(list(batch), stop_ids), requests, what="batch of prompts")
    return [f"backend error: {r.error}" if isinstance(r, ItemFailure) else r for r in results]


@dataclasses.dataclass(frozen=True)
class GenerateSection(Params):
    """The `generate:` config section: one or more generators, run model-major.

    Each generator's rows are `<file_id>/<name>`; together they give the study's one row per
    (file, generator). Names must differ, or sample ids would collide.

    Keys:
        generators: the generators, each with the keys below.
    """

    generators: tuple[GenerateParams, ...]

    def __post_init__(self) -> None:
        require(len(self.generators) > 0, "generate.generators", self.generators, "a non-empty list of generators")
        names = [g.generator_name for g in self.generators]
        require(len(set(names)) == len(names), "generate.generators", names, "distinct generator names (set `name:`)")


def generate_part(samples: pa.Table, params: GenerateParams, max_new_tokens: int) -> pa.Table:
    """One part of one generator. The model comes from the model registry, which keeps a vLLM
    engine in a worker process of its own, so any number of vLLM generators can follow each other."""
    return generate_samples(samples, params, max_new_tokens)


# ----- the stage: one task per generator, model-major (engine.stages.base) -----------------
class GenerateStage(PartStage, Reusable, Rates, NamesGenerators):
    name = "generate"
    package = "engine.generate"
    section = "generate"
    reuse_verb = "generated"
    rates = (("generated_tokens", "tokens/s"),)
    params_class = "engine.generate.stage:GenerateSection"
    provides = SAMPLES  # its rows replace the input samples for every later stage
    consumes = (SAMPLES,)
    seeded = True
    path_options = (*MODEL_PATH_OPTIONS, "cards_file")
    directory = "generations"
    schema = GENERATION_SCHEMA
    input_columns = ("sample_id", "file_id", "source", "comment_start", "comment_end", "reference")

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        return GenerateSection.from_mapping(raw, where=where)

    def with_run_seed(self, options: dict[str, Any], seed: int) -> dict[str, Any]:
        """Each generator's seed defaults to the run's."""
        generators = options.get("generators")
        if isinstance(generators, list):
            options["generators"] = [dict(g, seed=g.get("seed", seed)) if isinstance(g, dict) else g for g in generators]
        return options

    def row_generators(self, config: Any) -> list[str]:
        return [g.generator_name for g in config.section(self.name).generators]

    def check_config(self, config: Any) -> None:
        from engine.runtime import check_model_name

        for i, g in enumerate(config.section("generate").generators):
            check_model_name(g.model, f"generate.generators[{i}].model")
            if g.tokenizer_name != g.model:
                check_model_name(g.tokenizer_name, f"generate.generators[{i}].tokenizer", kind="tokenizer")

    def model_needs(self, config: Any) -> list[Any]:
        from engine.runtime.memory import ModelNeed

        return [ModelNeed(g.model, self.name, f"generate.generators[{i}]", g.backend, g.dtype, g.device, g.max_model_len,
                          g.gpu_memory_utilization, g.tensor_parallel_size)
                for i, g in enumerate(config.section("generate").generators)]

    def tasks(self, config: Any) -> list[StageTask]:
        return [
            StageTask(self.name, f"generate-{g.generator_name}", f"generate:{g.model}", i)
            for i, g in enumerate(config.section("generate").generators)
        ]

    def needs_prepass(self, config: Any, task: StageTask) -> bool:
        return True

    def prepass(self, config: Any, task: StageTask, tables: Iterable[pa.Table]) -> dict[str, Any]:
        return plan_generation(tables, config.section("generate").generators[task.entry])

    def signatures(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> dict[str, Any]:
        """Model and tokenizer identities, the dtype actually used, card, prime rule, decoding, seed, limit."""
        return {"generation": signature(config.section("generate").generators[task.entry], prepass)}

    def reuse_identity(self, config: Any, task: StageTask, prepass: dict[str, Any]) -> str:
        from engine.generate.reuse import generate_identity

        return generate_identity(config.section(self.name).generators[task.entry], prepass)

    def reuse_part(self, ctx: PartContext, sources: Any) -> tuple[pa.Table, dict[str, int], int] | None:
        from engine.generate.reuse import generate_part as reuse_generate_part  # reuse imports this module

        return reuse_generate_part(self, ctx, sources)

    def run_part(self, ctx: PartContext) -> pa.Table:
        samples = ctx.input_table()
        self.require_columns(samples, "the part's samples")
        params = ctx.config.section("generate").generators[ctx.part.entry]
        table = generate_part(samples, params, int(ctx.prepass["max_new_tokens"]))
        labels_path = getattr(ctx.config, "labels", None)
        if labels_path:
            from engine.data.labels import join_labels

            table = join_labels(table, labels_path)
        return table
