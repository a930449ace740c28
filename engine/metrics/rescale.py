"""Baseline rescaling of BERTScore values: (x - b) / (1 - b), b read from a `LAYER,P,R,F` table.

The table is bert_score's format: a header line `LAYER,P,R,F` (comma- or tab-separated),
then one row per layer. P, R and F each use their own baseline; F is computed from the raw
P and R first and then rescaled with the F baseline, as bert_score does.
"""
from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigError


@dataclass(frozen=True)
class Baseline:
    p: float
    r: float
    f: float

    def rescale(self, variant: str, value: float) -> float:
        b = {"P": self.p, "R": self.r, "F": self.f}[variant]
        return (value - b) / (1 - b)


@dataclass(frozen=True)
class BaselineTable:
    path: str
    sha256: str
    rows: dict[int, Baseline]

    def for_layer(self, layer: int) -> Baseline:
        if layer not in self.rows:
            raise ConfigError(
                f"baseline: {self.path} has no row for layer {layer}; layers present: {sorted(self.rows)}"
            )
        return self.rows[layer]

    @property
    def tag(self) -> str:
        """Short name for signatures: file name and content hash."""
        return f"{Path(self.path).name}@{self.sha256[:12]}"


def read_baseline(path: str) -> BaselineTable:
    """Parse a bert_score baseline file; ConfigError naming the file and line on any problem."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"baseline: got {path!r}; allowed: an existing LAYER,P,R,F table file")
    raw = file.read_bytes()
    text = raw.decode("utf-8")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ConfigError(f"baseline: {path} is empty; expected a LAYER,P,R,F header and rows")
    delimiter = "\t" if "\t" in lines[0] else ","
    reader = csv.reader(lines, delimiter=delimiter)
    header = [h.strip().upper() for h in next(reader)]
    if header[:4] != ["LAYER", "P", "R", "F"]:
        raise ConfigError(f"baseline: {path} header is {header}; expected LAYER,P,R,F")
    rows: dict[int, Baseline] = {}
    for lineno, row in enumerate(reader, start=2):
        try:
            rows[int(row[0])] = Baseline(float(row[1]), float(row[2]), float(row[3]))
        except (ValueError, IndexError) as exc:
            raise ConfigError(f"baseline: {path} line {lineno} {row!r} is not LAYER,P,R,F numbers") from exc
    return BaselineTable(str(file), hashlib.sha256(raw).hexdigest(), rows)
