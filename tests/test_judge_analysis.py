"""Judge analysis on hand-computed toy data (scikit-learn as the oracle for kappa and confusion)."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.judge.analysis import agreement, code_detection, code_summary, parse_rates, pooled_confusion, write_analysis
from engine.records import JUDGMENT_SCHEMA, LABELS, SAMPLE_SCHEMA

EXPERTS = {  # sample_id: (label, codes)
    "f1/a": ("correct", []), "f1/b": ("partial", ["SE-HA3"]), "f2/a": ("incorrect", ["SE-HA2", "MS-ET"]),
    "f2/b": ("partial", ["LG-GR4"]), "f3/a": ("correct", None),
}
STANDARD = {  # sample_id: (status, label, codes, hallucinated)
    "f1/a": ("ok", "correct", [], ["XX-1"]), "f1/b": ("ok", "partial", ["SE-HA1"], []), "f2/a": ("ok", "partial", ["SE-HA2"], []),
    "f2/b": ("ok", "incorrect", ["LG-GR4", "SE-MD"], []), "f3/a": ("malformed", None, [], []),
}


def _samples() -> pa.Table:
    rows = [dict(sample_id=s, file_id=s.split("/")[0], language="en", source="x", comment_start=0, comment_end=1, reference="x",
                 generator=s.split("/")[1], label=label, error_codes=codes) for s, (label, codes) in EXPERTS.items()]
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def _judgments() -> pa.Table:
    rows = []
    for strategy, table in (("standard", STANDARD), ("hierarchical", {s: ("ok", "incorrect", ["SE-HA3"], []) for s in list(EXPERTS)[:4]})):
        for s, (status, label, codes, hallucinated) in table.items():
            rows.append(dict(file_id=s.split("/")[0], sample_id=s, generator=s.split("/")[1], language="en", judge="J", task="judge-J-1",
                             strategy=strategy, prompt_language="en", structured=False, label=label, error_codes=codes,
                             hallucinated_codes=hallucinated, error_confidence=[None] * len(codes), parse_status=status,
                             parse_method="whole" if status == "ok" else "", cluster_status=[], calls=1, prompt_tokens=1,
                             completion_tokens=1, latency_s=0.0, raw_response="{}", error=None))
    return pa.Table.from_pylist(rows, schema=JUDGMENT_SCHEMA)


def test_kappa_and_confusion_equal_scikit_learn() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rows = {r["strategy"]: r for r in agreement(_judgments(), _samples()).to_pylist()}
    standard = rows["standard"]
    pairs = [(EXPERTS[s][0], STANDARD[s][1]) for s in list(EXPERTS)[:4]]
    truth, pred = [p[0] for p in pairs], [p[1] for p in pairs]
    assert (standard["n_rows"], standard["n"]) == (5, 4)  # the malformed row has no label: not a pair
    assert standard["kappa"] == metrics.cohen_kappa_score(truth, pred, labels=list(LABELS), weights="quadratic")
    expected = metrics.confusion_matrix(truth, pred, labels=list(LABELS))
    assert standard["confusion"] == expected.tolist()
    # Rows (expert): incorrect -> partial once; partial -> incorrect once, partial once; correct -> correct once.
    assert standard["confusion"] == [[0, 1, 0], [1, 1, 0], [0, 0, 1]]
    assert standard["confusion_row_norm"] == [[0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]
    assert standard["confusion_col_norm"] == [[0.0, 0.5, 0.0], [1.0, 0.5, 0.0], [0.0, 0.0, 1.0]]
    hier = rows["hierarchical"]
    assert hier["confusion"] == [[1, 0, 0], [2, 0, 0], [1, 0, 0]]
    assert hier["kappa"] == metrics.cohen_kappa_score([EXPERTS[s][0] for s in list(EXPERTS)[:4]], ["incorrect"] * 4,
                                                      labels=list(LABELS), weights="quadratic")


def test_pooled_confusion_leaves_hierarchical_out() -> None:
    rows = {r["judge"]: r for r in pooled_confusion(_judgments(), _samples()).to_pylist()}
    assert set(rows) == {"J", "*"}
    assert rows["*"]["confusion"] == [[0, 1, 0], [1, 1, 0], [0, 0, 1]] and rows["*"]["n"] == 4


def _code(detection: pa.Table, strategy: str, code: str) -> tuple:
    [row] = [r for r in detection.to_pylist() if r["strategy"] == strategy and r["code"] == code]
    return row["tp"], row["fp"], row["fn"], row["precision"], row["recall"]


def test_per_code_precision_recall_with_parents_by_hand() -> None:
    detection = code_detection(_judgments(), _samples())
    nan = float("nan")

    def same(a, b):
        return all((x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y)) for x, y in zip(a, b))

    assert same(_code(detection, "standard", "SE-HA3"), (0, 0, 1, 0.0, 0.0))  # never predicted: precision 0
    assert same(_code(detection, "standard", "SE-HA1"), (0, 1, 0, 0.0, nan))  # never given by experts: recall NaN
    assert same(_code(detection, "standard", "SE-HA"), (2, 0, 0, 1.0, 1.0))  # parent: HA1/HA2/HA3 accumulate
    assert same(_code(detection, "standard", "SE"), (2, 1, 0, 2 / 3, 1.0))  # SE-MD adds a false positive
    assert same(_code(detection, "standard", "LG-GR4"), (1, 0, 0, 1.0, 1.0))
    assert same(_code(detection, "standard", "MS"), (0, 0, 1, 0.0, 0.0))
    assert same(_code(detection, "hierarchical", "SE-HA3"), (1, 3, 0, 0.25, 1.0))
    # f3/a: malformed and not annotated: never a pair.
    assert {r["pairs"] for r in detection.to_pylist()} == {4}
    summary = {r["code"]: r for r in code_summary(detection).to_pylist()}
    ha3 = summary["SE-HA3"]
    assert (ha3["setups"], ha3["mean_precision"], ha3["mean_recall"]) == (2, 0.125, 0.5)
    assert ha3["best_setup"] == "J/judge-J-1/hierarchical/en" and ha3["best_f1"] == pytest.approx(0.4)
    assert "SE-HA1" not in summary  # the experts never gave it


def test_parse_rates_hallucination_and_codes_per_comment() -> None:
    rows = {r["strategy"]: r for r in parse_rates(_judgments()).to_pylist()}
    standard = rows["standard"]
    assert (standard["n"], standard["rate_ok"], standard["rate_malformed"], standard["rate_empty"]) == (5, 0.8, 0.2, 0.0)
    assert standard["codes_per_comment"] == 1.0  # (0 + 1 + 1 + 2) / 4 parsed rows
    assert standard["hallucinated_code_rate"] == 0.2  # 1 of 5 emitted codes
    assert standard["comments_with_hallucinated_code"] == 0.25
    assert rows["hierarchical"]["codes_per_comment"] == 1.0


def test_write_analysis_reads_the_run_directory(tmp_path) -> None:
    (tmp_path / "judgments").mkdir()
    table = _judgments()
    pq.write_table(table.slice(0, 5), tmp_path / "judgments" / "judge-J-1__part-00000.parquet")
    pq.write_table(table.slice(5), tmp_path / "judgments" / "judge-J-1__part-00001.parquet")
    paths = write_analysis(tmp_path, _samples())
    assert sorted(paths) == ["agreement", "code_detection", "code_summary", "parse_rates", "pooled_confusion"]
    assert pq.read_table(paths["agreement"]).num_rows == 2
    assert write_analysis(tmp_path / "none", _samples()) == {}
    assert np.isfinite(pq.read_table(paths["pooled_confusion"]).column("kappa").to_numpy()).all()


def test_report_section_shows_the_tables(tmp_path) -> None:
    from engine.judge.report import judge_section

    assert judge_section(tmp_path) is None
    write_analysis(tmp_path, _samples(), _judgments())
    anchor, title, body = judge_section(tmp_path)
    assert anchor == "judges" and "kappa" in body and "SE-HA3" in body and "malformed" in body
    assert "1 (1.000 / 0.500)" in body  # pooled: expert incorrect judged partial once; column 'partial' holds 2


def test_report_puts_the_best_metric_kappa_beside_the_judges(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.judge.report import best_metric_kappa, judge_section
    from engine.records import CALIBRATION_SCHEMA

    def row(metric, language, kappa, fitted=True, task="agreement", group_by="language"):
        base = {name: None for name in CALIBRATION_SCHEMA.names}
        base.update(metric=metric, scorer="", variant="score", context="", language=language, task=task, n=10,
                    fitted=fitted, kappa=kappa, group_by=group_by)
        return base

    rows = [row("bleu", "en", 0.2), row("meteor", "en", 0.5), row("bleu", "zh", 0.1), row("meteor", "zh", 0.9, fitted=False),
            row("rougeL", "en", 0.95, task="noise-uniform"), row("rougeL", "en", 0.99, group_by="language+generator")]
    pq.write_table(pa.Table.from_pylist(rows, schema=CALIBRATION_SCHEMA), tmp_path / "calibration.parquet")
    assert best_metric_kappa(tmp_path) == {"en": (0.5, "meteor/score"), "zh": (0.1, "bleu/score")}
    (tmp_path / "judge_analysis").mkdir()
    for name in ("pooled_confusion", "code_summary", "parse_rates"):
        pq.write_table(pa.table({"x": pa.array([], pa.int64())}), tmp_path / "judge_analysis" / f"{name}.parquet")
    agreement = [{"language": "en", "judge": "j", "strategy": "cot", "prompt_language": "en", "n_rows": 5, "n": 5, "kappa": 0.3}]
    pq.write_table(pa.Table.from_pylist(agreement), tmp_path / "judge_analysis" / "agreement.parquet")
    _anchor, _title, body = judge_section(tmp_path)
    assert "best metric kappa" in body and "meteor/score" in body and "0.500" in body
