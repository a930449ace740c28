"""`babelscore judge render`: the exact messages each judge call of a config would send, without a model.

The calls are planned by the same code as a run's (engine/judge/judging.py `plan`), from the
config's input rows of one file, so what this prints for a call is what a run stores in
RUN/judge_prompts/<id>.json for it (engine/judge/prompt_store.py), id included.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import pyarrow as pa

from engine.errors import ConfigError, InputError
from engine.judge.params import JudgeParams
from engine.judge.prompt_store import prompt_record
from engine.records import SAMPLE_SCHEMA

if TYPE_CHECKING:
    from engine.data.params import ValidationParams

logger = logging.getLogger(__name__)


def _file_rows(input_path: str, validation: ValidationParams, sample_id: str | None,
               stage_made_samples: bool) -> list[dict[str, Any]]:
    """The valid input rows of the file that holds `sample_id` (default: the first valid row's file)."""
    from engine.data.reader import iter_raw_rows
    from engine.data.validate import SampleValidator
    if stage_made_samples:
        raise ConfigError("judge render reads the predictions from the config's input, but this config makes them in a "
                          "stage (build or generate); point a config's `input:` at the generated samples "
                          "(RUN/generations/) and render that")

    def valid_rows() -> Iterator[dict[str, Any]]:
        validator = SampleValidator(require_prediction=True, params=validation)
        for raw in iter_raw_rows(input_path):
            sample, rejection = validator.check(raw)
            if rejection is None:
                yield sample

    # two passes, so only one file's rows are ever held
    file_id = next((s["file_id"] for s in valid_rows() if sample_id is None or s["sample_id"] == sample_id), None)
    if file_id is None:
        what = f"sample {sample_id!r}" if sample_id else "a valid row"
        raise InputError(f"judge render: {input_path} has no {what}; give --sample with a sample_id of the input")
    return [s for s in valid_rows() if s["file_id"] == file_id]


def _narrowed(judge: JudgeParams, strategy: str | None, language: str | None) -> JudgeParams:
    changes: dict[str, Any] = {}
    if strategy is not None:
        if strategy not in judge.strategies:
            raise ConfigError(f"judge render --strategy {strategy}: judge {judge.judge_name!r} runs {list(judge.strategies)}")
        changes["strategies"] = (strategy,)
        if isinstance(judge.max_tokens, dict):  # a per-strategy limit: only the rendered strategy's is left
            changes["max_tokens"] = {strategy: judge.max_tokens[strategy]}
        if isinstance(judge.structured, tuple):
            changes["structured"] = tuple(s for s in judge.structured if s == strategy)
    if language is not None and language not in judge.prompt_languages and "sample" not in judge.prompt_languages:
        raise ConfigError(f"judge render --language {language}: judge {judge.judge_name!r} prompts in "
                          f"{list(judge.prompt_languages)}; give one of those")
    return dataclasses.replace(judge, **changes) if changes else judge


def _in_language(entries: list, judge: JudgeParams, language: str | None) -> list:
    """The planned calls in `language` only; an error when the judge makes none in it for this file
    (a `sample` setting prompts in the file's own language), so no call it would never make is shown."""
    if language is None:
        return entries
    kept = [entry for entry in entries if entry.prompt_language == language]
    if entries and not kept:
        made = sorted({entry.prompt_language for entry in entries})
        raise ConfigError(f"judge render --language {language}: judge {judge.judge_name!r} prompts file {entries[0].item.file_id!r} "
                          f"in {made} only (prompt_languages {list(judge.prompt_languages)}); give one of those "
                          "or --sample with a sample of that language")
    return kept


def render_calls(judges: Sequence[JudgeParams], input_path: str, validation: ValidationParams,
                 sample_id: str | None = None, strategy: str | None = None, language: str | None = None,
                 judge_name: str | None = None, stage_made_samples: bool = False,
                 request: bool = False) -> Iterator[dict[str, Any]]:
    """One record per call: judge, request id, prompt id and messages, in the run's order.

    judges: the config's judges (its `judge:` section); input_path, validation: the config's
    input table and its validation options (only valid rows are judged). stage_made_samples:
    whether a stage of the config makes the samples (the RunPlan says; the predictions are then
    not in the config's input). request: add `request`, the whole body of the
    call as an OpenAI-compatible chat-completions request (engine/llm/http_backend.py
    `request_body`), with each `provider_secret_env` value shown as `<$VARIABLE>`, never read."""
    from engine.judge.judging import plan, requests_of
    from engine.llm.http_backend import request_body

    chosen = tuple(judges)
    if judge_name is not None:
        chosen = tuple(j for j in judges if j.judge_name == judge_name)
        if not chosen:
            names = [j.judge_name for j in judges]
            raise ConfigError(f"judge render --judge {judge_name}: no such judge; the config's judges: {names}")
    table = pa.Table.from_pylist(_file_rows(input_path, validation, sample_id, stage_made_samples), schema=SAMPLE_SCHEMA)
    for judge in chosen:
        narrowed = _narrowed(judge, strategy, language)
        entries = _in_language(plan(table, narrowed), judge, language)
        bodies = {r.request_id: r for r in requests_of(entries, narrowed)} if request else {}
        secrets = {key: f"<${name}>" for key, name in judge.provider_secret_env.items()}
        for entry in entries:
            for request_id, call in entry.calls:
                record = {"judge": judge.judge_name, "request_id": request_id, **prompt_record(call.messages)}
                if request:
                    record["request"] = request_body(narrowed, bodies[request_id], secrets)
                yield record
