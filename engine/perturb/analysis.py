"""Sensitivity of each metric setting to each perturbation family: RUN/sensitivity.parquet.

For a metric setting (metric, scorer, variant, context), a language, a target and a family:

    dS = mean over samples of S(original) - S(perturbed)

with a seeded percentile bootstrap interval and the share of pairs whose score dropped. Scores
are taken as "higher is better", so a positive dS means the metric noticed the error.
docs/perturbation.md ("RUN/sensitivity.parquet") defines both sides of each target, the columns
and the interval. Memory: the driver reads one score task at a time (its perturbation and real
rows only, through a Parquet filter), never all scores at once; one row per group is kept.
"""
from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from engine.io.atomic import write_parquet_atomic
from engine.perturb.families import FAMILIES
from engine.records import PERTURB_ORIGINAL, PERTURB_PREFIX, PERTURB_SCHEMA, SCORE_SCHEMA, SENSITIVITY_SCHEMA

if TYPE_CHECKING:
    from engine.io.rundir import RunDirectory
    from engine.perturb.params import PerturbParams

logger = logging.getLogger(__name__)

SETTING = ("metric", "scorer", "variant", "context")
GROUP = (*SETTING, "language", "target", "family")
SCORE_COLUMNS = ["sample_id", "language", "noise", "metric", "scorer", "context", "variant", "value", "error"]
SENSITIVITY_FILE = "sensitivity.parquet"


