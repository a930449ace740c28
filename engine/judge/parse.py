"""Turning a judge's raw answer into per-candidate verdicts, every failure classified.

Extraction order: the whole text as JSON, then each fenced block, then the first balanced
`{...}` that parses. Keys and label values may be in any of the prompt languages (or
English whatever the prompt language): they are mapped back to internal names. Errors may
come as a list of ids, a list of objects (`code`, `confidence`, `justification`), a map
id -> PRESENT/ABSENT (or true/false, or a confidence), or a comma-separated string. Codes
outside the taxonomy are kept apart as hallucinated.

Classes: `ok` (a label was read), `empty` (no text, or valid JSON with no evaluation for the
candidate), `malformed` (no JSON object, or an evaluation without a usable label),
`truncated` (the answer hit the token limit and is not whole JSON), `api_error` (no answer).
A failure is never turned into a label: the label stays missing and the class is counted.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Iterable, Mapping, Sequence

from engine.judge.promptpack import FIELDS, PROMPT_LANGUAGES, load_pack
from engine.records import LABELS
from engine.taxonomy import canonical_code

PARSE_CLASSES = ("ok", "empty", "malformed", "truncated", "api_error")
# When every cluster of a hierarchical call failed, ties between classes go to the first here.
_FAILURE_ORDER = ("api_error", "truncated", "malformed", "empty")
_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
# Other spellings of the code key inside error objects, beyond the packs' `code` field.
_CODE_KEYS = ("code", "id", "error", "error_id", "error_code", "type")
_ABSENT = {"absent", "not_present", "no", "false", "none", "0", "n", "not present", "niet aanwezig", "brak", "无", "否", "όχι"}


def _norm_key(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(text).strip().casefold())


def _norm_label(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", re.sub(r"[.!。:：\"'`*]", "", str(text).strip().casefold())).strip()


@cache
def key_map() -> dict[str, str]:
    """Normalised output key in any prompt language -> internal field name."""
    out = {_norm_key(name): name for name in FIELDS}
    for language in PROMPT_LANGUAGES:
        for name, translated in load_pack(language).data["fields"].items():
            out.setdefault(_norm_key(translated), name)
    for key in _CODE_KEYS:
        out.setdefault(_norm_key(key), "code")
    return out


@cache
def label_map() -> dict[str, str]:
    """Normalised label value or variant in any prompt language -> internal label."""
    out: dict[str, str] = {}
    for language in PROMPT_LANGUAGES:
        data = load_pack(language).data
        for internal in LABELS:
            for value in (internal, data["labels"][internal], *data["label_variants"][internal]):
                known = out.setdefault(_norm_label(value), internal)
                if known != internal:
                    raise ValueError(f"label {value!r} of pack {language!r} means both {known} and {internal}")
    return out


@dataclass(frozen=True)
class Evaluation:
    """One evaluation as read from the answer (label None when missing or unknown)."""

    model_name: str | None
    label: str | None
    raw_label: str | None
    codes: tuple[str, ...]
    hallucinated: tuple[str, ...]
    confidences: tuple[float | None, ...]  # aligned with `codes`


@dataclass(frozen=True)
class ParseResult:
    status: str  # ok | empty | malformed | truncated | api_error: the answer as a whole
    method: str  # whole | fenced | balanced | '' (nothing extracted)
    evaluations: tuple[Evaluation, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class Verdict:
    """One candidate's judgment by one call, or by the clusters of a hierarchical strategy."""

    status: str
    method: str
    label: str | None = None
    codes: tuple[str, ...] = ()
    hallucinated: tuple[str, ...] = ()
    confidences: tuple[float | None, ...] = ()
    cluster_status: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (cluster, status)


