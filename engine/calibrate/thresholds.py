"""Calibration of scores: KDE classifier and agreement per score setting and group.

A score setting is (metric, scorer, variant, context). Its tasks are `agreement` (real
predictions against the expert labels, 3 classes, quadratic kappa) and `noise-<kind>` per noise
kind (real against that kind's noise, 2 classes, macro F1), each fitted under the groupings of
`group_by`. All groups are fitted in one parallel kernel call; score rows with `error` set or a
non-finite value never enter a fit. Tasks, groups and the bootstrap's seeding:
docs/calibration.md, "Tasks, groups and intervals".
"""
from __future__ import annotations

import logging
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.calibrate import agreement
from engine.calibrate.kde_classifier import PackedGroups, fit_packed
from engine.calibrate.params import CalibrateParams
from engine.errors import StageError
from engine.records import CALIBRATION_SCHEMA, LABELS, NOISE_KINDS, PERTURB_PREFIX

logger = logging.getLogger(__name__)

SETTING_KEYS = ("metric", "scorer", "variant", "context")
GROUP_KEYS = (*SETTING_KEYS, "language")  # the pooled grouping's key (kept for readers)
AGREEMENT = "agreement"
REAL = "real"  # class name of real predictions in the noise tasks
SORT_KEYS = (*GROUP_KEYS, "task", "group_by", "generator")


def grouping_name(grouping: tuple[str, ...]) -> str:
    """The `group_by` column value of a grouping: its keys joined by '+'."""
    return "+".join(grouping)


def _column(table: pa.Table, name: str) -> pa.Array:
    return table.column(name).combine_chunks()