def group_seed(seed: int, *key: Any) -> int:
    text = "\x1f".join(str(k) for k in (seed, *key))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def bootstrap_mean_interval(d: np.ndarray, replicates: int, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile interval of the mean of `d` (n,) over `replicates` resamples; NaN when n = 0 or no replicates."""
    if d.size == 0 or replicates == 0:
        return float("nan"), float("nan")
    rng = np.random.Generator(np.random.PCG64(seed))
    means = np.empty(replicates)
    chunk = max(1, 2_000_000 // d.size)  # bounds the (chunk, n) index matrix
    for start in range(0, replicates, chunk):
        stop = min(replicates, start + chunk)
        idx = rng.integers(0, d.size, size=(stop - start, d.size))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def perturbation_filter(with_real: bool) -> ds.Expression:
    """Score rows the sensitivity reads: perturbations, and real predictions when predictions
    were perturbed (they are the originals of target `prediction`)."""
    perturbed = pc.starts_with(ds.field("noise"), PERTURB_PREFIX)
    return perturbed | (ds.field("noise") == "none") if with_real else perturbed


def _pairs(task_rows: pa.Table) -> pa.Table:
    """(setting, language, target, family, sample_id, original, perturbed) for one score task's rows."""
    values = pc.if_else(pc.is_null(task_rows["error"]), task_rows["value"], pa.scalar(float("nan")))
    noise = task_rows["noise"].to_pylist()
    target, family = [], []
    for value in noise:
        if value == "none":
            target.append("prediction")
            family.append(PERTURB_ORIGINAL)
        else:
            _, t, f = value.split(":", 2)
            target.append(t)
            family.append(f)
    table = task_rows.select(["sample_id", "language", *SETTING]).append_column("value", values)
    table = table.append_column("target", pa.array(target, pa.string())).append_column("family", pa.array(family, pa.string()))
    is_original = pc.equal(table["family"], PERTURB_ORIGINAL)
    originals = table.filter(is_original).rename_columns(
        ["sample_id", "language", *SETTING, "original", "target", "family"]).drop_columns(["family"])
    perturbed = table.filter(pc.invert(is_original)).rename_columns(
        ["sample_id", "language", *SETTING, "perturbed", "target", "family"])
    if perturbed.num_rows == 0:
        return perturbed.append_column("original", pa.array([], pa.float64()))
    return perturbed.join(originals, keys=["sample_id", "language", *SETTING, "target"], join_type="left outer")


def sensitivity_rows(task_rows: pa.Table, seed: int, replicates: int, confidence: float,
                     skipped: dict[tuple[str, str, str], int]) -> list[dict[str, Any]]:
    """One SENSITIVITY_SCHEMA row per group found in one score task's rows (SCORE_COLUMNS)."""
    pairs = _pairs(task_rows)
    out = _all_skipped_rows(task_rows, pairs, skipped)
    if pairs.num_rows == 0:
        return out
    pairs = pairs.sort_by([(c, "ascending") for c in (*GROUP, "sample_id")])
    cols = {c: pairs[c].to_pylist() for c in GROUP}
    orig = pairs["original"].to_numpy(zero_copy_only=False).astype(np.float64)
    pert = pairs["perturbed"].to_numpy(zero_copy_only=False).astype(np.float64)
    keys = list(zip(*(cols[c] for c in GROUP)))
    start = 0
    for end in range(1, len(keys) + 1):
        if end < len(keys) and keys[end] == keys[start]:
            continue
        key = keys[start]
        o, p = orig[start:end], pert[start:end]
        ok = np.isfinite(o) & np.isfinite(p)
        d = o[ok] - p[ok]
        lo, hi = bootstrap_mean_interval(d, replicates, confidence, group_seed(seed, *key))
        row = dict(zip(GROUP, key))
        row.update(
            codes=list(FAMILIES.get(row["family"], ())),
            n=int(d.size),
            n_skipped=int(skipped.get((row["language"], row["target"], row["family"]), 0)),
            ds=float(d.mean()) if d.size else None,
            ds_lo=lo if d.size and replicates else None,
            ds_hi=hi if d.size and replicates else None,
            share_dropped=float((d > 0).mean()) if d.size else None,
            mean_original=float(o[ok].mean()) if d.size else None,
            mean_perturbed=float(p[ok].mean()) if d.size else None,
        )
        out.append(row)
        start = end
    return out


def _all_skipped_rows(task_rows: pa.Table, pairs: pa.Table, skipped: dict[tuple[str, str, str], int]) -> list[dict[str, Any]]:
    """n = 0 rows for the families that could not apply to any item of a language, so the
    sensitivity table says "skipped" rather than leaving the family out."""
    present = set(zip(*(pairs[c].to_pylist() for c in ("language", "target", "family")))) if pairs.num_rows else set()
    settings = set(zip(*(task_rows[c].to_pylist() for c in ("language", *SETTING))))
    out = []
    for (language, target, family), count in sorted(skipped.items()):
        if (language, target, family) in present:
            continue
        for setting_language, *setting in sorted(settings):
            if setting_language == language:
                out.append(dict(zip(SETTING, setting), language=language, target=target, family=family,
                                codes=list(FAMILIES.get(family, ())), n=0, n_skipped=count))
    return out


def skip_counts(perturb_tables: Iterable[pa.Table]) -> dict[tuple[str, str, str], int]:
    """(language, target, family) -> number of perturbations that could not apply."""
    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for table in perturb_tables:
        skipped = table.filter(pc.invert(table["applied"]))
        for row in skipped.select(["language", "target", "family"]).to_pylist():
            counts[(row["language"], row["target"], row["family"])] += 1
    return dict(counts)


def sensitivity_table(task_tables: Iterable[pa.Table], perturb_tables: Iterable[pa.Table], seed: int,
                      replicates: int, confidence: float) -> pa.Table:
    """SENSITIVITY_SCHEMA table from score rows given one task at a time (any order)."""
    skipped = skip_counts(perturb_tables)
    rows: list[dict[str, Any]] = []
    for table in task_tables:
        rows.extend(sensitivity_rows(table, seed, replicates, confidence, skipped))
    table = pa.Table.from_pylist(rows, schema=SENSITIVITY_SCHEMA)
    return table.sort_by([(c, "ascending") for c in GROUP])


# ----- run directory ----------------------------------------------------------------------------------
def score_task_files(run: "RunDirectory") -> dict[str, list[Path]]:
    """Committed score part files grouped by task (part keys `<scores stage>/<task>/<index>`)."""
    from engine.kinds import SCORES

    prefixes = run.layout.prefixes(SCORES)
    files: dict[str, list[Path]] = defaultdict(list)
    for key, info in run.manifest.committed():
        if prefixes and key.startswith(prefixes):
            files[key.split("/")[1]].append(run.root / info["file"])
    return dict(files)


def read_task(paths: list[Path], filter_expression: ds.Expression) -> pa.Table:
    tables = [pq.read_table(p, columns=SCORE_COLUMNS, schema=SCORE_SCHEMA, filters=filter_expression) for p in paths]
    return pa.concat_tables(tables) if tables else SCORE_SCHEMA.empty_table().select(SCORE_COLUMNS)


def _perturb_tables(run: "RunDirectory") -> Iterator[pa.Table]:
    for path in run.part_files("perturb/"):
        yield pq.read_table(path, columns=["language", "target", "family", "applied"], schema=PERTURB_SCHEMA)


def write_sensitivity(run: "RunDirectory", params: "PerturbParams") -> Path:
    """Write RUN/sensitivity.parquet after the score stage.

    run: the RunDirectory (with its layout); params: the `perturb` section (PerturbParams).
    """
    files = score_task_files(run)
    where = perturbation_filter(params.perturb_predictions)
    tasks = (read_task(paths, where) for _, paths in sorted(files.items()))
    table = sensitivity_table(tasks, _perturb_tables(run), params.seed, params.bootstrap, params.confidence)
    path = run.path(SENSITIVITY_FILE)
    write_parquet_atomic(path, table, SENSITIVITY_SCHEMA)
    logger.info("sensitivity: %d group(s) written to %s", table.num_rows, path)
    return path