# ----- extraction -----------------------------------------------------------------------------
def _loads(text: str) -> Any:
    try:
        # strict=False: raw control characters inside strings are accepted. Grammar-constrained
        # decoders (xgrammar) let a model emit them, and the answer is otherwise valid JSON.
        value = json.loads(text, strict=False)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _balanced_objects(text: str) -> Iterable[str]:
    """Every balanced `{...}` span, in order of its start (strings and escapes respected)."""
    for start in [i for i, ch in enumerate(text) if ch == "{"][:200]:
        depth, in_string, escaped = 0, False, False
        for end in range(start, len(text)):
            ch = text[end]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    yield text[start : end + 1]
                    break


def extract_json(text: str) -> tuple[Any, str]:
    """(value, method) of the first JSON object or array found, or (None, '')."""
    value = _loads(text.strip())
    if value is not None:
        return value, "whole"
    for block in _FENCE.findall(text):
        value = _loads(block.strip())
        if value is not None:
            return value, "fenced"
    for span in _balanced_objects(text):
        value = _loads(span)
        if value is not None:
            return value, "balanced"
    return None, ""


# ----- interpretation ------------------------------------------------------------------------
def _internal(obj: Mapping[str, Any]) -> dict[str, Any]:
    keys = key_map()
    out: dict[str, Any] = {}
    for key, value in obj.items():
        out.setdefault(keys.get(_norm_key(key), f"?{key}"), value)
    return out


