"""Judge analysis (driver side, after every part): agreement with the experts, per-code
detection, parse failures, written to RUN/judge_analysis/*.parquet.

docs/judges.md ("The analysis tables") describes each table: agreement, pooled_confusion,
code_detection, code_summary, parse_rates and reference_comparison. A setup is (judge, task,
strategy, prompt language, reference). Failures are never labels: rows whose parse failed only
enter parse_rates.
"""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.calibrate.agreement import confusion_matrix, normalise_columns, normalise_rows, quadratic_kappa
from engine.io.atomic import write_parquet_atomic
from engine.judge.parse import PARSE_CLASSES
from engine.judge.promptpack import CLUSTERED
from engine.records import LABELS
from engine.taxonomy import CODES, accumulate

OUTPUT_DIR = "judge_analysis"
SETUP = ("judge", "task", "strategy", "prompt_language", "reference")
ROUTES = ("whole", "fenced", "balanced", "tolerant")
_MATRIX = pa.list_(pa.list_(pa.float64()))


def _experts(samples: pa.Table) -> dict[str, tuple[str | None, list[str] | None]]:
    columns = samples.select(["sample_id", "label", "error_codes"]).to_pydict()
    return {s: (label, codes) for s, label, codes in zip(columns["sample_id"], columns["label"], columns["error_codes"])}


def _rows(judgments: pa.Table) -> list[dict[str, Any]]:
    keep = ["sample_id", "file_id", "generator", "language", *SETUP, "label", "error_codes", "hallucinated_codes", "parse_status",
            "parse_method", "response_status"]
    return judgments.select(keep).to_pylist()


def _matrix_fields(confusion: np.ndarray) -> dict[str, Any]:
    return {
        "kappa": quadratic_kappa(confusion) if confusion.sum() else math.nan,
        "confusion": confusion.tolist(),
        "confusion_row_norm": normalise_rows(confusion).tolist(),
        "confusion_col_norm": normalise_columns(confusion).tolist(),
    }


def _confusion(pairs: list[tuple[str, str]]) -> np.ndarray:
    if not pairs:
        return np.zeros((len(LABELS), len(LABELS)), dtype=np.int64)
    true = np.array([LABELS.index(e) for e, _ in pairs])
    pred = np.array([LABELS.index(j) for _, j in pairs])
    return confusion_matrix(true, pred, len(LABELS))


def agreement(judgments: pa.Table, samples: pa.Table) -> pa.Table:
    experts = _experts(samples)
    groups: dict[tuple, list[tuple[str, str]]] = defaultdict(list)
    judged: dict[tuple, int] = defaultdict(int)
    for row in _rows(judgments):
        key = (row["language"], *(row[k] for k in SETUP))
        judged[key] += 1
        expert = experts.get(row["sample_id"], (None, None))[0]
        if row["parse_status"] == "ok" and row["label"] in LABELS and expert in LABELS:
            groups[key].append((expert, row["label"]))
    out = []
    for key in sorted(judged):
        pairs = groups.get(key, [])
        out.append({**dict(zip(("language", *SETUP), key)), "n_rows": judged[key], "n": len(pairs),
                    "classes": list(LABELS), **_matrix_fields(_confusion(pairs))})
    return pa.Table.from_pylist(out, schema=AGREEMENT_SCHEMA)


def pooled_confusion(judgments: pa.Table, samples: pa.Table) -> pa.Table:
    experts = _experts(samples)
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in _rows(judgments):
        expert = experts.get(row["sample_id"], (None, None))[0]
        if row["strategy"] in CLUSTERED or row["parse_status"] != "ok" or expert not in LABELS or row["label"] not in LABELS:
            continue
        groups[row["judge"]].append((expert, row["label"]))
        groups["*"].append((expert, row["label"]))
    out = [{"judge": judge, "n": len(groups[judge]), "classes": list(LABELS), **_matrix_fields(_confusion(groups[judge]))}
           for judge in sorted(groups)]
    return pa.Table.from_pylist(out, schema=POOLED_SCHEMA)


def code_detection(judgments: pa.Table, samples: pa.Table) -> pa.Table:
    experts = _experts(samples)
    counts: dict[tuple, dict[str, list[int]]] = {}
    for row in _rows(judgments):
        expert_codes = experts.get(row["sample_id"], (None, None))[1]
        if row["parse_status"] != "ok" or expert_codes is None:
            continue
        setup = tuple(row[k] for k in SETUP)
        per_code = counts.setdefault(setup, {code: [0, 0, 0, 0] for code in CODES})  # tp, fp, fn, pairs
        truth, predicted = accumulate(expert_codes), accumulate(row["error_codes"])
        for code, c in per_code.items():
            c[3] += 1
            if code in predicted and code in truth:
                c[0] += 1
            elif code in predicted:
                c[1] += 1
            elif code in truth:
                c[2] += 1
    out = []
    for setup in sorted(counts):
        for code, (tp, fp, fn, pairs) in counts[setup].items():
            precision = tp / (tp + fp) if tp + fp else 0.0
            recall = tp / (tp + fn) if tp + fn else math.nan
            out.append({**dict(zip(SETUP, setup)), "code": code, "parent": CODES[code][0], "pairs": pairs, "tp": tp, "fp": fp,
                        "fn": fn, "precision": precision, "recall": recall})
    return pa.Table.from_pylist(out, schema=CODE_SCHEMA)


