"""Stage `calibrate`: KDE classifier and agreement per (metric, scorer, variant, context, language).

Tasks per group:
- `agreement`: real predictions (noise 'none') with an expert label; 3 classes in the order
  incorrect < partial < correct; reclassified by the KDE thresholds and compared with the
  expert labels (quadratic kappa, macro F1, confusion matrices).
- `noise-<kind>` for every noise kind in the scores: real predictions (class 'real') against
  that kind's noise predictions of the same group (2 classes); macro F1 says how well the metric
  tells real predictions from noise (kappa is filled too).
A task row exists for a group when the group has at least one row of that task's kind (a
labelled row; a noise row). Score rows with `error` set or a non-finite value are left out
(logged, and named in the reason of a group that cannot be fitted). All groups of all tasks are
fitted in one parallel kernel call. Confidence intervals are percentile bootstraps over the
group's (expert, predicted) pairs with the thresholds held fixed, seeded per group from
(seed, group key, task), so they do not depend on row order or on the other groups.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.calibrate import agreement
from engine.calibrate.kde_classifier import PackedGroups, fit_packed
from engine.errors import StageError
from engine.params import Params, require
from engine.records import CALIBRATION_SCHEMA, LABELS, NOISE_KINDS, PERTURB_PREFIX

logger = logging.getLogger(__name__)

GROUP_KEYS = ("metric", "scorer", "variant", "context", "language")
AGREEMENT = "agreement"
REAL = "real"  # class name of real predictions in the noise tasks


@dataclass(frozen=True)
class CalibrateParams(Params):
    """Options of stage `calibrate`.

    Keys:
        grid_points: KDE grid points over each group's score range.
        priors: class weights of the KDE classifier: `equal` or the classes' `empirical` shares.
        bootstrap: bootstrap replicates for the confidence intervals of kappa and F1 (0: none).
        seed: bootstrap seed.
        confidence: level of the bootstrap confidence intervals.
        min_class_size: a class with fewer scores leaves its group "not fitted".
        min_bandwidth: floor of each class's KDE bandwidth (the study's 1e-6); 0: a constant class is not fitted.
    """

    grid_points: int = 1024
    priors: Literal["equal", "empirical"] = "equal"
    bootstrap: int = 200
    seed: int = 0
    confidence: float = 0.95
    min_class_size: int = 2
    min_bandwidth: float = 1e-6

    def __post_init__(self) -> None:
        require(self.grid_points >= 2, "grid_points", self.grid_points, "an integer >= 2")
        require(self.bootstrap >= 0, "bootstrap", self.bootstrap, "an integer >= 0 (0: no intervals)")
        require(0.0 < self.confidence < 1.0, "confidence", self.confidence, "a number strictly between 0 and 1")
        require(0.0 <= self.min_bandwidth < math.inf, "min_bandwidth", self.min_bandwidth, "a number >= 0")
        require(self.min_class_size >= 2, "min_class_size", self.min_class_size,
                "an integer >= 2 (a KDE bandwidth needs a standard deviation)")


def _column(table: pa.Table, name: str) -> pa.Array:
    return table.column(name).combine_chunks()


def _codes(array: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Integer codes (n,) and the dictionary of a string column."""
    encoded = pc.dictionary_encode(array)
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


def _task_names(noise_values: list[str]) -> list[str]:
    kinds = [k for k in NOISE_KINDS if k != "none" and k in noise_values]
    kinds += sorted(k for k in noise_values if k not in NOISE_KINDS)
    return [AGREEMENT] + [f"noise-{k}" for k in kinds]


