"""Judging one part: files -> chat requests -> answers -> one row per candidate.

One call per (file, strategy, prompt language, reference mode) with every generator's
candidate (seven for the clustered strategies hierarchical and combined, one per cluster). All requests of the part go to the backend at
once, so a local engine batches them and a server sees them concurrently. Each file's calls
depend only on that file and fixed seeds, so results do not depend on how files are cut
into parts.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa

from engine.judge.messages import Candidate, JudgeCall, JudgeItem, build_calls
from engine.judge.params import JudgeParams
from engine.judge.parse import ParseResult, Verdict, combine_clusters, parse_response, response_status, verdicts
from engine.judge.promptpack import CLUSTERED, load_pack, resolve_prompt_language
from engine.judge.schema import SchemaLimits, output_schema
from engine.llm.requests import ChatBackend, ChatRequest, ChatResponse
from engine.records import JUDGMENT_SCHEMA

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Planned:
    item: JudgeItem
    sample_ids: dict[str, str]  # generator -> sample_id
    strategy: str
    prompt_language: str
    reference: str  # with | without
    calls: tuple[tuple[str, JudgeCall], ...]  # (request id, call)


def judge_items(table: pa.Table) -> list[tuple[JudgeItem, dict[str, str]]]:
    """Files of a sample table with their candidates (rows without generator or prediction skipped)."""
    files: dict[str, list[dict[str, Any]]] = {}
    for row in table.to_pylist():
        if row.get("generator") is None or row.get("prediction") is None:
            continue
        files.setdefault(row["file_id"], []).append(row)
    out = []
    for file_id in sorted(files):
        rows = sorted(files[file_id], key=lambda r: r["generator"])
        first = rows[0]
        candidates = tuple(Candidate(r["generator"], (r.get("prime") or "") + r["prediction"]) for r in rows)
        item = JudgeItem(file_id, first["language"], first["source"], int(first["comment_start"]), int(first["comment_end"]),
                         first["reference"], candidates)
        out.append((item, {r["generator"]: r["sample_id"] for r in rows}))
    return out


def plan(table: pa.Table, params: JudgeParams) -> list[_Planned]:
    planned = []
    for item, sample_ids in judge_items(table):
        for strategy in params.strategies:
            languages = dict.fromkeys(resolve_prompt_language(s, item.language) for s in params.prompt_languages)
            for language in languages:
                for reference in params.reference:
                    calls = build_calls(load_pack(language, params.prompt_pack), item, strategy, reference)
                    ids = tuple((f"{item.file_id}|{strategy}|{language}|{reference}|{call.cluster or ''}", call)
                                for call in calls)
                    planned.append(_Planned(item, sample_ids, strategy, language, reference, ids))
    return planned


def requests_of(planned: Sequence[_Planned], params: JudgeParams) -> list[ChatRequest]:
    limits = SchemaLimits(max_text_chars=params.max_text_chars, max_errors=params.max_errors)
    structured = set(params.structured_strategies())
    out = []
    for entry in planned:
        names = [c.generator for c in entry.item.candidates]
        for request_id, call in entry.calls:
            schema = (output_schema(load_pack(call.prompt_language, params.prompt_pack), call.strategy, call.cluster, names, limits)
                      if call.strategy in structured else None)
            out.append(ChatRequest(request_id, call.messages, params.max_tokens_for(call.strategy), params.temperature, params.seed, schema,
                                   params.lora))
    return out


def _verdicts_of(entry: _Planned, answers: dict[str, ChatResponse], params: JudgeParams) -> tuple[dict[str, Verdict], str]:
    """Each candidate's verdict and the status of the file's call(s) as a whole."""
    generators = [c.generator for c in entry.item.candidates]
    pack = load_pack(entry.prompt_language, params.prompt_pack)
    per_call = {}
    results: list[ParseResult] = []
    for request_id, call in entry.calls:
        answer = answers[request_id]
        result = parse_response(answer.text, answer.finish_reason, answer.error, generators, pack)
        results.append(result)
        per_call[call.cluster] = verdicts(result, generators)
    status = response_status(results)
    if entry.strategy not in CLUSTERED:
        return per_call[None], status
    return {g: combine_clusters({cluster: per_call[cluster][g] for cluster in per_call}) for g in generators}, status


def _answers(backend: ChatBackend, requests: Sequence[ChatRequest], name: str) -> dict[str, ChatResponse]:
    """Answers by request id (engine.isolation: a call that fails alone is an `api_error` answer,
    out of memory on one call fails the part, to be retried)."""
    from engine.isolation import ItemFailure, run_isolated

    results = run_isolated(lambda batch: backend.chat(list(batch)), requests, what=f"judge {name}: batch of calls")
    return {request.request_id: ChatResponse(request.request_id, None, None, error=result.error)
            if isinstance(result, ItemFailure) else result for request, result in zip(requests, results)}


def judge_table(table: pa.Table, params: JudgeParams, task: str, backend: ChatBackend,
                prompt_root: str | Path | None = None) -> pa.Table:
    """The judgment rows of one part's sample rows. `prompt_root`: the run directory, where the
    rendered prompt of every call is stored (engine/judge/prompt_store.py) once its answer is in."""
    from engine.judge.prompt_store import prompt_id, store_prompt

    planned = plan(table, params)
    requests = requests_of(planned, params)
    logger.info("judge %s: %d files, %d calls", params.judge_name, len({p.item.file_id for p in planned}), len(requests))
    answers = _answers(backend, requests, params.judge_name)
    # Stored once the answers are in, so a part that fails while calling leaves no prompt files
    # that no row links; one that fails after this (before its commit) may leave some, which are
    # harmless: a file is named by its content's hash and a retry writes the same one.
    ids = {r.request_id: store_prompt(prompt_root, r.messages) if prompt_root is not None else prompt_id(r.messages)
           for r in requests}
    structured = set(params.structured_strategies())
    rows = []
    not_ok: dict[tuple[str, str], int] = {}  # (strategy, response class) -> files; one line each, not one per file
    for entry in planned:
        call_answers = [answers[request_id] for request_id, _call in entry.calls]
        if entry.strategy in CLUSTERED:
            raw = json.dumps({call.cluster: answers[rid].text for rid, call in entry.calls}, ensure_ascii=False)
        else:
            raw = call_answers[0].text
        errors = sorted({a.error for a in call_answers if a.error})
        per_generator, status = _verdicts_of(entry, answers, params)
        if status != "ok":
            logger.debug("judge %s, file %s, %s/%s/%s: response %s", params.judge_name, entry.item.file_id, entry.strategy,
                         entry.prompt_language, entry.reference, status)
            not_ok[(entry.strategy, status.split()[0])] = not_ok.get((entry.strategy, status.split()[0]), 0) + 1
        for generator, verdict in per_generator.items():
            rows.append({
                "file_id": entry.item.file_id, "sample_id": entry.sample_ids[generator], "generator": generator,
                "language": entry.item.language, "judge": params.judge_name, "task": task, "strategy": entry.strategy,
                "prompt_language": entry.prompt_language, "reference": entry.reference,
                "structured": entry.strategy in structured,
                "label": verdict.label if verdict.status == "ok" else None,
                "error_codes": list(verdict.codes), "hallucinated_codes": list(verdict.hallucinated),
                "error_confidence": list(verdict.confidences), "parse_status": verdict.status, "parse_method": verdict.method,
                "response_status": status,
                "cluster_status": [f"{c}={s}" for c, s in verdict.cluster_status], "calls": len(call_answers),
                "prompt_tokens": sum(a.prompt_tokens for a in call_answers),
                "completion_tokens": sum(a.completion_tokens for a in call_answers),
                "latency_s": float(sum(a.latency_s for a in call_answers)), "raw_response": raw,
                "prompt_ids": [ids[request_id] for request_id, _call in entry.calls],
                "error": "; ".join(errors) or None,
            })
    files = {strategy: sum(1 for e in planned if e.strategy == strategy) for strategy in params.strategies}
    for (strategy, status), count in not_ok.items():
        limit = f" (max_tokens {params.max_tokens_for(strategy)})" if status == "truncated" else ""
        logger.info("judge %s, %s: %d of %d answer(s) %s%s; per file with -v, per row in RUN/judgments",
                    params.judge_name, strategy, count, files[strategy], status, limit)
    return pa.Table.from_pylist(rows, schema=JUDGMENT_SCHEMA)
