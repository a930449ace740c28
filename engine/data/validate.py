"""Row validation and quarantine: bad input rows are rejected with a reason, never crash a run.

`validate_row` returns a clean sample dict or the reason it is rejected; `SampleValidator`
adds the checks that need memory of earlier rows (duplicate sample_id) and counts reasons.
Every rejection has a *kind* (a fixed phrase, e.g. "offsets out of range") and a whole
reason (the kind with the row's particulars); summaries group whole reasons by kind.

Labels are read case-insensitively through the aliases of engine.vocabulary (the same
ones the converter uses) and stored canonical. Error codes are checked against the taxonomy:
known ones are stored in their taxonomy spelling; unknown ones are kept and counted (`warn`,
the default) or quarantine the row (`reject`), by `validation.unknown_error_codes`.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from engine.data.params import ValidationParams
from engine.data.reader import RawRow
from engine.hints import did_you_mean
from engine.records import LABELS, REQUIRED_SAMPLE_COLUMNS, SAMPLE_SCHEMA
from engine.vocabulary import canonical_codes, canonical_label, label_spellings, split_codes

STRING_FIELDS = ("sample_id", "file_id", "language", "source", "reference")
OPTIONAL_STRING_FIELDS = ("generator", "prime", "prediction", "label")
OFFSET_FIELDS = ("comment_start", "comment_end")
INT32_MAX = 2**31 - 1


class RowRejected(Exception):
    """`kind` groups rejections in summaries; `reason` is the whole message for the row."""

    def __init__(self, reason: str, kind: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind or reason


def _check_utf8(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RowRejected(
            f"field {name!r} is not valid UTF-8 (unpaired surrogate at character {exc.start})", "invalid UTF-8"
        ) from None


def _error_codes(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):  # the public release stores them comma-separated
        return split_codes(value)
    if isinstance(value, (list, tuple)) and all(isinstance(code, str) for code in value):
        return list(value)
    raise RowRejected(f"field 'error_codes' must be a list of strings or null, got {value!r}", "bad error_codes type")


def validate_row(
    values: dict[str, Any], require_prediction: bool, unknown_error_codes: str = "warn"
) -> tuple[dict[str, Any], list[str]]:
    """(the row as a SAMPLE_SCHEMA dict, its error codes outside the taxonomy), or RowRejected."""
    for name in REQUIRED_SAMPLE_COLUMNS:
        if values.get(name) is None:
            raise RowRejected(f"missing required field {name!r}", "missing required field")
    for name in STRING_FIELDS:
        if not isinstance(values[name], str):
            raise RowRejected(f"field {name!r} must be a string, got {type(values[name]).__name__}", "field not a string")
        _check_utf8(name, values[name])
    for name in OPTIONAL_STRING_FIELDS:
        value = values.get(name)
        if value is not None:
            if not isinstance(value, str):
                raise RowRejected(
                    f"field {name!r} must be a string or null, got {type(value).__name__}", "field not a string"
                )
            _check_utf8(name, value)
    if not values["sample_id"].strip():
        raise RowRejected("empty sample_id")
    if not values["source"]:
        raise RowRejected("empty source")
    for name in OFFSET_FIELDS:
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise RowRejected(f"field {name!r} must be an integer, got {value!r}", "offset not an integer")
    start, end, source = values["comment_start"], values["comment_end"], values["source"]
    if not (0 <= start < end <= len(source)) or end > INT32_MAX:
        raise RowRejected(
            f"offsets out of range: comment_start={start}, comment_end={end}, len(source)={len(source)}"
            + _byte_offsets_hint(source, start, end, values["reference"]),
            "offsets out of range",
        )
    if source[start:end] != values["reference"]:
        raise RowRejected(offsets_mismatch(source, start, end, values["reference"]),
                          "reference does not equal source[comment_start:comment_end]")
    prime = values.get("prime") or ""
    if not values["reference"].startswith(prime):
        raise RowRejected("reference does not start with prime")
    label = values.get("label")
    if label is not None:
        label = canonical_label(label)
        if label is None:
            raise RowRejected(
                f"unknown label {values['label']!r}{did_you_mean(values['label'].strip().lower(), label_spellings())}; "
                f"allowed: {list(LABELS)} (any case; also {[s for s in label_spellings() if s not in LABELS]}) or null",
                "unknown label",
            )
    if require_prediction and values.get("prediction") is None:
        raise RowRejected("missing prediction (this config has no generate stage, so every row needs one)")
    codes, unknown = (None, [])
    raw_codes = _error_codes(values.get("error_codes"))
    if raw_codes is not None:
        codes, unknown = canonical_codes(raw_codes)
        if unknown and unknown_error_codes == "reject":
            raise RowRejected(
                f"error code(s) {unknown} are not in the taxonomy (see engine.taxonomy.CODES); "
                "fix them, or set validation.unknown_error_codes: warn to keep such rows",
                "unknown error code",
            )
    row = {field.name: values.get(field.name) for field in SAMPLE_SCHEMA}
    row["prime"] = prime
    row["label"] = label
    row["error_codes"] = codes
    return row, unknown


def _clip(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def offsets_mismatch(source: str, start: int, end: int, reference: str) -> str:
    """The whole reason for a reference that is not the span: both strings, and where the
    reference does occur in the source (or that the offsets look like byte offsets)."""
    reason = (f"reference does not equal source[comment_start:comment_end]: the span [{start}:{end}] is "
              f"{_clip(source[start:end])}, the reference is {_clip(reference)}")
    at = source.find(reference) if reference else -1
    if at >= 0:
        more = source.count(reference)
        reason += (f"; the reference occurs at comment_start={at}, comment_end={at + len(reference)}"
                   + (f" (first of {more} occurrences)" if more > 1 else ""))
    else:
        reason += "; the reference does not occur in the source"
    return reason + _byte_offsets_hint(source, start, end, reference)


def _byte_offsets_hint(source: str, start: Any, end: Any, reference: Any) -> str:
    if not (isinstance(start, int) and isinstance(end, int) and isinstance(reference, str)) or start < 0:
        return ""
    if source.encode("utf-8")[start:end].decode("utf-8", "replace") == reference:
        return "; the offsets match the UTF-8 bytes: give character offsets (Python string indices)"
    return ""


def _storable(text: str) -> str:
    """Text Arrow can store: unpaired surrogates become visible escapes instead of an error."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def raw_json(row: RawRow) -> str:
    if row.values is None:
        return _storable(row.raw_text or "")
    return _storable(json.dumps(row.values, ensure_ascii=False, default=repr))