def _nan_to_none(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def calibrate(scores: pa.Table, samples: pa.Table, params: CalibrateParams) -> pa.Table:
    """CALIBRATION_SCHEMA rows, one per (metric, scorer, variant, context, language, task).

    scores: SCORE_SCHEMA rows (real and noise); samples: SAMPLE_SCHEMA rows giving the expert
    `label` of each sample_id.
    """
    missing = [c for c in (*GROUP_KEYS, "sample_id", "noise", "value") if c not in scores.column_names]
    if missing:
        raise StageError("calibrate", f"the scores table lacks column(s) {missing}")
    for c in ("sample_id", "label"):
        if c not in samples.column_names:
            raise StageError("calibrate", f"the samples table lacks column {c!r}")
    # Perturbed texts (stage `perturb`) are neither real predictions nor noise: they have their
    # own analysis and must not enter the real-vs-noise tasks or agreement.
    perturbed = pc.fill_null(pc.starts_with(_column(scores, "noise"), PERTURB_PREFIX), False)
    if pc.any(perturbed).as_py():
        scores = scores.filter(pc.invert(perturbed))
    if scores.num_rows == 0:
        return CALIBRATION_SCHEMA.empty_table()

    values = _column(scores, "value").to_numpy(zero_copy_only=False).astype(np.float64)
    good = np.isfinite(values)
    if "error" in scores.column_names:
        good &= _column(scores, "error").is_null().to_numpy(zero_copy_only=False)
    if not good.all():
        logger.warning("calibrate: %d score row(s) with an error or a non-finite value left out",
                       int((~good).sum()))

    key_codes = []
    key_names = []
    for k in GROUP_KEYS:
        codes, names = _codes(_column(scores, k))
        key_codes.append(codes)
        key_names.append(names)
    uniq, group_of_row = np.unique(np.stack(key_codes, axis=1), axis=0, return_inverse=True)
    group_of_row = group_of_row.reshape(-1)
    group_keys = [tuple(key_names[i][code] for i, code in enumerate(row)) for row in uniq]

    noise_codes, noise_names = _codes(_column(scores, "noise"))
    tasks = _task_names(noise_names)
    none_code = noise_names.index("none") if "none" in noise_names else -1
    is_real = noise_codes == none_code

    # expert label index per score row (-1: none), looked up through the samples' sample_id
    where = pc.index_in(_column(scores, "sample_id"), value_set=_column(samples, "sample_id"))
    labels = pc.take(_column(samples, "label"), where)
    label_idx = np.full(scores.num_rows, -1, np.int64)
    for i, name in enumerate(LABELS):
        label_idx[pc.fill_null(pc.equal(labels, name), False).to_numpy(zero_copy_only=False)] = i

    # Task rows, bad ones included: a group whose rows all failed still gets a "not fitted" row.
    n_tasks = len(tasks)
    n_taskgroups = len(group_keys) * n_tasks
    row_parts, class_parts, taskgroup_parts = [], [], []
    present = np.zeros((len(group_keys), n_tasks), bool)
    labelled = is_real & (label_idx >= 0)
    present[group_of_row[labelled], 0] = True
    row_parts.append(np.nonzero(labelled)[0])
    class_parts.append(label_idx[labelled])
    taskgroup_parts.append(group_of_row[labelled] * n_tasks)
    for t, task in enumerate(tasks[1:], start=1):
        is_noise = noise_codes == noise_names.index(task[len("noise-"):])
        present[group_of_row[is_noise], t] = True
        rows = np.nonzero(is_real | is_noise)[0]
        row_parts.append(rows)
        class_parts.append(is_noise[rows].astype(np.int64))
        taskgroup_parts.append(group_of_row[rows] * n_tasks + t)
    rows = np.concatenate(row_parts)
    classes = np.concatenate(class_parts)
    taskgroup = np.concatenate(taskgroup_parts)
    present = present.reshape(-1)
    keep = present[taskgroup]  # a noise task exists only where the group has rows of that kind
    rows, classes, taskgroup = rows[keep], classes[keep], taskgroup[keep]
    left_out = np.bincount(taskgroup[~good[rows]], minlength=n_taskgroups)
    ok = good[rows]
    rows, classes, taskgroup = rows[ok], classes[ok], taskgroup[ok]
    # canonical order inside a group (sample_id, class), so the bootstrap ignores input order
    order = pc.sort_indices(
        pa.table({"tg": taskgroup, "sid": pc.take(_column(scores, "sample_id"), rows), "cls": classes}),
        sort_keys=[("tg", "ascending"), ("sid", "ascending"), ("cls", "ascending")],
    ).to_numpy()
    rows, classes, taskgroup = rows[order], classes[order], taskgroup[order]
    ids = np.nonzero(present)[0]
    offsets = np.append(np.searchsorted(taskgroup, ids, side="left"), len(taskgroup)).astype(np.int64)
    class_names = [LABELS if tasks[i % n_tasks] == AGREEMENT else (REAL, tasks[i % n_tasks][len("noise-"):])
                   for i in ids]
    packed = PackedGroups(values[rows], classes, offsets, class_names)
    fits = fit_packed(packed, params.grid_points, params.priors, params.min_class_size,
                      min_bandwidth=params.min_bandwidth)

    out = []
    for i, names, fit in zip(ids, class_names, fits):
        key = group_keys[i // n_tasks]
        task = tasks[i % n_tasks]
        reason = fit.reason
        if reason is not None and left_out[i]:
            if len(fit.true) == 0:
                reason = f"no usable scores: all {left_out[i]} row(s) have an error or a non-finite value"
            else:
                reason += f"; {left_out[i]} row(s) left out (error or non-finite value)"
        row = dict(zip(GROUP_KEYS, key), task=task, n=len(fit.true), fitted=fit.fitted, reason=reason,
                   classes=list(names))
        if fit.fitted:
            c = len(names)
            cm = agreement.confusion_matrix(fit.true, fit.predicted, c)
            ci = agreement.bootstrap_intervals(
                fit.true, fit.predicted, c, params.bootstrap, params.confidence,
                agreement.derived_seed(params.seed, *key, task),
            )
            row.update(
                thresholds=fit.thresholds.tolist(),
                region_labels=[names[k] for k in fit.region_labels],
                kappa=_nan_to_none(agreement.quadratic_kappa(cm)),
                kappa_lo=_nan_to_none(ci.kappa_lo),
                kappa_hi=_nan_to_none(ci.kappa_hi),
                f1=_nan_to_none(agreement.macro_f1(cm)),
                f1_lo=_nan_to_none(ci.f1_lo),
                f1_hi=_nan_to_none(ci.f1_hi),
                confusion=cm.tolist(),
                confusion_row_norm=agreement.normalise_rows(cm).tolist(),
                confusion_col_norm=agreement.normalise_columns(cm).tolist(),
            )
        out.append(row)
    table = pa.Table.from_pylist(out, schema=CALIBRATION_SCHEMA)
    return table.sort_by([(k, "ascending") for k in (*GROUP_KEYS, "task")])


def expert_accuracy_table(samples: pa.Table) -> pa.Table:
    """Share of correct / partial / incorrect expert labels per (language, generator).

    Rows without a known label are not counted; n is the number of labelled rows.
    """
    schema = pa.schema([("language", pa.string()), ("generator", pa.string()), ("n", pa.int64()),
                        ("share_correct", pa.float64()), ("share_partial", pa.float64()),
                        ("share_incorrect", pa.float64())])
    t = samples.select(["language", "generator", "label"])
    t = t.filter(pc.is_in(t.column("label"), value_set=pa.array(LABELS)))
    counts: dict[tuple, dict[str, int]] = {}
    for row in t.group_by(["language", "generator", "label"]).aggregate([([], "count_all")]).to_pylist():
        counts.setdefault((row["language"], row["generator"]), {})[row["label"]] = row["count_all"]
    out = []
    for (language, generator), by_label in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        n = sum(by_label.values())
        out.append(dict(language=language, generator=generator, n=n,
                        **{f"share_{k}": by_label.get(k, 0) / n for k in ("correct", "partial", "incorrect")}))
    return pa.Table.from_pylist(out, schema=schema)


def error_code_counts(samples: pa.Table) -> pa.Table:
    """How often each error code occurs per (language, generator); one row per code present."""
    schema = pa.schema([("language", pa.string()), ("generator", pa.string()), ("code", pa.string()),
                        ("count", pa.int64())])
    codes = _column(samples, "error_codes")
    flat = pc.list_flatten(codes)
    if len(flat) == 0:
        return schema.empty_table()
    parents = pc.list_parent_indices(codes)
    t = pa.table({
        "language": pc.take(_column(samples, "language"), parents),
        "generator": pc.take(_column(samples, "generator"), parents),
        "code": flat,
    })
    t = t.filter(pc.is_valid(t.column("code")))
    counted = t.group_by(["language", "generator", "code"]).aggregate([([], "count_all")])
    counted = counted.rename_columns(["language", "generator", "code", "count"]).cast(schema)
    return counted.sort_by([("language", "ascending"), ("generator", "ascending"), ("code", "ascending")])


_STUDY_LANGUAGES = ("en", "nl", "pl", "el", "zh")  # column order of the study's tables


def _short_scorer(scorer: str) -> str:
    return scorer.rstrip("/").rsplit("/", 1)[-1] if scorer else "-"


def kappa_summary(calibration: pa.Table, max_rows: int = 40) -> str:
    """Plain-text table of agreement kappa: (metric, scorer, variant, context) x language.

    With more than `max_rows` rows, metrics with several variants show only their F / avg
    variants (if they have any). Cells: kappa to 2 decimals, `n/f` not fitted, `-` absent.
    """
    rows = [r for r in calibration.to_pylist() if r["task"] == AGREEMENT]
    if not rows:
        return "calibration: no agreement rows (no expert labels?)"
    langs = sorted({r["language"] for r in rows},
                   key=lambda x: (_STUDY_LANGUAGES.index(x) if x in _STUDY_LANGUAGES else len(_STUDY_LANGUAGES), x))
    cells: dict[tuple, dict[str, str]] = {}
    for r in rows:
        key = (r["metric"], _short_scorer(r["scorer"]), r["variant"], r["context"] or "-")
        cells.setdefault(key, {})[r["language"]] = f"{r['kappa']:.2f}" if r["fitted"] and r["kappa"] is not None else "n/f"
    keys = sorted(cells)
    note = ""
    if len(keys) > max_rows:
        def headline(variant: str) -> bool:
            return variant in ("F", "avg") or variant.endswith(("/F", "/avg"))
        has_headline = {(k[0], k[1]) for k in keys if headline(k[2])}
        shown = [k for k in keys if (k[0], k[1]) not in has_headline or headline(k[2])]
        note = f"(showing {len(shown)} of {len(keys)} rows: F / avg variants; all rows in calibration.parquet)"
        keys = shown
    header = ["metric", "scorer", "variant", "context", *langs]
    table = [header] + [[*k, *(cells[k].get(lang, "-") for lang in langs)] for k in keys]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["agreement with expert labels (quadratic kappa; n/f = not fitted)"]
    for j, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if i < 4 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    if note:
        lines.append(note)
    return "\n".join(lines)