def _confidence(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if 1.0 < number <= 100.0:  # a percentage
        number /= 100.0
    return number if 0.0 <= number <= 1.0 else None


def _present(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, (int, float)):
        return value > 0
    if isinstance(value, str):
        return _norm_label(value) not in _ABSENT and value.strip() != ""
    return True


def _error_entries(errors: Any) -> list[tuple[str, float | None]]:
    """(raw code, confidence) pairs from any of the accepted shapes of `errors`."""
    if errors is None:
        return []
    if isinstance(errors, str):
        return [(c, None) for c in re.split(r"[,;\s]+", errors) if c]
    if isinstance(errors, Mapping):
        out = []
        for code, value in errors.items():
            if isinstance(value, Mapping):
                out.append((str(code), _confidence(_internal(value).get("confidence"))))
            elif _present(value):
                out.append((str(code), _confidence(value) if not isinstance(value, bool) else None))
        return out
    if isinstance(errors, list):
        out = []
        for item in errors:
            if isinstance(item, Mapping):
                fields = _internal(item)
                if fields.get("code") is not None:
                    out.append((str(fields["code"]), _confidence(fields.get("confidence"))))
            elif isinstance(item, (str, int)):
                out.extend(_error_entries(str(item)))
        return out
    return []


def _evaluation(obj: Mapping[str, Any], name: str | None = None) -> Evaluation:
    fields = _internal(obj)
    raw_label = fields.get("overall_quality")
    label = label_map().get(_norm_label(raw_label)) if isinstance(raw_label, str) else None
    codes: list[str] = []
    confidences: list[float | None] = []
    hallucinated: list[str] = []
    for raw, confidence in _error_entries(fields.get("errors")):
        known = canonical_code(raw)
        if known is None:
            if _norm_label(raw) not in _ABSENT:
                hallucinated.append(raw.strip())
        elif known not in codes:
            codes.append(known)
            confidences.append(confidence)
    model_name = fields.get("model_name", name)
    return Evaluation(
        None if model_name is None else str(model_name), label,
        None if raw_label is None else str(raw_label), tuple(codes), tuple(dict.fromkeys(hallucinated)), tuple(confidences),
    )


def _evaluation_objects(value: Any) -> list[tuple[Mapping[str, Any], str | None]] | None:
    """The evaluation objects of an answer (with a name when keyed by it); None if unrecognisable."""
    if isinstance(value, list):
        if not value:
            return []
        objects = [(v, None) for v in value if isinstance(v, Mapping)]
        return objects or None
    fields = _internal(value)
    if "evaluations" in fields:
        inner = fields["evaluations"]
        if isinstance(inner, Mapping) and "model_name" not in _internal(inner):
            return [(v, str(k)) for k, v in inner.items() if isinstance(v, Mapping)]
        return _evaluation_objects(inner if isinstance(inner, list) else [inner]) if inner else []
    if "model_name" in fields or "overall_quality" in fields:
        return [(value, None)]
    if value and all(isinstance(v, Mapping) for v in value.values()):
        return [(v, str(k)) for k, v in value.items()]
    return []


def parse_response(text: str | None, finish_reason: str | None = None, error: str | None = None) -> ParseResult:
    """Classify one raw answer and read its evaluations."""
    if error is not None:
        return ParseResult("api_error", "", (), error)
    if text is None or not text.strip():
        return ParseResult("empty", "", (), "no text")
    value, method = extract_json(text)
    if finish_reason == "length" and method != "whole":
        return ParseResult("truncated", method, (), "the answer hit the token limit")
    if value is None:
        return ParseResult("malformed", "", (), "no JSON object in the answer")
    objects = _evaluation_objects(value)
    if objects is None:
        return ParseResult("malformed", method, (), "JSON without evaluation objects")
    if not objects:
        return ParseResult("empty", method, (), "valid JSON with no evaluations")
    return ParseResult("ok", method, tuple(_evaluation(obj, name) for obj, name in objects))


def _name_key(name: str) -> str:
    return name.strip().casefold()


def verdicts(result: ParseResult, generators: Sequence[str]) -> dict[str, Verdict]:
    """Each candidate's verdict from one call (model names matched case-insensitively)."""
    if result.status != "ok":
        return {g: Verdict(result.status, result.method) for g in generators}
    by_name: dict[str, Evaluation] = {}
    for evaluation in result.evaluations:
        if evaluation.model_name is not None:
            name = _name_key(evaluation.model_name)
            by_name.setdefault(name, evaluation)
            by_name.setdefault(name.rsplit("/", 1)[-1], evaluation)
    unnamed = [e for e in result.evaluations if e.model_name is None]
    out = {}
    for generator in generators:
        evaluation = by_name.get(_name_key(generator)) or by_name.get(_name_key(generator).rsplit("/", 1)[-1])
        if evaluation is None and len(generators) == 1 and len(result.evaluations) == 1:
            evaluation = result.evaluations[0]
        elif evaluation is None and len(unnamed) == 1 and len(generators) == 1:
            evaluation = unnamed[0]
        if evaluation is None:
            out[generator] = Verdict("empty", result.method)
            continue
        status = "ok" if evaluation.label is not None else "malformed"
        out[generator] = Verdict(status, result.method, evaluation.label, evaluation.codes,
                                 evaluation.hallucinated, evaluation.confidences)
    return out


def worst_label(labels: Iterable[str]) -> str | None:
    """The worst of some labels (incorrect < partial < correct), None if there are none."""
    ranked = [LABELS.index(label) for label in labels]
    return LABELS[min(ranked)] if ranked else None


def combine_clusters(per_cluster: Mapping[str, Verdict]) -> Verdict:
    """The hierarchical verdict: worst label over the clusters that parsed, union of their codes."""
    parsed = [v for v in per_cluster.values() if v.status == "ok"]
    cluster_status = tuple((cluster, v.status) for cluster, v in per_cluster.items())
    if not parsed:
        counts = Counter(v.status for v in per_cluster.values())
        status = max(_FAILURE_ORDER, key=lambda s: (counts[s], -_FAILURE_ORDER.index(s)))
        return Verdict(status, "", cluster_status=cluster_status)
    codes: dict[str, float | None] = {}
    hallucinated: dict[str, None] = {}
    for verdict in parsed:
        for code, confidence in zip(verdict.codes, verdict.confidences):
            codes.setdefault(code, confidence)
        hallucinated.update(dict.fromkeys(verdict.hallucinated))
    methods = Counter(v.method for v in parsed)
    return Verdict(
        "ok", methods.most_common(1)[0][0], worst_label(v.label for v in parsed if v.label is not None),
        tuple(codes), tuple(hallucinated), tuple(codes.values()), cluster_status,
    )
