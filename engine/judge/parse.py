"""Turning a judge's raw answer into per-candidate verdicts, every failure classified.

JSON is found by the routes of engine/judge/answer_json.py; keys, label values and rubric marks in
any prompt language (or the user pack's wording, with or without accents) are mapped back to
internal names; the per-candidate list and the errors are read in every form judges write them.
Per-candidate classes: `ok`, `empty`, `malformed`, `truncated`, `api_error`. A response is `ok`
only when every candidate it had to judge parsed; when only some did it is `partial` and says
how many. A failure is never turned into a label: the label stays missing and the class is
counted. docs/judges.md ("Reading an answer") lists the forms read and defines each class.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from engine.judge.answer_json import extract_json
from engine.judge.promptpack import FIELDS, PROMPT_LANGUAGES, PromptPack, load_pack
from engine.records import LABELS
from engine.taxonomy import canonical_code

__all__ = ["PARSE_CLASSES", "RESPONSE_CLASSES", "Evaluation", "ParseResult", "Verdict", "extract_json", "parse_response",
           "verdicts", "response_status", "worst_label", "combine_clusters"]

PARSE_CLASSES = ("ok", "empty", "malformed", "truncated", "api_error")
RESPONSE_CLASSES = ("ok", "partial", "empty", "malformed", "truncated", "api_error")
# When every cluster of a hierarchical call failed, ties between classes go to the first here.
_FAILURE_ORDER = ("api_error", "truncated", "malformed", "empty")
# Other spellings of keys real judges use, beyond the packs' field names.
_ALIASES = {
    "code": ("id", "error", "error_id", "error_code", "type"),
    "model_name": ("model", "candidate", "candidate_model", "generator", "model_id"),
    "overall_quality": ("label", "quality", "overall_label", "verdict"),
    "mark": ("status", "mark", "present", "presence", "assessment", "result", "value", "detected"),
}
# Marks every language's answers may use besides the packs' own.
_EXTRA_ABSENT = ("n/a", "na", "-", "0", "n", "not_present", "not applicable")


# Letters NFKD does not split into a base letter and a mark (Polish ł, ...).
_UNSPLIT = str.maketrans({"ł": "l", "đ": "d", "ø": "o", "ß": "ss"})


def _fold(text: str) -> str:
    """Casefolded, accents removed: the shipped packs write Greek and Polish keys without accents
    (`id_bledu`), a judge often with them (`id_błędu`, `αναγνωριστικό_σφάλματος`); both must match."""
    decomposed = unicodedata.normalize("NFKD", str(text).strip().casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).translate(_UNSPLIT)


def _norm_key(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", _fold(text))


def _norm_label(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", re.sub(r"[.!。:：\"'`*]", "", _fold(text))).strip()


@dataclass(frozen=True)
class _Maps:
    keys: dict[str, str]  # normalised output key -> internal field name
    labels: dict[str, str]  # normalised label value or variant -> internal label
    marks: dict[str, bool]  # normalised rubric mark -> present?


def _packs_maps(packs: Sequence[PromptPack], check_conflicts: bool) -> _Maps:
    keys = {_norm_key(name): name for name in FIELDS}
    labels: dict[str, str] = {}
    marks: dict[str, bool] = {}
    for pack in packs:
        for name, translated in pack.data["fields"].items():
            keys.setdefault(_norm_key(translated), name)
        for name, variants in (pack.data.get("field_variants") or {}).items():
            for variant in variants:
                keys.setdefault(_norm_key(variant), name)
        for internal in LABELS:
            for value in (internal, pack.data["labels"][internal], *pack.data["label_variants"][internal]):
                known = labels.setdefault(_norm_label(value), internal)
                if known != internal and check_conflicts:
                    raise ValueError(f"label {value!r} of pack {pack.language!r} means both {known} and {internal}")
        for kind in ("present", "absent"):
            for mark in pack.data["marks"][kind]:
                marks.setdefault(_norm_label(mark), kind == "present")
    for internal, aliases in _ALIASES.items():
        for alias in aliases:
            keys.setdefault(_norm_key(alias), internal)
    for mark in _EXTRA_ABSENT:
        marks.setdefault(_norm_label(mark), False)
    return _Maps(keys, labels, marks)


_SHIPPED: list[_Maps] = []
_USER: dict[tuple[str, str], _Maps] = {}


def _maps(pack: PromptPack | None = None) -> _Maps:
    """The shipped packs' maps; with a user pack, its wording first (it wins where they differ)."""
    if not _SHIPPED:
        _SHIPPED.append(_packs_maps([load_pack(language) for language in PROMPT_LANGUAGES], check_conflicts=True))
    if pack is None or pack.source == "shipped":
        return _SHIPPED[0]
    key = (pack.language, pack.source)
    if key not in _USER:
        _USER[key] = _packs_maps([pack, *(load_pack(language) for language in PROMPT_LANGUAGES)], check_conflicts=False)
    return _USER[key]


