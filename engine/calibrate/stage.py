"""Stage `calibrate`: KDE classifier and agreement per score setting and group.

A score setting is (metric, scorer, variant, context). Tasks per setting:
- `agreement`: real predictions (noise 'none') with an expert label; 3 classes in the order
  incorrect < partial < correct; reclassified by the KDE thresholds and compared with the
  expert labels (quadratic kappa, macro F1, confusion matrices).
- `noise-<kind>` for every noise kind in the scores: real predictions (class 'real') against
  that kind's noise predictions (2 classes); macro F1 says how well the metric tells real
  predictions from noise (kappa is filled too).
Each task kind is fitted under one or more groupings (`group_by`): `language` pools the
generators of a language, `language + generator` fits one classifier per target LLM. The study
fits the noise classifier per target LLM and agreement per language, which are the defaults;
the noise tasks are fitted pooled as well, so both views are in calibration.parquet (column
`group_by`; `generator` is null in a pooled row).
A task row exists for a group when the group has at least one row of that task's kind (a
labelled row; a noise row). Score rows with `error` set or a non-finite value never enter a
fit: they are counted (`n_left_out`) and named in the reason of a group that cannot be fitted.
All groups are fitted in one parallel kernel call. Confidence intervals are percentile
bootstraps over the group's (expert, predicted) pairs with the thresholds held fixed, seeded
per group from (seed, group key, task), so they do not depend on row order or on other groups.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.calibrate import agreement, reasons
from engine.calibrate.kde_classifier import PackedGroups, fit_packed
from engine.errors import ConfigError, StageError
from engine.params import Params, require
from engine.records import CALIBRATION_SCHEMA, LABELS, NOISE_KINDS, PERTURB_PREFIX
from engine.stages.base import CALIBRATION, SAMPLES, SCORES, DriverStage

logger = logging.getLogger(__name__)

SETTING_KEYS = ("metric", "scorer", "variant", "context")
GROUP_KEYS = (*SETTING_KEYS, "language")  # the pooled grouping's key (kept for readers)
GROUPING_KEYS = ("language", "generator")  # what `group_by` may name, in canonical order
TASK_KINDS = ("agreement", "noise")
AGREEMENT = "agreement"
REAL = "real"  # class name of real predictions in the noise tasks
DEFAULT_GROUP_BY: dict[str, tuple[tuple[str, ...], ...]] = {
    "agreement": (("language",),),
    "noise": (("language", "generator"), ("language",)),
}
SORT_KEYS = (*GROUP_KEYS, "task", "group_by", "generator")


def grouping_name(grouping: tuple[str, ...]) -> str:
    """The `group_by` column value of a grouping: its keys joined by '+'."""
    return "+".join(grouping)


def _normalise_group_by(value: Any) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Task kind -> groupings. A grouping may be written as one list of keys, or a list of lists."""
    out = dict(DEFAULT_GROUP_BY)
    for kind, groupings in (value or {}).items():
        where = f"group_by.{kind}"
        if kind not in TASK_KINDS:
            raise ConfigError(f"{where}: unknown task kind; allowed: {', '.join(TASK_KINDS)}")
        groupings = tuple(groupings)
        if groupings and all(isinstance(g, str) for g in groupings):
            groupings = (groupings,)
        if not groupings:
            raise ConfigError(f"{where}: empty; give at least one grouping, e.g. [language, generator]")
        canonical = []
        for g in groupings:
            keys = tuple(g) if isinstance(g, (list, tuple)) else (g,)
            unknown = [k for k in keys if k not in GROUPING_KEYS]
            if unknown or "language" not in keys or len(set(keys)) != len(keys):
                raise ConfigError(
                    f"{where}: got {list(keys)!r}; allowed: [language] or [language, generator] "
                    "(every group is fitted per language)"
                )
            c = tuple(k for k in GROUPING_KEYS if k in keys)
            if c not in canonical:
                canonical.append(c)
        out[kind] = tuple(canonical)
    return out


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
        group_by: per task kind (`agreement`, `noise`) the groupings to fit, each `[language]` or
            `[language, generator]`; e.g. `{noise: [[language, generator], [language]]}`. A kind left
            out keeps its default: agreement per language, noise per generator and pooled.
    """

    grid_points: int = 1024
    priors: Literal["equal", "empirical"] = "equal"
    bootstrap: int = 200
    seed: int = 0
    confidence: float = 0.95
    min_class_size: int = 2
    group_by: dict[str, tuple[Any, ...]] = field(default_factory=lambda: dict(DEFAULT_GROUP_BY))
    min_bandwidth: float = 1e-6

    def __post_init__(self) -> None:
        require(self.grid_points >= 2, "grid_points", self.grid_points, "an integer >= 2")
        require(self.bootstrap >= 0, "bootstrap", self.bootstrap, "an integer >= 0 (0: no intervals)")
        require(0.0 < self.confidence < 1.0, "confidence", self.confidence, "a number strictly between 0 and 1")
        require(0.0 <= self.min_bandwidth < math.inf, "min_bandwidth", self.min_bandwidth, "a number >= 0")
        require(self.min_class_size >= 2, "min_class_size", self.min_class_size,
                "an integer >= 2 (a KDE bandwidth needs a standard deviation)")
        object.__setattr__(self, "group_by", _normalise_group_by(self.group_by))

    def __hash__(self) -> int:  # group_by is a dict: hash the plain form instead
        return hash(repr(sorted(self.to_dict().items())))


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
    Everything fits in memory here; `engine.calibrate.run.calibrate_run_dir` streams a run
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
    rows = [r for r in calibration.to_pylist() if r["task"] == AGREEMENT and (r.get("group_by") or "language") == "language"]
    if not rows:
        return "calibration: no agreement rows pooled over generators (no expert labels, or group_by per generator?)"
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
    shown = set(keys)
    lines += reasons.console_lines(
        r for r in rows if (r["metric"], _short_scorer(r["scorer"]), r["variant"], r["context"] or "-") in shown)
    return "\n".join(lines)


# ----- the stage: once in the driver after every part, reading the scores one setting at a
# time (engine.calibrate.run), written to RUN/calibration.parquet ---------------------------------
class CalibrateStage(DriverStage):
    name = "calibrate"
    package = "engine.calibrate"
    section = "calibrate"
    params_class = "engine.calibrate.stage:CalibrateParams"
    provides = CALIBRATION
    consumes = (SCORES, SAMPLES)
    seeded = True
    path_options = ()
    output = "calibration.parquet"

    def parse_section(self, raw: Any, base_dir: Path, where: str) -> Any:
        return CalibrateParams.from_mapping(raw, where=where)

    def run_driver(self, run: Any, config: Any) -> None:
        from engine.calibrate.run_directory import calibrate_run_dir
        from engine.io.atomic import write_parquet_atomic
        from engine.records import CALIBRATION_SCHEMA

        table = calibrate_run_dir(run, config.section(self.name))
        write_parquet_atomic(run.path(self.output), table, CALIBRATION_SCHEMA)
        run.mark_stage(self.name, rows=table.num_rows)