def _codes(array: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Integer codes (n,) and the dictionary of a string column; null is its own code (None)."""
    encoded = pc.dictionary_encode(array, null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


def _task_names(noise_values: list[str]) -> list[str]:
    kinds = [k for k in NOISE_KINDS if k != "none" and k in noise_values]
    kinds += sorted(k for k in noise_values if k is not None and k not in NOISE_KINDS)
    return [AGREEMENT] + [f"noise-{k}" for k in kinds]


def _nan_to_none(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def label_codes(sample_ids: pa.Array, labels: pa.Table) -> np.ndarray:
    """Expert label index (into LABELS) of each sample id, -1 where unknown; (n,) int64.

    labels: a table with columns sample_id and label (other rows and nulls are ignored).
    """
    if labels.num_rows == 0:
        return np.full(len(sample_ids), -1, np.int64)
    where = pc.index_in(sample_ids, value_set=_column(labels, "sample_id"))
    found = pc.take(_column(labels, "label"), where)
    out = np.full(len(sample_ids), -1, np.int64)
    for i, name in enumerate(LABELS):
        out[pc.fill_null(pc.equal(found, name), False).to_numpy(zero_copy_only=False)] = i
    return out


def calibrate(scores: pa.Table, samples: pa.Table, params: CalibrateParams) -> pa.Table:
    """CALIBRATION_SCHEMA rows, one per (setting, group, task, grouping).

    scores: SCORE_SCHEMA rows (real and noise); samples: a table with `sample_id` and `label`
    giving the expert label of each sample (only those two columns are read).
    Everything fits in memory here; `engine.calibrate.run_directory.calibrate_run_dir` streams a run
    directory through this function one setting at a time.
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
    n_rows = scores.num_rows

    values = _column(scores, "value").to_numpy(zero_copy_only=False).astype(np.float64)
    good = np.isfinite(values)
    if "error" in scores.column_names:
        good &= _column(scores, "error").is_null().to_numpy(zero_copy_only=False)
    if not good.all():
        logger.info("calibrate: %d score row(s) with an error or a non-finite value left out", int((~good).sum()))

    key_cols = [*GROUP_KEYS, "generator"]
    key_codes, key_names = {}, {}
    for k in key_cols:
        column = _column(scores, k) if k in scores.column_names else pa.nulls(n_rows, pa.string())
        key_codes[k], key_names[k] = _codes(column)

    noise_codes, noise_names = _codes(_column(scores, "noise"))
    tasks = _task_names(noise_names)
    is_real = noise_codes == (noise_names.index("none") if "none" in noise_names else -1)
    label_idx = label_codes(_column(scores, "sample_id"), samples)
    labelled = is_real & (label_idx >= 0)

    # One "combo" per (task, grouping); rows of every combo stacked, then grouped with one unique.
    combos: list[tuple[str, tuple[str, ...]]] = []
    row_parts, class_parts, defining_parts, key_parts = [], [], [], []
    for task in tasks:
        if task == AGREEMENT:
            rows = np.nonzero(labelled)[0]
            classes = label_idx[rows]
            defining = np.ones(len(rows), bool)
        else:
            is_noise = noise_codes == noise_names.index(task[len("noise-"):])
            rows = np.nonzero(is_real | is_noise)[0]
            classes = is_noise[rows].astype(np.int64)
            defining = is_noise[rows]  # a noise task exists only where the group has rows of that kind
        for grouping in params.group_by[AGREEMENT if task == AGREEMENT else "noise"]:
            combo = len(combos)
            combos.append((task, grouping))
            cols = [np.full(len(rows), combo, np.int64)]
            cols += [key_codes[k][rows] for k in GROUP_KEYS]
            cols.append(key_codes["generator"][rows] if "generator" in grouping else np.full(len(rows), -1, np.int64))
            row_parts.append(rows)
            class_parts.append(classes)
            defining_parts.append(defining)
            key_parts.append(np.stack(cols, axis=1))
    rows = np.concatenate(row_parts)
    classes = np.concatenate(class_parts)
    defining = np.concatenate(defining_parts)
    keys = np.concatenate(key_parts) if key_parts else np.zeros((0, len(key_cols) + 1), np.int64)
    if len(rows) == 0:
        return CALIBRATION_SCHEMA.empty_table()
    uniq, taskgroup = np.unique(keys, axis=0, return_inverse=True)
    taskgroup = taskgroup.reshape(-1)
    present = np.zeros(len(uniq), bool)
    present[taskgroup[defining]] = True
    keep = present[taskgroup]
    rows, classes, taskgroup = rows[keep], classes[keep], taskgroup[keep]
    left_out = np.bincount(taskgroup[~good[rows]], minlength=len(uniq))
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
    class_names = [LABELS if combos[uniq[i, 0]][0] == AGREEMENT else (REAL, combos[uniq[i, 0]][0][len("noise-"):])
                   for i in ids]
    packed = PackedGroups(values[rows], classes, offsets, class_names)
    fits = fit_packed(packed, params.grid_points, params.priors, params.min_class_size,
                      min_bandwidth=params.min_bandwidth)

    out = []
    for i, names, fit in zip(ids, class_names, fits):
        task, grouping = combos[uniq[i, 0]]
        key = tuple(key_names[k][uniq[i, 1 + j]] for j, k in enumerate(GROUP_KEYS))
        generator = key_names["generator"][uniq[i, -1]] if "generator" in grouping else None
        reason = fit.reason
        if reason is not None and left_out[i]:
            if len(fit.true) == 0:
                reason = f"no usable scores: all {left_out[i]} row(s) have an error or a non-finite value"
            else:
                reason += f"; {left_out[i]} row(s) left out (error or non-finite value)"
        row = dict(zip(GROUP_KEYS, key), generator=generator, group_by=grouping_name(grouping), task=task,
                   n=len(fit.true), n_left_out=int(left_out[i]), fitted=fit.fitted, reason=reason,
                   classes=list(names))
        if fit.fitted:
            c = len(names)
            cm = agreement.confusion_matrix(fit.true, fit.predicted, c)
            # pooled groups keep the seed parts they always had; per-generator groups add theirs
            seed_parts = (*key, task) if generator is None else (*key, task, "generator", generator or "")
            ci = agreement.bootstrap_intervals(
                fit.true, fit.predicted, c, params.bootstrap, params.confidence,
                agreement.derived_seed(params.seed, *seed_parts),
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
    return sort_calibration(pa.Table.from_pylist(out, schema=CALIBRATION_SCHEMA))


def sort_calibration(table: pa.Table) -> pa.Table:
    """The canonical row order of calibration.parquet."""
    return table.sort_by([(k, "ascending") for k in SORT_KEYS])