INPUT_COLUMNS = tuple(field.name for field in SAMPLE_SCHEMA)


def _likely(name: str, choices: list[str]) -> str | None:
    """The choice `name` most likely stands for: a close spelling, or a prefix ('lang' -> 'language')."""
    import difflib

    close = difflib.get_close_matches(name.lower(), choices, n=1, cutoff=0.6)
    if close:
        return close[0]
    prefixed = [c for c in choices if len(name) >= 3 and (c.startswith(name.lower()) or name.lower().startswith(c))]
    return prefixed[0] if len(prefixed) == 1 else None


def column_notes(columns: Any) -> tuple[list[str], dict[str, str]]:
    """What is wrong with an input's column names, once per input rather than once per row.

    Returns (messages, field -> note): a message per unknown column (named, with the required or
    optional column it likely stands for), and for each required field that is absent but likely
    given under another name, the note its rows' rejections carry."""
    present = [str(c) for c in columns]
    unknown = [c for c in present if c not in INPUT_COLUMNS]
    missing = [c for c in REQUIRED_SAMPLE_COLUMNS if c not in present]
    messages, explained = [], {}
    for column in unknown:
        target = _likely(column, missing) or _likely(column, [c for c in INPUT_COLUMNS if c not in present])
        twin = None if target else _likely(column, list(INPUT_COLUMNS))  # a near-copy of a column that is present
        if target in missing:
            messages.append(f"column {column!r} is not an input column: did you mean {target!r} (a required field, "
                            f"missing)? Rename the column; every row is rejected until then")
            explained[target] = f"column {column!r} present: rename it to {target!r}"
        elif target is not None:
            messages.append(f"column {column!r} is not an input column and is not read: did you mean {target!r}?")
        elif twin is not None:
            messages.append(f"column {column!r} is not an input column and is not read: did you mean {twin!r}? (a "
                            f"{twin!r} column is present too and is the one read; drop or rename {column!r})")
    rest = [c for c in unknown if not any(repr(c) in m for m in messages)]
    if rest:
        messages.append(f"column(s) {', '.join(map(repr, rest))} are not input columns and are not read "
                        f"(input columns: {', '.join(INPUT_COLUMNS)})")
    return messages, explained