def _f1(precision: float, recall: float) -> float:
    if math.isnan(recall) or precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def code_summary(detection: pa.Table) -> pa.Table:
    by_code: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in detection.to_pylist():
        if row["tp"] + row["fn"] > 0:  # only setups where the experts gave the code
            by_code[row["code"]].append(row)
    out = []
    for code in CODES:
        rows = by_code.get(code)
        if not rows:
            continue
        best = max(rows, key=lambda r: (_f1(r["precision"], r["recall"]), -rows.index(r)))
        best_f1 = _f1(best["precision"], best["recall"])
        # No best setup is named when none detects the code (F1 0) or several share the best F1:
        # picking one of them would be arbitrary (the first in sort order).
        tied = sum(1 for r in rows if _f1(r["precision"], r["recall"]) == best_f1)
        named = best_f1 > 0 and tied == 1
        out.append({"code": code, "setups": len(rows), "mean_precision": float(np.mean([r["precision"] for r in rows])),
                    "mean_recall": float(np.mean([r["recall"] for r in rows])),
                    "best_setup": "/".join(str(best[k]) for k in SETUP) if named else None,
                    "best_precision": best["precision"] if named else None,
                    "best_recall": best["recall"] if named else None, "best_f1": best_f1})
    return pa.Table.from_pylist(out, schema=CODE_SUMMARY_SCHEMA)


def parse_rates(judgments: pa.Table) -> pa.Table:
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in _rows(judgments):
        groups[tuple(row[k] for k in SETUP)].append(row)
    out = []
    for setup in sorted(groups):
        rows = groups[setup]
        ok = [r for r in rows if r["parse_status"] == "ok"]
        emitted = sum(len(r["error_codes"]) + len(r["hallucinated_codes"]) for r in ok)
        hallucinated = sum(len(r["hallucinated_codes"]) for r in ok)
        record = {**dict(zip(SETUP, setup)), "n": len(rows)}
        record.update({f"rate_{c}": sum(r["parse_status"] == c for r in rows) / len(rows) for c in PARSE_CLASSES})
        record["parsed"] = len(ok) / len(rows)
        record.update({f"route_{m}": sum(r["parse_method"] == m for r in ok) / len(ok) if ok else math.nan for m in ROUTES})
        responses = {r["file_id"]: r["response_status"] for r in rows}  # one status per file's call(s)
        record["responses"] = len(responses)
        record["responses_partial"] = sum(v.startswith("partial") for v in responses.values()) / len(responses)
        record["hallucinated_code_rate"] = hallucinated / emitted if emitted else 0.0
        record["comments_with_hallucinated_code"] = sum(bool(r["hallucinated_codes"]) for r in ok) / len(ok) if ok else math.nan
        record["codes_per_comment"] = sum(len(r["error_codes"]) for r in ok) / len(ok) if ok else math.nan
        out.append(record)
    return pa.Table.from_pylist(out, schema=PARSE_RATES_SCHEMA)


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def reference_comparison(judgments: pa.Table, samples: pa.Table) -> pa.Table:
    """Kappa with and without the reference comment, side by side, with Williams' test."""
    from engine.stats import williams_test

    experts = _experts(samples)
    by_mode: dict[tuple, dict[str, dict[str, str]]] = defaultdict(lambda: {"with": {}, "without": {}})
    for row in _rows(judgments):
        expert = experts.get(row["sample_id"], (None, None))[0]
        if row["parse_status"] == "ok" and row["label"] in LABELS and expert in LABELS:
            key = (row["language"], row["judge"], row["task"], row["strategy"], row["prompt_language"])
            by_mode[key][row["reference"]][row["sample_id"]] = row["label"]
    out = []
    for key in sorted(by_mode):
        modes = by_mode[key]
        if not modes["with"] and not modes["without"]:
            continue
        common = sorted(set(modes["with"]) & set(modes["without"]))
        record: dict[str, Any] = dict(zip(("language", "judge", "task", "strategy", "prompt_language"), key))
        record.update(n_with=len(modes["with"]), n_without=len(modes["without"]), n=len(common), t=math.nan, p=math.nan,
                      reason=None)
        pairs = {mode: [(experts[s][0], modes[mode][s]) for s in common] for mode in ("with", "without")}
        record["kappa_with"] = _matrix_fields(_confusion(pairs["with"]))["kappa"]
        record["kappa_without"] = _matrix_fields(_confusion(pairs["without"]))["kappa"]
        z = np.array([LABELS.index(experts[s][0]) for s in common], dtype=float)
        x = np.array([LABELS.index(modes["without"][s]) for s in common], dtype=float)
        y = np.array([LABELS.index(modes["with"][s]) for s in common], dtype=float)
        record["r_without"], record["r_with"], record["r_between"] = _pearson(x, z), _pearson(y, z), _pearson(x, y)
        if not common:
            record["reason"] = "not judged in both modes" if modes["with"] and modes["without"] else \
                f"only judged {'with' if modes['with'] else 'without'} the reference"
        elif len(common) <= 3:
            record["reason"] = f"{len(common)} items judged in both modes; Williams' test needs more than 3"
        elif any(math.isnan(record[k]) for k in ("r_without", "r_with", "r_between")):
            record["reason"] = "a correlation is undefined (constant labels)"
        else:
            try:
                record["t"], record["p"] = williams_test(record["r_without"], record["r_with"], record["r_between"], len(common))
            except ValueError as exc:
                record["reason"] = str(exc)
        out.append(record)
    return pa.Table.from_pylist(out, schema=REFERENCE_SCHEMA)


