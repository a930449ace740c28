"""Judge analysis on hand-computed toy data (scikit-learn as the oracle for kappa and confusion)."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.judge.analysis import agreement, code_detection, code_summary, parse_rates, pooled_confusion, reference_comparison, write_analysis
from engine.records import JUDGMENT_SCHEMA, LABELS, SAMPLE_SCHEMA

EXPERTS = {  # sample_id: (label, codes)
    "f1/a": ("correct", []), "f1/b": ("partial", ["SE-HA3"]), "f2/a": ("incorrect", ["SE-HA2", "MS-ET"]),
    "f2/b": ("partial", ["LG-GR4"]), "f3/a": ("correct", None),
}
STANDARD = {  # sample_id: (status, label, codes, hallucinated)
    "f1/a": ("ok", "correct", [], ["XX-1"]), "f1/b": ("ok", "partial", ["SE-HA1"], []), "f2/a": ("ok", "partial", ["SE-HA2"], []),
    "f2/b": ("ok", "incorrect", ["LG-GR4", "SE-MD"], []), "f3/a": ("malformed", None, [], []),
}


_METHOD = {("standard", "f2/b"): "tolerant", ("standard", "f1/b"): "fenced"}
_RESPONSE = {("standard", "f3"): "malformed", ("hierarchical", "f2"): "partial 13/14"}


def _samples() -> pa.Table:
    rows = [dict(sample_id=s, file_id=s.split("/")[0], language="en", source="x", comment_start=0, comment_end=1, reference="x",
                 generator=s.split("/")[1], label=label, error_codes=codes) for s, (label, codes) in EXPERTS.items()]
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def _judgments() -> pa.Table:
    rows = []
    for strategy, table in (("standard", STANDARD), ("hierarchical", {s: ("ok", "incorrect", ["SE-HA3"], []) for s in list(EXPERTS)[:4]})):
        for s, (status, label, codes, hallucinated) in table.items():
            rows.append(dict(file_id=s.split("/")[0], sample_id=s, generator=s.split("/")[1], language="en", judge="J", task="judge-J-1",
                             strategy=strategy, prompt_language="en", reference="with", structured=False, label=label,
                             error_codes=codes, hallucinated_codes=hallucinated, error_confidence=[None] * len(codes),
                             parse_status=status, parse_method=_METHOD.get((strategy, s), "whole") if status == "ok" else "",
                             response_status=_RESPONSE.get((strategy, s.split("/")[0]), "ok"), cluster_status=[], calls=1,
                             prompt_tokens=1,
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


def test_pooled_confusion_leaves_the_clustered_strategies_out() -> None:
    judgments = _judgments()
    combined = [dict(r, strategy="combined") for r in judgments.to_pylist() if r["strategy"] == "hierarchical"]
    judgments = pa.concat_tables([judgments, pa.Table.from_pylist(combined, schema=JUDGMENT_SCHEMA)])
    rows = {r["judge"]: r for r in pooled_confusion(judgments, _samples()).to_pylist()}
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
    assert ha3["best_setup"] == "J/judge-J-1/hierarchical/en/with" and ha3["best_f1"] == pytest.approx(0.4)
    assert "SE-HA1" not in summary  # the experts never gave it


def test_parse_rates_hallucination_and_codes_per_comment() -> None:
    rows = {r["strategy"]: r for r in parse_rates(_judgments()).to_pylist()}
    standard = rows["standard"]
    assert (standard["n"], standard["rate_ok"], standard["rate_malformed"], standard["rate_empty"]) == (5, 0.8, 0.2, 0.0)
    assert standard["codes_per_comment"] == 1.0  # (0 + 1 + 1 + 2) / 4 parsed rows
    assert standard["hallucinated_code_rate"] == 0.2  # 1 of 5 emitted codes
    assert standard["comments_with_hallucinated_code"] == 0.25
    assert rows["hierarchical"]["codes_per_comment"] == 1.0
    # the share parsed and the route each parsed candidate was read by
    assert standard["parsed"] == 0.8
    assert (standard["route_whole"], standard["route_fenced"], standard["route_tolerant"], standard["route_balanced"]) == \
        (0.5, 0.25, 0.25, 0.0)
    assert (standard["responses"], standard["responses_partial"]) == (3, 0.0)
    assert (rows["hierarchical"]["responses"], rows["hierarchical"]["responses_partial"]) == (2, 0.5)


# Reference-free judging: 8 items, the labels without the reference closer to the experts'.
_EXPERT8 = ["correct", "partial", "incorrect", "correct", "partial", "incorrect", "correct", "partial"]
_WITH8 = ["partial", "partial", "partial", "correct", "correct", "incorrect", "partial", "incorrect"]
_WITHOUT8 = ["correct", "partial", "incorrect", "correct", "correct", "incorrect", "correct", "partial"]


def _reference_data() -> tuple[pa.Table, pa.Table]:
    samples = pa.Table.from_pylist([dict(sample_id=f"g{i}/a", file_id=f"g{i}", language="nl", source="x", comment_start=0,
                                         comment_end=1, reference="x", generator="a", label=label, error_codes=[])
                                    for i, label in enumerate(_EXPERT8)], schema=SAMPLE_SCHEMA)
    rows = []
    for mode, labels in (("with", _WITH8), ("without", _WITHOUT8)):
        for i, label in enumerate(labels):
            rows.append(dict(file_id=f"g{i}", sample_id=f"g{i}/a", generator="a", language="nl", judge="J", task="judge-J-2",
                             strategy="cot", prompt_language="nl", reference=mode, structured=False,
                             label=label, error_codes=[], hallucinated_codes=[], error_confidence=[],
                             parse_status="ok", parse_method="whole", response_status="ok", cluster_status=[], calls=1,
                             prompt_tokens=1, completion_tokens=1, latency_s=0.0, raw_response="{}", error=None))
    # one more item parsed only without the reference: not a pair, so not in the comparison
    rows.append(dict(rows[-1], file_id="g9", sample_id="g9/a"))
    samples = pa.concat_tables([samples, pa.Table.from_pylist([dict(samples.to_pylist()[0], sample_id="g9/a", file_id="g9")],
                                                              schema=SAMPLE_SCHEMA)])
    return pa.Table.from_pylist(rows, schema=JUDGMENT_SCHEMA), samples


def test_reference_comparison_kappa_side_by_side_with_williams_test() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    stats = pytest.importorskip("scipy.stats")
    from engine.stats import williams_test

    judgments, samples = _reference_data()
    [row] = reference_comparison(judgments, samples).to_pylist()
    assert (row["language"], row["strategy"], row["n_with"], row["n_without"], row["n"]) == ("nl", "cot", 8, 9, 8)
    kappa = lambda pred: metrics.cohen_kappa_score(_EXPERT8, pred, labels=list(LABELS), weights="quadratic")  # noqa: E731
    assert row["kappa_with"] == pytest.approx(kappa(_WITH8)) and row["kappa_without"] == pytest.approx(kappa(_WITHOUT8))
    ordinal = lambda labels: [LABELS.index(x) for x in labels]  # noqa: E731
    r_xz = stats.pearsonr(ordinal(_WITHOUT8), ordinal(_EXPERT8)).statistic
    r_yz = stats.pearsonr(ordinal(_WITH8), ordinal(_EXPERT8)).statistic
    r_xy = stats.pearsonr(ordinal(_WITHOUT8), ordinal(_WITH8)).statistic
    assert (row["r_without"], row["r_with"], row["r_between"]) == pytest.approx((r_xz, r_yz, r_xy))
    t, p = williams_test(r_xz, r_yz, r_xy, 8)
    assert (row["t"], row["p"]) == pytest.approx((t, p)) and row["t"] > 0 and row["reason"] is None
    # The agreement table keeps the two modes apart (reference is part of the setup).
    modes = {r["reference"]: r for r in agreement(judgments, samples).to_pylist()}
    assert set(modes) == {"with", "without"} and modes["without"]["n"] == 9


def test_reference_comparison_says_why_a_test_is_missing() -> None:
    judgments, samples = _reference_data()
    only_with = judgments.filter(pa.compute.equal(judgments["reference"], "with"))
    [row] = reference_comparison(only_with, samples).to_pylist()
    assert row["reason"] == "only judged with the reference" and math.isnan(row["t"]) and math.isnan(row["kappa_without"])
    few = judgments.filter(pa.compute.is_in(judgments["sample_id"], pa.array(["g0/a", "g1/a", "g2/a"])))
    [row] = reference_comparison(few, samples).to_pylist()
    assert row["n"] == 3 and "needs more than 3" in row["reason"]


def test_write_analysis_reads_the_run_directory(tmp_path) -> None:
    (tmp_path / "judgments").mkdir()
    table = _judgments()
    pq.write_table(table.slice(0, 5), tmp_path / "judgments" / "judge-J-1__part-00000.parquet")
    pq.write_table(table.slice(5), tmp_path / "judgments" / "judge-J-1__part-00001.parquet")
    paths = write_analysis(tmp_path, _samples())
    assert sorted(paths) == ["agreement", "code_detection", "code_summary", "parse_rates", "pooled_confusion",
                             "reference_comparison"]
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
    # share parsed per strategy and the routes used
    assert "Candidates parsed per strategy" in body and "<th>tolerant</th>" in body and "0.250" in body
    assert "Reference-free" not in body  # only one mode was judged


def test_report_shows_kappa_with_and_without_side_by_side(tmp_path) -> None:
    from engine.judge.report import judge_section

    judgments, samples = _reference_data()
    write_analysis(tmp_path, samples, judgments)
    _anchor, _title, body = judge_section(tmp_path)
    [row] = pq.read_table(tmp_path / "judge_analysis" / "reference_comparison.parquet").to_pylist()
    assert "Reference-free judging" in body and "<th>kappa with</th><th>kappa without</th>" in body
    assert f"{row['kappa_with']:.3f}" in body and f"{row['kappa_without']:.3f}" in body and f"{row['t']:.3f}" in body


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
    # Settings named as in the rest of the report (ConfigKey.label: `·` between parts, no `score` variant).
    assert best_metric_kappa(tmp_path) == {"en": (0.5, "meteor"), "zh": (0.1, "bleu")}
    (tmp_path / "judge_analysis").mkdir()
    for name in ("pooled_confusion", "code_summary", "parse_rates", "reference_comparison"):
        pq.write_table(pa.table({"x": pa.array([], pa.int64())}), tmp_path / "judge_analysis" / f"{name}.parquet")
    agreement = [{"language": "en", "judge": "j", "strategy": "cot", "prompt_language": "en", "n_rows": 5, "n": 5, "kappa": 0.3}]
    pq.write_table(pa.Table.from_pylist(agreement), tmp_path / "judge_analysis" / "agreement.parquet")
    _anchor, _title, body = judge_section(tmp_path)
    assert "best metric kappa" in body and "<td class=lbl>meteor</td>" in body and "0.500" in body


def test_a_row_without_kappa_says_why_as_text() -> None:
    """No answer of a setup parsed into a label: the note under the table names its parse classes."""
    from engine.judge.report import no_kappa_notes

    setup = {"judge": "j", "strategy": "cot", "prompt_language": "en", "reference": "with"}
    agreement = [dict(setup, language="en", n_rows=5, n=0, kappa=float("nan")),
                 dict(setup, language="nl", strategy="standard", n_rows=5, n=5, kappa=0.4)]
    rates = [dict(setup, rate_ok=0.0, rate_empty=0.2, rate_malformed=0.0, rate_truncated=0.8, rate_api_error=0.0)]
    [note] = no_kappa_notes(agreement, rates)
    assert "English, j · cot · en · with: no answer gave a label (80% truncated, 20% empty" in note
    assert "Dutch" not in note  # a row with a kappa needs no note
    assert no_kappa_notes(agreement[1:], rates) == []


def test_no_best_setup_is_named_when_every_setup_scores_zero_or_several_tie() -> None:
    """Picking the first of several equal setups (every precision 0) named an arbitrary "best"."""
    import pyarrow as pa

    def row(code: str, strategy: str, tp: int, fp: int, fn: int) -> dict:
        precision = tp / (tp + fp) if tp + fp else 0.0
        return {"code": code, "judge": "J", "task": "judge-J-1", "strategy": strategy, "prompt_language": "en",
                "reference": "with", "tp": tp, "fp": fp, "fn": fn, "pairs": 4, "precision": precision,
                "recall": tp / (tp + fn) if tp + fn else math.nan}

    detection = pa.Table.from_pylist([row("MS", "standard", 0, 1, 2), row("MS", "hierarchical", 0, 0, 2),
                                      row("LG", "standard", 1, 1, 1), row("LG", "hierarchical", 1, 1, 1),
                                      row("SE", "standard", 2, 0, 0), row("SE", "hierarchical", 1, 1, 1)])
    summary = {r["code"]: r for r in code_summary(detection).to_pylist()}
    assert summary["MS"]["best_setup"] is None and summary["MS"]["best_f1"] == 0.0  # every F1 is 0
    assert summary["LG"]["best_setup"] is None and summary["LG"]["best_f1"] == pytest.approx(0.5)  # a tie
    assert summary["SE"]["best_setup"] == "J/judge-J-1/standard/en/with" and summary["SE"]["best_precision"] == 1.0


def test_the_answer_names_the_judges_best_setup_per_language_and_says_ties(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.judge.analysis import AGREEMENT_SCHEMA
    from engine.report.answer import judge_best

    def row(language: str, strategy: str, kappa: float | None, n: int) -> dict:
        return {"language": language, "judge": "J", "task": "judge-J-1", "strategy": strategy, "prompt_language": "en",
                "reference": "with", "n_rows": 10, "n": n, "kappa": kappa}

    rows = [row("en", "standard", 0.4, 10), row("en", "hierarchical", 0.7, 10), row("de", "standard", 0.5, 8),
            row("de", "hierarchical", 0.5, 8), row("nl", "standard", None, 0)]
    (tmp_path / "judge_analysis").mkdir()
    table = pa.Table.from_pylist([{f.name: r.get(f.name) for f in AGREEMENT_SCHEMA} for r in rows], schema=AGREEMENT_SCHEMA)
    pq.write_table(table, tmp_path / "judge_analysis" / "agreement.parquet")
    best = judge_best(tmp_path)
    assert [r["strategy"] for r in best["en"]] == ["hierarchical"]
    assert sorted(r["strategy"] for r in best["de"]) == ["hierarchical", "standard"]  # a tie: both named
    assert "nl" not in best  # no kappa: no best