class SampleValidator:
    """Validates rows in input order; remembers sample_ids to catch duplicates."""

    def __init__(self, require_prediction: bool, params: ValidationParams | None = None):
        self.require_prediction = require_prediction
        self.params = params or ValidationParams()
        self._first_seen: dict[str, int] = {}
        self.reasons: Counter[str] = Counter()  # reason kind -> rows
        self.examples: dict[str, Counter[str]] = defaultdict(Counter)  # kind -> whole reason -> rows
        self.unknown_codes: Counter[str] = Counter()  # code outside the taxonomy -> rows (kept rows)
        self.spaced_labels: Counter[tuple[str, str]] = Counter()  # (label as written, read as) with stray spaces
        self.valid = 0
        self.rejected = 0
        # column-name problems, said once per distinct set of columns (JSONL rows may differ)
        self.column_messages: list[str] = []
        self._column_sets: dict[frozenset, dict[str, str]] = {}

    def check(self, row: RawRow) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(valid sample, None) or (None, rejected record)."""
        try:
            if row.values is None:
                raise RowRejected(row.problem or "unreadable row")
            columns = frozenset(row.values)
            if columns not in self._column_sets:
                messages, explained = column_notes(sorted(columns))
                self._column_sets[columns] = explained
                self.column_messages += [m for m in messages if m not in self.column_messages]
            try:
                sample, unknown = validate_row(row.values, self.require_prediction, self.params.unknown_error_codes)
            except RowRejected as rejection:
                missing = next((f for f in self._column_sets[columns] if rejection.reason == f"missing required field {f!r}"), None)
                if missing is None:
                    raise
                note = f"missing required field {missing!r} ({self._column_sets[columns][missing]})"
                raise RowRejected(note, note) from None
            first = self._first_seen.get(sample["sample_id"])
            if first is not None:
                raise RowRejected(f"duplicate sample_id (first seen at row {first})", "duplicate sample_id")
            self._first_seen[sample["sample_id"]] = row.index
        except RowRejected as rejection:
            self.rejected += 1
            kind = rejection.kind if row.values is not None else _undecodable_kind(rejection.reason)
            self.reasons[kind] += 1
            self.examples[kind][rejection.reason] += 1
            sample_id = row.values.get("sample_id") if row.values else None
            return None, {
                "row_index": row.index,
                "sample_id": _storable(sample_id) if isinstance(sample_id, str) else None,
                "reason": rejection.reason,
                "raw": raw_json(row),
            }
        self.valid += 1
        self.unknown_codes.update(set(unknown))
        written = row.values.get("label")
        if isinstance(written, str) and written != " ".join(written.split()):
            self.spaced_labels[(written, sample["label"])] += 1
        return sample, None

    def summary_lines(self, examples: int = 3, where: str | None = "rejected.parquet", all_listed: bool = False) -> list[str]:
        """Rejections grouped by kind, most frequent first, each with up to `examples` whole reasons.
        where: the file that holds every reason (None when nothing was written: `validate`);
        all_listed: every rejected row was printed above with its reason (where is None)."""
        lines = []
        for kind, count in self.reasons.most_common():
            lines.append(f"{count:6d}  {kind}")
            reasons = self.examples[kind]
            if len(reasons) == 1 and next(iter(reasons)) == kind:
                continue
            for reason, n in reasons.most_common(examples):
                lines.append(f"{n:6d}    {reason}")
            if len(reasons) > examples:
                place = (f" in {where}" if where else " (listed row by row above)" if all_listed
                         else " (not shown: --show N lists N rejected rows with their reasons)")
                lines.append(f"{'':6s}    ... {len(reasons) - examples} more distinct reason(s){place}")
        return lines

    def label_warning(self) -> str | None:
        """The warning for labels read after removing stray spaces (`"Correct "` -> correct), or None."""
        if not self.spaced_labels:
            return None
        listed = ", ".join(f"{written!r} -> {label} ({n} rows)" for (written, label), n in self.spaced_labels.most_common(5))
        more = f" and {len(self.spaced_labels) - 5} more spellings" if len(self.spaced_labels) > 5 else ""
        return f"labels with stray spaces were read as the label they spell: {listed}{more}; check the input if that is not meant"

    def unknown_codes_warning(self) -> str | None:
        """The console warning for kept rows with codes outside the taxonomy, or None."""
        if not self.unknown_codes:
            return None
        listed = ", ".join(f"{code} ({n} rows)" for code, n in self.unknown_codes.most_common(10))
        return (
            f"error codes outside the taxonomy were kept: {listed}; they count for no category. "
            "Fix them in the input, or set `validation: {unknown_error_codes: reject}` to quarantine such rows"
        )


def _undecodable_kind(reason: str) -> str:
    """Rows the reader could not decode: 'invalid JSON: ... at column 3' -> 'invalid JSON'."""
    for kind in ("invalid UTF-8", "invalid JSON", "a row must be a JSON object"):
        if reason.startswith(kind):
            return kind
    return "unreadable row"
