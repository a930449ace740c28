"""Synthetic sample and score tables for the calibration tests."""
from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa

from engine.records import LABELS, SAMPLE_SCHEMA, SCORE_SCHEMA


def samples_table(labels, languages, generators=None, error_codes=None) -> pa.Table:
    """A sample table of one row per label, in the input schema (ids s0, s1, ...)."""
    n = len(labels)
    generators = generators or ["g"] * n
    return pa.Table.from_pydict(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "file_id": [f"f{i}" for i in range(n)],
            "language": list(languages),
            "source": ["x"] * n,
            "comment_start": [0] * n,
            "comment_end": [1] * n,
            "reference": ["x"] * n,
            "generator": list(generators),
            "prime": [""] * n,
            "prediction": ["y"] * n,
            "label": list(labels),
            "error_codes": error_codes or [None] * n,
        },
        schema=SAMPLE_SCHEMA,
    )


def per_generator_study(n=900, seed=3):
    """Three generators whose noise separates differently; two languages."""
    rng = np.random.default_rng(seed)
    gens = ["gA", "gB", "gC"]
    spread = {"gA": 0.05, "gB": 0.3, "gC": 0.6}  # how close each generator's real scores come to noise
    labels = [LABELS[k] for k in rng.integers(0, 3, n)]
    langs = [("en", "nl")[i % 2] for i in range(n)]
    generators = [gens[(i // 2) % 3] for i in range(n)]
    cols = collections.defaultdict(list)
    for i in range(n):
        real = 0.5 + LABELS.index(labels[i]) * 0.1 + rng.normal(0, spread[generators[i]])
        for noise, value in (("none", real), ("uniform", rng.normal(0.2, 0.15)), ("targeted", rng.normal(0.4, 0.1))):
            for k, v in dict(sample_id=f"s{i}", generator=generators[i], language=langs[i], noise=noise, metric="m",
                             scorer="", context="", variant="F", value=value, signature="sig", error=None).items():
                cols[k].append(v)
    scores = pa.Table.from_pydict(dict(cols), schema=SCORE_SCHEMA)
    return samples_table(labels, langs, generators), scores
