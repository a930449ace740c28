"""One vocabulary for expert labels and error codes, shared by validation and the converter.

Labels are matched case-insensitively, surrounding space removed, through one alias table,
so `Correct`, `partially correct` and `Partially_Correct` mean the same wherever a table
enters babelscore. Error codes are matched against the study's taxonomy (engine.taxonomy):
case-insensitive, aliases such as `SE-OI` mapped to their taxonomy id.
"""
from __future__ import annotations

from typing import Any, Iterable

from engine.records import LABELS
from engine.taxonomy import canonical_code

# Spelling as written (lower case, spaces/underscores/hyphens as one space) -> label.
LABEL_ALIASES: dict[str, str] = {
    "correct": "correct",
    "partial": "partial",
    "partially correct": "partial",
    "partly correct": "partial",
    "incorrect": "incorrect",
    "wrong": "incorrect",
}
assert set(LABEL_ALIASES.values()) == set(LABELS)


def _label_key(value: str) -> str:
    return " ".join(value.strip().lower().replace("_", " ").replace("-", " ").split())


def canonical_label(value: str) -> str | None:
    """The label `value` stands for (one of LABELS), or None when it is no known spelling."""
    return LABEL_ALIASES.get(_label_key(value))


def normalise_label(value: Any) -> Any:
    """`value` as its canonical label when it is a known spelling, else unchanged (for quarantine)."""
    if isinstance(value, str):
        return canonical_label(value) or value
    return value


def label_spellings() -> list[str]:
    """Every accepted spelling, for error messages."""
    return sorted(LABEL_ALIASES)


def split_codes(value: str) -> list[str]:
    """The public release stores codes comma-separated: 'SE-MD, MS-LT' -> ['SE-MD', 'MS-LT']."""
    return [code.strip() for code in value.split(",") if code.strip()]


def canonical_codes(codes: Iterable[str]) -> tuple[list[str], list[str]]:
    """(codes with known ones in their taxonomy spelling, the unknown ones as written)."""
    out, unknown = [], []
    for code in codes:
        known = canonical_code(code)
        if known is None:
            unknown.append(code.strip())
            out.append(code.strip())
        else:
            out.append(known)
    return out, unknown