@dataclass(frozen=True)
class Evaluation:
    """One evaluation as read from the answer (label None when missing or unknown)."""

    model_name: str | None
    label: str | None
    raw_label: str | None
    codes: tuple[str, ...]
    hallucinated: tuple[str, ...]
    confidences: tuple[float | None, ...]  # aligned with `codes`
    problem: str = ""  # why the errors could not all be read (the evaluation then does not count as parsed)


@dataclass(frozen=True)
class ParseResult:
    status: str  # ok | partial | empty | malformed | truncated | api_error: the answer as a whole
    method: str  # whole | fenced | balanced | tolerant | '' (nothing extracted)
    evaluations: tuple[Evaluation, ...] = ()
    detail: str = ""
    parsed: int = 0  # candidates of `expected` that got a label (when the candidates were given)
    expected: int = 0


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


# ----- interpretation ------------------------------------------------------------------------
class _Reader:
    """Reads evaluation objects with one set of maps (the shipped packs', or a user pack's first)."""

    def __init__(self, maps: _Maps):
        self.maps = maps
        self.problems: list[str] = []  # of the evaluation being read

    def object_code(self, fields: Mapping[str, Any], item: Mapping[str, Any]) -> Any:
        """The code of an error object: its code key, else its only value that is a taxonomy id;
        None (noted as a problem) when neither, so an unreadable error is never silently dropped."""
        if fields.get("code") is not None:
            return fields["code"]
        ids = [v for v in item.values() if isinstance(v, str) and canonical_code(v) is not None]
        if len(ids) == 1:
            return ids[0]
        self.problems.append(f"an error object without a recognisable code key: {sorted(map(str, item))}")
        return None

    def internal(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.setdefault(self.maps.keys.get(_norm_key(key), f"?{key}"), value)
        return out

    def mark(self, value: Any) -> bool | None:
        """Present (True), absent (False) or not a mark (None)."""
        if isinstance(value, bool):
            return value
        if value is None:
            return False
        if isinstance(value, (int, float)):
            return value > 0
        if isinstance(value, str):
            return self.maps.marks.get(_norm_label(value))
        return None

    def present(self, value: Any) -> bool:
        """For a value given for a code: a mark decides; any other text (an explanation) means present."""
        mark = self.mark(value)
        if mark is not None:
            return mark
        return not (isinstance(value, str) and not value.strip())

    def string_entries(self, text: str) -> list[tuple[str, float | None]]:
        """Codes from a string: `SE-MD, LG-GR4`, `SE-MD LG-GR4`, `SE-MD: PRESENT`, `LG-GR4 (ABSENT)`."""
        out: list[tuple[str, float | None]] = []
        for item in (x.strip() for x in re.split(r"[,;\n]+", text)):
            if not item:
                continue
            tokens = item.split()
            if all(canonical_code(t) is not None for t in tokens):
                out.extend((t, None) for t in tokens)
                continue
            match = re.match(r"^([A-Za-z]{1,2}(?:-[A-Za-z]{2}\d?)?)\s*[:=(\-–—：（]?\s*(.*?)[)）]?\s*$", item)
            if match and canonical_code(match.group(1)) is not None:
                if not match.group(2) or self.present(match.group(2)):
                    out.append((match.group(1), None))
            elif self.mark(item) is None:  # a bare mark is no code
                out.append((item, None))
        return out

    def error_entries(self, errors: Any) -> list[tuple[str, float | None]]:
        """(raw code, confidence) pairs of the present codes, from any accepted shape of `errors`."""
        if errors is None:
            return []
        if isinstance(errors, str):
            return self.string_entries(errors)
        if isinstance(errors, Mapping):
            out = []
            for code, value in errors.items():
                if isinstance(value, Mapping):
                    fields = self.internal(value)
                    if "mark" not in fields or self.present(fields["mark"]):
                        out.append((str(code), _confidence(fields.get("confidence"))))
                elif self.present(value):
                    out.append((str(code), _confidence(value) if not isinstance(value, (bool, str)) else None))
            return out
        if isinstance(errors, list):
            out = []
            for item in errors:
                if isinstance(item, Mapping):
                    fields = self.internal(item)
                    code = self.object_code(fields, item)
                    if code is not None and ("mark" not in fields or self.present(fields["mark"])):
                        out.append((str(code), _confidence(fields.get("confidence"))))
                elif isinstance(item, (str, int)):
                    out.extend(self.error_entries(str(item)))
            return out
        return []

    def rubric_entries(self, obj: Mapping[str, Any]) -> list[tuple[str, float | None]]:
        """Codes marked present outside `errors`: code ids as keys of the evaluation, or a map
        of code ids (most of its keys) under another key (`rubric`, `criteria`, ...)."""
        direct = {k: v for k, v in obj.items() if canonical_code(str(k)) is not None}
        out = self.error_entries(direct) if direct else []
        for key, value in obj.items():
            if key in direct or self.maps.keys.get(_norm_key(key)) is not None:
                continue
            if isinstance(value, Mapping) and value and \
                    sum(canonical_code(str(k)) is not None for k in value) * 2 >= len(value):
                out += self.error_entries(value)
            elif isinstance(value, list) and value and all(isinstance(v, Mapping) and "code" in self.internal(v) for v in value):
                out += self.error_entries(value)
        return out

    def evaluation(self, obj: Mapping[str, Any], name: str | None = None) -> Evaluation:
        self.problems = []
        fields = self.internal(obj)
        raw_label = fields.get("overall_quality")
        label = self.maps.labels.get(_norm_label(raw_label)) if isinstance(raw_label, str) else None
        codes: list[str] = []
        confidences: list[float | None] = []
        hallucinated: list[str] = []
        for raw, confidence in self.error_entries(fields.get("errors")) + self.rubric_entries(obj):
            known = canonical_code(raw)
            if known is None:
                if self.mark(raw) is None:
                    hallucinated.append(raw.strip())
            elif known not in codes:
                codes.append(known)
                confidences.append(confidence)
        model_name = fields.get("model_name", name)
        return Evaluation(
            None if model_name is None else str(model_name), label,
            None if raw_label is None else str(raw_label), tuple(codes), tuple(dict.fromkeys(hallucinated)), tuple(confidences),
            "; ".join(dict.fromkeys(self.problems)),
        )

    def names_candidate(self, value: Any) -> bool:
        return isinstance(value, Mapping) and "model_name" in self.internal(value)

    def evaluation_objects(self, value: Any, depth: int = 0) -> list[tuple[Mapping[str, Any], str | None]] | None:
        """The evaluation objects of an answer (with a name when keyed by it); None if unrecognisable."""
        if isinstance(value, list):
            if not value:
                return []
            objects = [(v, None) for v in value if isinstance(v, Mapping)]
            return objects or None
        fields = self.internal(value)
        if "evaluations" in fields:
            inner = fields["evaluations"]
            if isinstance(inner, Mapping) and "model_name" not in self.internal(inner):
                return [(v, str(k)) for k, v in inner.items() if isinstance(v, Mapping)]
            return self.evaluation_objects(inner if isinstance(inner, list) else [inner]) if inner else []
        if "model_name" in fields or "overall_quality" in fields:
            return [(value, None)]
        # The per-candidate list under another key (`results`, `model_predictions`, ...): taken
        # when every item names its candidate, so an unrelated list is never read as verdicts.
        for inner in value.values():
            if isinstance(inner, list) and inner and all(self.names_candidate(v) for v in inner):
                return [(v, None) for v in inner]
        if depth < 2 and len(value) == 1:  # one wrapping object, e.g. {"response": {"evaluations": [...]}}
            (inner,) = value.values()
            if isinstance(inner, (Mapping, list)):
                found = self.evaluation_objects(inner, depth + 1)
                if found:
                    return found
        if value and all(isinstance(v, Mapping) for v in value.values()):
            return [(v, str(k)) for k, v in value.items()]
        return []


def _confidence(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if 1.0 < number <= 100.0:  # a percentage
        number /= 100.0
    return number if 0.0 <= number <= 1.0 else None


def _name_key(name: str) -> str:
    return name.strip().casefold()


def _match(evaluations: Sequence[Evaluation], generators: Sequence[str]) -> dict[str, Evaluation | None]:
    """Each candidate's evaluation (model names matched case-insensitively, hub names on their last part)."""
    by_name: dict[str, Evaluation] = {}
    for evaluation in evaluations:
        if evaluation.model_name is not None:
            name = _name_key(evaluation.model_name)
            by_name.setdefault(name, evaluation)
            by_name.setdefault(name.rsplit("/", 1)[-1], evaluation)
    unnamed = [e for e in evaluations if e.model_name is None]
    out: dict[str, Evaluation | None] = {}
    for generator in generators:
        evaluation = by_name.get(_name_key(generator)) or by_name.get(_name_key(generator).rsplit("/", 1)[-1])
        if evaluation is None and len(generators) == 1 and len(evaluations) == 1:
            evaluation = evaluations[0]
        elif evaluation is None and len(unnamed) == 1 and len(generators) == 1:
            evaluation = unnamed[0]
        out[generator] = evaluation
    return out


def parse_response(text: str | None, finish_reason: str | None = None, error: str | None = None,
                   generators: Sequence[str] | None = None, pack: PromptPack | None = None) -> ParseResult:
    """Classify one raw answer and read its evaluations.

    With `generators` (the candidates the call had to judge) the response is `ok` only when
    every one of them got a label, `partial` when some did (`detail` says how many).
    `pack`: a user prompt pack whose wording the answer may use.
    """
    expected = len(generators) if generators is not None else 0

    def failed(status: str, method: str, detail: str) -> ParseResult:
        return ParseResult(status, method, (), detail, 0, expected)

    if error is not None:
        return failed("api_error", "", error)
    if text is None or not text.strip():
        return failed("empty", "", "no text")
    reader = _Reader(_maps(pack))
    value, method = extract_json(text, reader.names_candidate)
    if finish_reason == "length" and method != "whole":
        return failed("truncated", method, "the answer hit the token limit")
    if value is None:
        return failed("malformed", "", "no JSON object in the answer")
    objects = reader.evaluation_objects(value)
    if objects is None:
        return failed("malformed", method, "JSON without evaluation objects")
    if not objects:
        return failed("empty", method, "valid JSON with no evaluations")
    evaluations = tuple(reader.evaluation(obj, name) for obj, name in objects)
    if generators is None:
        return ParseResult("ok", method, evaluations)
    parsed = sum(e is not None and e.label is not None and not e.problem for e in _match(evaluations, generators).values())
    if parsed == expected:
        return ParseResult("ok", method, evaluations, "", parsed, expected)
    status = "partial" if parsed else ("malformed" if any(e.label is None or e.problem for e in evaluations) else "empty")
    return ParseResult(status, method, evaluations, f"{parsed} of {expected} candidates parsed", parsed, expected)


def verdicts(result: ParseResult, generators: Sequence[str]) -> dict[str, Verdict]:
    """Each candidate's verdict from one call."""
    if not result.evaluations:
        return {g: Verdict(result.status, result.method) for g in generators}
    out = {}
    for generator, evaluation in _match(result.evaluations, generators).items():
        if evaluation is None:
            out[generator] = Verdict("empty", result.method)
            continue
        status = "ok" if evaluation.label is not None and not evaluation.problem else "malformed"
        out[generator] = Verdict(status, result.method, evaluation.label if status == "ok" else None, evaluation.codes,
                                 evaluation.hallucinated, evaluation.confidences)
    return out


def response_status(results: Sequence[ParseResult]) -> str:
    """The status of the call(s) that judged one file: `ok` when every candidate of every call
    parsed, `partial k/n` (candidates over calls) when some did, else the commonest failure."""
    parsed, expected = sum(r.parsed for r in results), sum(r.expected for r in results)
    if expected and parsed == expected:
        return "ok"
    if parsed:
        return f"partial {parsed}/{expected}"
    counts = Counter(r.status for r in results if r.status != "ok")
    if not counts:
        return "ok"
    return max(counts, key=lambda s: (counts[s], -RESPONSE_CLASSES.index(s)))


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
