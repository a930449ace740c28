"""Row validation and quarantine: bad input rows are rejected with a reason, never crash a run.

`validate_row` returns a clean sample dict or the reason it is rejected; `SampleValidator`
adds the checks that need memory of earlier rows (duplicate sample_id) and counts reasons.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from engine.data.reader import RawRow
from engine.records import LABELS, REQUIRED_SAMPLE_COLUMNS, SAMPLE_SCHEMA

STRING_FIELDS = ("sample_id", "file_id", "language", "source", "reference")
OPTIONAL_STRING_FIELDS = ("generator", "prime", "prediction", "label")
OFFSET_FIELDS = ("comment_start", "comment_end")
INT32_MAX = 2**31 - 1


class RowRejected(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _check_utf8(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RowRejected(f"field {name!r} is not valid UTF-8 (unpaired surrogate at character {exc.start})") from None


def _error_codes(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):  # the public release stores them comma-separated
        return [code.strip() for code in value.split(",") if code.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(code, str) for code in value):
        return list(value)
    raise RowRejected(f"field 'error_codes' must be a list of strings or null, got {value!r}")


def validate_row(values: dict[str, Any], require_prediction: bool) -> dict[str, Any]:
    """Return the row as a SAMPLE_SCHEMA dict, or raise RowRejected with the reason."""
    for name in REQUIRED_SAMPLE_COLUMNS:
        if values.get(name) is None:
            raise RowRejected(f"missing required field {name!r}")
    for name in STRING_FIELDS:
        if not isinstance(values[name], str):
            raise RowRejected(f"field {name!r} must be a string, got {type(values[name]).__name__}")
        _check_utf8(name, values[name])
    for name in OPTIONAL_STRING_FIELDS:
        value = values.get(name)
        if value is not None:
            if not isinstance(value, str):
                raise RowRejected(f"field {name!r} must be a string or null, got {type(value).__name__}")
            _check_utf8(name, value)
    if not values["sample_id"].strip():
        raise RowRejected("empty sample_id")
    if not values["source"]:
        raise RowRejected("empty source")
    for name in OFFSET_FIELDS:
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise RowRejected(f"field {name!r} must be an integer, got {value!r}")
    start, end, source = values["comment_start"], values["comment_end"], values["source"]
    if not (0 <= start < end <= len(source)) or end > INT32_MAX:
        raise RowRejected(f"offsets out of range: comment_start={start}, comment_end={end}, len(source)={len(source)}")
    if source[start:end] != values["reference"]:
        raise RowRejected("reference does not equal source[comment_start:comment_end]")
    prime = values.get("prime") or ""
    if not values["reference"].startswith(prime):
        raise RowRejected("reference does not start with prime")
    label = values.get("label")
    if label is not None and label not in LABELS:
        raise RowRejected(f"unknown label {label!r}; allowed: {list(LABELS)} or null")
    if require_prediction and values.get("prediction") is None:
        raise RowRejected("missing prediction (this config has no generate stage, so every row needs one)")
    row = {field.name: values.get(field.name) for field in SAMPLE_SCHEMA}
    row["prime"] = prime
    row["error_codes"] = _error_codes(values.get("error_codes"))
    return row


def _storable(text: str) -> str:
    """Text Arrow can store: unpaired surrogates become visible escapes instead of an error."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def raw_json(row: RawRow) -> str:
    if row.values is None:
        return _storable(row.raw_text or "")
    return _storable(json.dumps(row.values, ensure_ascii=False, default=repr))


class SampleValidator:
    """Validates rows in input order; remembers sample_ids to catch duplicates."""

    def __init__(self, require_prediction: bool):
        self.require_prediction = require_prediction
        self._first_seen: dict[str, int] = {}
        self.reasons: Counter[str] = Counter()
        self.valid = 0
        self.rejected = 0

    def check(self, row: RawRow) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(valid sample, None) or (None, rejected record)."""
        try:
            if row.values is None:
                raise RowRejected(row.problem or "unreadable row")
            sample = validate_row(row.values, self.require_prediction)
            first = self._first_seen.get(sample["sample_id"])
            if first is not None:
                raise RowRejected(f"duplicate sample_id (first seen at row {first})")
            self._first_seen[sample["sample_id"]] = row.index
        except RowRejected as rejection:
            self.rejected += 1
            self.reasons[_reason_kind(rejection.reason)] += 1
            sample_id = row.values.get("sample_id") if row.values else None
            return None, {
                "row_index": row.index,
                "sample_id": _storable(sample_id) if isinstance(sample_id, str) else None,
                "reason": rejection.reason,
                "raw": raw_json(row),
            }
        self.valid += 1
        return sample, None


def _reason_kind(reason: str) -> str:
    """Group reasons for the console summary ('offsets out of range: ...' -> 'offsets out of range')."""
    return reason.split(":")[0].split(" (")[0]
