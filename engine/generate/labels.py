"""Expert labels joined to generated rows: a `labels:` table of (file_id, generator, label, error_codes).

Generation clears the labels of the input rows (they judged another prediction). A study that
labelled the generations afterwards gives them back as a table, Parquet or JSONL, with one row
per (file_id, generator): `label` (correct / partial / incorrect or null) and `error_codes`
(a list of taxonomy codes, or a comma-separated string, or null). The generate stage joins it
to its rows by (file_id, generator name), so calibration can compute agreement.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import InputError
from engine.records import LABELS
from engine.vocabulary import canonical_label

LABEL_COLUMNS = ("file_id", "generator", "label")


def _codes(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [c.strip() for c in value.split(",") if c.strip()]
    return [str(c) for c in value]


@functools.lru_cache(maxsize=4)
def read_labels(path: str) -> dict[tuple[str, str], tuple[str | None, list[str] | None]]:
    """(file_id, generator) -> (label, error_codes); InputError naming the problem and the file."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"labels: {path!r} does not exist; fix `labels:` in the config")
    if file.suffix == ".parquet":
        rows = pq.read_table(file).to_pylist()
    else:
        rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict[tuple[str, str], tuple[str | None, list[str] | None]] = {}
    for i, row in enumerate(rows):
        missing = [c for c in LABEL_COLUMNS if c not in row]
        if missing:
            raise InputError(f"labels: row {i} of {path} lacks column(s) {missing}; it needs {list(LABEL_COLUMNS)} (+ error_codes)")
        label = row["label"]
        if isinstance(label, str):
            label = canonical_label(label) or label  # the same spellings as input validation
        if label is not None and label not in LABELS:
            raise InputError(f"labels: row {i} of {path} has label {row['label']!r}; allowed: {list(LABELS)} or null")
        key = (str(row["file_id"]), str(row["generator"]))
        if key in out:
            raise InputError(f"labels: {path} has two rows for file {key[0]!r} and generator {key[1]!r}; keep one")
        out[key] = (label, _codes(row.get("error_codes")))
    return out


def join_labels(table: pa.Table, path: str, keep_unmatched: bool = False) -> pa.Table:
    """`table` with `label` and `error_codes` filled from the labels table by (file_id, generator).

    keep_unmatched: rows without a labels row keep their own label (else they get none).
    """
    labels = read_labels(path)
    keys = zip(table.column("file_id").to_pylist(), table.column("generator").to_pylist())
    found = [labels.get((str(f), str(g))) for f, g in keys]
    own_labels = table.column("label").to_pylist()
    own_codes = table.column("error_codes").to_pylist()
    if not keep_unmatched:
        own_labels, own_codes = [None] * len(found), [None] * len(found)
    label_col = pa.array([x[0] if x else own for x, own in zip(found, own_labels)], type=pa.string())
    codes_col = pa.array([x[1] if x else own for x, own in zip(found, own_codes)], type=pa.list_(pa.string()))
    table = table.set_column(table.schema.get_field_index("label"), table.schema.field("label"), label_col)
    return table.set_column(table.schema.get_field_index("error_codes"), table.schema.field("error_codes"), codes_col)


def with_labels(table: pa.Table, path: str | None) -> pa.Table:
    """Generated rows with the run's expert labels joined (`labels:`), as they are without one."""
    return join_labels(table, path) if path else table
