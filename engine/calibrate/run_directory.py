"""Calibration of a whole run directory in bounded memory: one score setting at a time.

The driver never holds all scores: the distinct settings (metric, scorer, variant, context) are
collected part by part from four columns, then each setting's rows are read with a pushed-down
filter (`pyarrow.dataset`), fitted by `calibrate`, and only its few calibration rows are kept.
The expert labels are joined from the sample parts, read two columns at a time (sample_id,
label) and only the labelled rows kept; that table is the one structure that grows with the
input, at a few bytes per labelled sample. Peak memory is one setting's score rows (real and
noise predictions of every sample) plus that label table.
"""
from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from engine.calibrate.params import CalibrateParams
from engine.calibrate.thresholds import SETTING_KEYS, calibrate, sort_calibration
from engine.io.rundir import RunDirectory
from engine.records import CALIBRATION_SCHEMA, LABELS

logger = logging.getLogger(__name__)

# what a setting's fit reads from the score parts
SCORE_COLUMNS = ("sample_id", "generator", "language", "noise", *SETTING_KEYS, "value", "error")


def expert_labels(run: RunDirectory) -> pa.Table:
    """(sample_id, label) of every sample with a known expert label, streamed from the parts."""
    kept = []
    for part in run.sample_tables(columns=["sample_id", "label"]):
        kept.append(part.filter(pc.is_in(part["label"], value_set=pa.array(LABELS))))
    if not kept:
        return pa.table({"sample_id": pa.array([], pa.string()), "label": pa.array([], pa.string())})
    return pa.concat_tables(kept).combine_chunks()


def score_settings(run: RunDirectory) -> list[tuple[str, str, str, str]]:
    """The distinct (metric, scorer, variant, context) of the committed score parts, sorted."""
    found: set[tuple[str, str, str, str]] = set()
    for part in run.score_tables(columns=SETTING_KEYS):
        distinct = part.group_by(list(SETTING_KEYS)).aggregate([])
        found.update(zip(*(distinct[k].to_pylist() for k in SETTING_KEYS)))
    return sorted(found)


def setting_filter(setting: tuple[str, ...]) -> ds.Expression:
    expression = None
    for key, value in zip(SETTING_KEYS, setting):
        term = pc.field(key) == value
        expression = term if expression is None else expression & term
    return expression


def bad_rows(scores: pa.Table) -> int:
    """Rows that never enter a fit: `error` set, or a value that is null, NaN or infinite."""
    value = scores["value"]
    finite = pc.fill_null(pc.is_finite(value), False)
    return int(pc.sum(pc.or_(pc.invert(finite), pc.is_valid(scores["error"]))).as_py() or 0)


def calibrate_run_dir(run: RunDirectory, params: CalibrateParams) -> pa.Table:
    """CALIBRATION_SCHEMA rows of the run's committed scores, read and fitted per setting.

    Equal to `calibrate(all scores, all samples, params)` row for row (each group's fit depends
    only on its own rows, and the rows are put in canonical order before fitting).
    """
    settings = score_settings(run)
    if not settings:
        return CALIBRATION_SCHEMA.empty_table()
    labels = expert_labels(run)
    dataset = run.score_dataset()
    tables, left_out = [], 0
    for setting in settings:
        scores = dataset.to_table(filter=setting_filter(setting), columns=list(SCORE_COLUMNS))
        left_out += bad_rows(scores)
        tables.append(calibrate(scores, labels, params))
        del scores
    if left_out:
        logger.warning("calibrate: %d score row(s) have an error or a non-finite value and were left out of the "
                       "fits; n_left_out in calibration.parquet counts them per group", left_out)
    return sort_calibration(pa.concat_tables(tables))
