"""The adapter x language table: kappa, Pearson, Spearman and Williams' test against the base,
recomputed here with scipy and scikit-learn from the same labels, and drawn in the report."""
from __future__ import annotations

import math
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from engine.judge.adapter_table import SCHEMA, adapter_table, summary_lines, table_html
from engine.records import JUDGMENT_SCHEMA, LABELS


def _judgments() -> tuple[pa.Table, dict[str, str]]:
    rng = random.Random(3)
    experts, rows = {}, []
    for language in ("en", "el"):
        for i in range(40):
            sample = f"{language}_{i}/g"
            truth = rng.randrange(3)
            experts[sample] = LABELS[truth]
            base = rng.randrange(3)  # the base model guesses
            adapter = truth if rng.random() < (0.8 if language == "en" else 0.4) else rng.randrange(3)
            for judge, label in (("base", base), ("en", adapter)):
                failed = judge == "en" and sample == "el_0/g"  # a failed parse is no label: left out of the cell
                rows.append({"judge": judge, "sample_id": sample, "language": language,
                             "parse_status": "failed" if failed else "ok", "label": None if failed else LABELS[label]})
    table = pa.Table.from_pylist(rows)
    full = pa.Table.from_pylist([{**r, **{c: None for c in JUDGMENT_SCHEMA.names if c not in r}} for r in table.to_pylist()],
                                schema=JUDGMENT_SCHEMA)
    return full, experts


def _williams(r12: float, r13: float, r23: float, n: int) -> float:
    """Williams (1959) / Steiger (1980) eq. 3, written out again: p of corr(1,2) > corr(1,3)."""
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / (2 * k * (n - 1) / (n - 3) + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3))
    return float(stats.t.sf(t, n - 3))


def test_table_recomputed_with_scipy() -> None:
    from sklearn.metrics import cohen_kappa_score

    judgments, experts = _judgments()
    rows = adapter_table(judgments, experts, {"en": "base"}).to_pylist()
    assert [(r["judge"], r["language"]) for r in rows] == [("en", "el"), ("en", "en")]
    by_judge = {}
    for r in judgments.to_pylist():
        if r["parse_status"] == "ok":
            by_judge.setdefault((r["judge"], r["language"]), {})[r["sample_id"]] = LABELS.index(r["label"])
    for row in rows:
        mine, base = by_judge[("en", row["language"])], by_judge[("base", row["language"])]
        common = sorted(set(mine) & set(base))
        z = np.array([LABELS.index(experts[s]) for s in common])
        x, y = np.array([mine[s] for s in common]), np.array([base[s] for s in common])
        assert row["n"] == len(common) == (39 if row["language"] == "el" else 40)
        assert row["kappa"] == pytest.approx(cohen_kappa_score(z, x, weights="quadratic"))
        assert row["base_kappa"] == pytest.approx(cohen_kappa_score(z, y, weights="quadratic"))
        assert row["pearson"] == pytest.approx(stats.pearsonr(x, z).statistic)
        assert row["spearman"] == pytest.approx(stats.spearmanr(x, z).statistic)
        p = _williams(stats.pearsonr(x, z).statistic, stats.pearsonr(y, z).statistic, stats.pearsonr(x, y).statistic,
                      len(common))
        assert row["p"] == pytest.approx(p) and row["reason"] is None
    en = next(r for r in rows if r["language"] == "en")
    assert en["p"] < 0.05 and en["kappa"] > en["base_kappa"]  # the adapter that agrees 80% is significantly better


def test_the_report_and_the_console_show_every_cell(tmp_path) -> None:
    from engine.judge.report import adapter_part

    judgments, experts = _judgments()
    table = adapter_table(judgments, experts, {"en": "base"})
    pq.write_table(table, tmp_path / "t.parquet")
    rows = pq.read_table(tmp_path / "t.parquet").to_pylist()
    page = "\n".join(adapter_part(rows))
    assert "Fine-tuned judges" in page and page.count("<tr>") == 3 and "Greek" in page and "English" in page
    for row in rows:
        assert f"{row['p']:.3f}" in page and f"{row['kappa']:.3f}" in page
    lines = summary_lines(table)
    assert len(lines) == 3 and all(f"{r['p']:+.3f}" in "\n".join(lines) for r in rows)
    assert table.schema == SCHEMA and table_html([]) .count("<tr>") == 1


def test_too_few_items_say_why() -> None:
    rows = [{"judge": j, "sample_id": f"s{i}", "language": "pl", "parse_status": "ok", "label": "correct"}
            for j in ("base", "pl") for i in range(3)]
    judgments = pa.Table.from_pylist([{**r, **{c: None for c in JUDGMENT_SCHEMA.names if c not in r}} for r in rows],
                                     schema=JUDGMENT_SCHEMA)
    (row,) = adapter_table(judgments, {f"s{i}": "correct" for i in range(3)}, {"pl": "base"}).to_pylist()
    assert math.isnan(row["p"]) and "needs more than 3" in row["reason"]
