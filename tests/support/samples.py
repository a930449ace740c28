"""Input rows for tests: one valid sample row, JSONL files of rows, and subsets of the embedded
demo data."""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any


def make_sample(sample_id: str, prediction: str | None = "returns the user name.", **changes: Any) -> dict[str, Any]:
    """A valid input row; `changes` override fields."""
    source = "class User {\n    // Returns the name of the user.\n    String name() { return name; }\n}\n"
    reference = "// Returns the name of the user."
    start = source.index(reference)
    row = {
        "sample_id": sample_id,
        "file_id": sample_id.split("/")[0],
        "language": "en",
        "source": source,
        "comment_start": start,
        "comment_end": start + len(reference),
        "reference": reference,
        "generator": "gen-a",
        "prime": "// Returns the",
        "prediction": prediction,
        "label": "correct",
        "error_codes": None,
    }
    row.update(changes)
    return row


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def write_demo_subset(path: Path, files_per_language: int, shuffle_seed: int | None = None) -> Path:
    """The first `files_per_language` files of each language of the embedded demo data, as JSONL
    (rows shuffled with `shuffle_seed` when given)."""
    from engine.config import BUILTIN_INPUTS

    rows = [json.loads(line) for line in BUILTIN_INPUTS["demo"].read_text(encoding="utf-8").splitlines()]
    keep: dict[str, list[str]] = {}
    for row in rows:
        files = keep.setdefault(row["language"], [])
        if row["file_id"] not in files and len(files) < files_per_language:
            files.append(row["file_id"])
    subset = [r for r in rows if r["file_id"] in keep[r["language"]]]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(subset)
    return write_jsonl(path, subset)