def read_judgments(run_root: Path) -> pa.Table | None:
    folder = Path(run_root) / "judgments"
    files = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        return None
    from engine.records import JUDGMENT_SCHEMA

    return pa.concat_tables(pq.read_table(f, schema=JUDGMENT_SCHEMA) for f in files)


def write_analysis(run_root: str | Path, samples: pa.Table, judgments: pa.Table | None = None) -> dict[str, Path]:
    """Compute every table from RUN/judgments (or `judgments`) and the expert `samples`; write them."""
    judgments = read_judgments(Path(run_root)) if judgments is None else judgments
    if judgments is None:
        return {}
    out_dir = Path(run_root) / OUTPUT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    detection = code_detection(judgments, samples)
    tables = {"agreement": agreement(judgments, samples), "pooled_confusion": pooled_confusion(judgments, samples),
              "code_detection": detection, "code_summary": code_summary(detection), "parse_rates": parse_rates(judgments),
              "reference_comparison": reference_comparison(judgments, samples)}
    paths = {}
    for name, table in tables.items():
        path = out_dir / f"{name}.parquet"
        write_parquet_atomic(path, table)  # a crash leaves the old file or the new one
        paths[name] = path
    return paths


def _schema(fields: Iterable[tuple[str, pa.DataType]]) -> pa.Schema:
    return pa.schema([pa.field(n, t) for n, t in fields])


_SETUP_FIELDS = [(k, pa.string()) for k in SETUP]
_MATRIX_FIELDS = [("classes", pa.list_(pa.string())), ("kappa", pa.float64()), ("confusion", pa.list_(pa.list_(pa.int64()))),
                  ("confusion_row_norm", _MATRIX), ("confusion_col_norm", _MATRIX)]
AGREEMENT_SCHEMA = _schema([("language", pa.string()), *_SETUP_FIELDS, ("n_rows", pa.int64()), ("n", pa.int64()), *_MATRIX_FIELDS])
POOLED_SCHEMA = _schema([("judge", pa.string()), ("n", pa.int64()), *_MATRIX_FIELDS])
CODE_SCHEMA = _schema([*_SETUP_FIELDS, ("code", pa.string()), ("parent", pa.string()), ("pairs", pa.int64()), ("tp", pa.int64()),
                       ("fp", pa.int64()), ("fn", pa.int64()), ("precision", pa.float64()), ("recall", pa.float64())])
CODE_SUMMARY_SCHEMA = _schema([("code", pa.string()), ("setups", pa.int64()), ("mean_precision", pa.float64()),
                               ("mean_recall", pa.float64()), ("best_setup", pa.string()), ("best_precision", pa.float64()),
                               ("best_recall", pa.float64()), ("best_f1", pa.float64())])
PARSE_RATES_SCHEMA = _schema([*_SETUP_FIELDS, ("n", pa.int64()), *[(f"rate_{c}", pa.float64()) for c in PARSE_CLASSES],
                              ("parsed", pa.float64()), *[(f"route_{m}", pa.float64()) for m in ROUTES],
                              ("responses", pa.int64()), ("responses_partial", pa.float64()),
                              ("hallucinated_code_rate", pa.float64()), ("comments_with_hallucinated_code", pa.float64()),
                              ("codes_per_comment", pa.float64())])
REFERENCE_SCHEMA = _schema([("language", pa.string()), *[(k, pa.string()) for k in SETUP if k != "reference"],
                            ("n_with", pa.int64()), ("n_without", pa.int64()), ("n", pa.int64()),
                            ("kappa_with", pa.float64()), ("kappa_without", pa.float64()), ("r_with", pa.float64()),
                            ("r_without", pa.float64()), ("r_between", pa.float64()), ("t", pa.float64()),
                            ("p", pa.float64()),  # one-sided, H1: without the reference agrees better
                            ("reason", pa.string())])
