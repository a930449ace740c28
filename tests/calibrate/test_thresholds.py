"""Stage `calibrate` (engine/calibrate/thresholds.py, summary.py) on synthetic score tables."""
from __future__ import annotations

import collections

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from engine.calibrate.params import CalibrateParams
from engine.calibrate.summary import error_code_counts, expert_accuracy_table, kappa_summary
from engine.calibrate.thresholds import calibrate
from engine.errors import ConfigError
from engine.records import CALIBRATION_SCHEMA, LABELS, SCORE_SCHEMA
from kernels.reference import kde_thresholds_reference
from tests.support.calibration_tables import per_generator_study, samples_table

FAST = CalibrateParams(grid_points=256, bootstrap=50)


def _scores(rows) -> pa.Table:
    """rows: (sample_id, language, noise, metric, variant, value[, error]) tuples."""
    cols = collections.defaultdict(list)
    for r in rows:
        sid, lang, noise, metric, variant, value = r[:6]
        for k, v in dict(sample_id=sid, generator="g", language=lang, noise=noise, metric=metric, scorer="",
                         context="", variant=variant, value=value, signature="sig",
                         error=r[6] if len(r) > 6 else None).items():
            cols[k].append(v)
    return pa.Table.from_pydict(dict(cols), schema=SCORE_SCHEMA)


def _study(n=600, seed=0, languages=("en", "zh")):
    """Labels, a metric that tracks them, a constant metric; uniform noise scoring low."""
    rng = np.random.default_rng(seed)
    labels = [LABELS[k] for k in rng.integers(0, 3, n)]
    langs = [languages[i % len(languages)] for i in range(n)]
    rows = []
    for i, lab in enumerate(labels):
        good = LABELS.index(lab) * 0.25 + rng.normal(0, 0.15)
        rows.append((f"s{i}", langs[i], "none", "bleu", "score", good))
        rows.append((f"s{i}", langs[i], "uniform", "bleu", "score", rng.normal(-0.8, 0.1)))
        rows.append((f"s{i}", langs[i], "none", "flat", "F", 0.5))
    return samples_table(labels, langs), _scores(rows)


def _row(table: pa.Table, **where) -> dict:
    where.setdefault("group_by", "language")
    found = [r for r in table.to_pylist() if all(r[k] == v for k, v in where.items())]
    assert len(found) == 1, (where, found)
    return found[0]


def test_rows_per_group_and_task_and_agreement_equals_sklearn_on_reference_thresholds():
    samples, scores = _study()
    out = calibrate(scores, samples, FAST)
    assert out.schema == CALIBRATION_SCHEMA
    keys = [(r["metric"], r["language"], r["task"], r["group_by"], r["generator"] or "") for r in out.to_pylist()]
    assert sorted(keys) == keys and len(set(keys)) == len(keys)
    assert set(keys) == {(m, lang, "agreement", "language", "") for m in ("bleu", "flat") for lang in ("en", "zh")} | {
        ("bleu", lang, "noise-uniform", g, gen) for lang in ("en", "zh")
        for g, gen in (("language", ""), ("language+generator", "g"))}

    row = _row(out, metric="bleu", language="zh", task="agreement")
    assert row["fitted"] and row["reason"] is None and row["classes"] == list(LABELS)
    # independent recomputation: scipy-based thresholds, sklearn statistics
    lab = dict(zip(samples["sample_id"].to_pylist(), samples["label"].to_pylist()))
    real = [r for r in scores.to_pylist() if r["metric"] == "bleu" and r["language"] == "zh" and r["noise"] == "none"]
    v = np.array([r["value"] for r in real])
    y = np.array([LABELS.index(lab[r["sample_id"]]) for r in real])
    ref_t, ref_l = kde_thresholds_reference([v[y == k] for k in range(3)], 256)
    assert row["region_labels"] == [LABELS[k] for k in ref_l]
    np.testing.assert_allclose(row["thresholds"], ref_t, atol=(v.max() - v.min()) / 255)
    pred = ref_l[np.searchsorted(ref_t, v, side="right")]
    assert row["n"] == len(v)
    assert row["kappa"] == cohen_kappa_score(y, pred, weights="quadratic", labels=[0, 1, 2])
    assert row["f1"] == f1_score(y, pred, average="macro")
    assert row["kappa_lo"] <= row["kappa"] <= row["kappa_hi"]
    cm = np.array(row["confusion"])
    assert cm.sum() == len(v) and (cm.sum(axis=1) == np.bincount(y, minlength=3)).all()
    np.testing.assert_allclose(np.array(row["confusion_row_norm"]).sum(axis=1), 1.0)
    np.testing.assert_allclose(np.array(row["confusion_col_norm"]).sum(axis=0)[cm.sum(axis=0) > 0], 1.0)

    noise = _row(out, metric="bleu", language="zh", task="noise-uniform")
    assert noise["classes"] == ["real", "uniform"] and noise["n"] == 2 * len(v)
    assert noise["f1"] > 0.95

    flat = _row(out, metric="flat", language="en", task="agreement")
    assert not flat["fitted"] and "equal" in flat["reason"] and flat["kappa"] is None and flat["thresholds"] is None


def test_separable_gives_one_and_independent_gives_zero():
    n = 10_000
    rng = np.random.default_rng(42)
    y = rng.integers(0, 3, n)
    labels = [LABELS[k] for k in y]
    separable = y * 10.0 + rng.uniform(0, 1, n)
    independent = rng.normal(0, 1, n)
    rows = [(f"s{i}", "en", "none", "sep", "F", separable[i]) for i in range(n)]
    rows += [(f"s{i}", "en", "none", "ind", "F", independent[i]) for i in range(n)]
    rows += [(f"s{i}", "en", "targeted", "sep", "F", 100 + rng.uniform()) for i in range(n)]
    out = calibrate(_scores(rows), samples_table(labels, ["en"] * n), CalibrateParams(bootstrap=20))
    sep = _row(out, metric="sep", task="agreement")
    assert sep["kappa"] == 1.0 and sep["f1"] == 1.0 and len(sep["thresholds"]) == 2
    assert _row(out, metric="sep", task="noise-targeted")["f1"] == 1.0
    ind = _row(out, metric="ind", task="agreement")
    assert ind["fitted"] and abs(ind["kappa"]) < 0.05


def test_degenerate_groups_are_rows_not_crashes():
    rng = np.random.default_rng(1)
    n = 90
    labels = ["correct" if i % 2 else "incorrect" for i in range(n)]  # no 'partial' at all
    rows = [(f"s{i}", "en", "none", "nopartial", "F", rng.normal()) for i in range(n)]
    rows += [(f"s{i}", "en", "none", "allnan", "F", float("nan")) for i in range(n)]
    rows += [(f"s{i}", "en", "none", "failed", "F", 0.3, "model crashed") for i in range(n)]
    rows += [(f"s{i}", "en", "none", "constclass", "F", 0.0 if labels[i] == "correct" else rng.normal())
             for i in range(n)]
    rows += [(f"s{i}", "en", "uniform", "constclass", "F", 0.0) for i in range(n)]
    no_floor = CalibrateParams(grid_points=256, bootstrap=50, min_bandwidth=0.0)
    out = calibrate(_scores(rows), samples_table(labels, ["en"] * n), no_floor)
    assert not out.column("fitted").to_pylist().count(True)
    r = _row(out, metric="nopartial", task="agreement")
    assert "'partial' has 0 score(s)" in r["reason"] and r["n"] == n
    for metric in ("allnan", "failed"):
        r = _row(out, metric=metric, task="agreement")
        assert r["n"] == 0 and f"all {n} row(s) have an error" in r["reason"]
    assert "class 'uniform' are equal" in _row(out, metric="constclass", task="noise-uniform")["reason"]
    # with the default bandwidth floor a constant class is fitted; empty classes and NaN are not
    floored = calibrate(_scores(rows), samples_table(labels, ["en"] * n), FAST)
    assert _row(floored, metric="constclass", task="noise-uniform")["fitted"]
    assert _row(floored, metric="constclass", task="agreement")["reason"] is not None  # no 'partial' class
    assert not _row(floored, metric="allnan", task="agreement")["fitted"]


def test_some_bad_rows_are_left_out_and_the_rest_fitted():
    samples, scores = _study(n=300, languages=("en",))
    bad = _scores([("s0", "en", "none", "bleu", "score", float("nan")), ("s1", "en", "none", "bleu", "score", 1.0, "oom")])
    keep = pc.invert(pc.is_in(scores["sample_id"], value_set=pa.array(["s0", "s1"])))
    table = pa.concat_tables([scores.filter(keep), bad])
    r = _row(calibrate(table, samples, FAST), metric="bleu", task="agreement")
    assert r["fitted"] and r["n"] == 298


def test_order_and_seed():
    samples, scores = _study(n=400)
    a = calibrate(scores, samples, FAST)
    perm = np.random.default_rng(0).permutation(scores.num_rows)
    b = calibrate(scores.take(perm), samples, FAST)
    assert a.equals(b)
    c = calibrate(scores, samples, CalibrateParams(grid_points=256, bootstrap=50, seed=1))
    assert c.column("kappa").equals(a.column("kappa")) and not c.column("kappa_lo").equals(a.column("kappa_lo"))
    d = calibrate(scores, samples, CalibrateParams(grid_points=256, bootstrap=0))
    assert d.column("kappa_lo").null_count == d.num_rows


def test_empirical_priors_follow_the_reference():
    rng = np.random.default_rng(8)
    n = 1000
    y = np.where(rng.random(n) < 0.8, 2, rng.integers(0, 2, n))
    v = y * 0.3 + rng.normal(0, 0.4, n)
    rows = [(f"s{i}", "en", "none", "m", "F", v[i]) for i in range(n)]
    out = calibrate(_scores(rows), samples_table([LABELS[k] for k in y], ["en"] * n),
                    CalibrateParams(grid_points=128, bootstrap=0, priors="empirical"))
    ref_t, ref_l = kde_thresholds_reference([v[y == k] for k in range(3)], 128, "empirical")
    r = _row(out, task="agreement")
    assert r["region_labels"] == [LABELS[k] for k in ref_l]
    np.testing.assert_allclose(r["thresholds"], ref_t, atol=(v.max() - v.min()) / 127)


def test_params_validation():
    assert CalibrateParams.from_mapping({"grid_points": 64, "priors": "empirical"}).grid_points == 64
    for bad in ({"grid_points": 1}, {"priors": "flat"}, {"confidence": 1.0}, {"bootstrap": -1},
                {"min_class_size": 1}, {"nope": 1}, {"group_by": {"noise": ["generator"]}},
                {"group_by": {"judges": ["language"]}}, {"group_by": {"agreement": ["language", "model"]}}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            CalibrateParams.from_mapping(bad, where="calibrate")


def test_expert_accuracy_and_error_codes():
    labels = ["correct", "partial", "incorrect", "correct", None, "correct"]
    langs = ["en", "en", "en", "nl", "nl", "nl"]
    gens = ["a", "a", "a", "a", "a", "b"]
    codes = [None, ["SE-MD"], ["SE-MD", "MS-LT"], [], ["LG-WL2"], ["SE-MD"]]
    samples = samples_table(labels, langs, gens, codes)
    acc = expert_accuracy_table(samples).to_pylist()
    assert acc == [
        dict(language="en", generator="a", n=3, share_correct=1 / 3, share_partial=1 / 3, share_incorrect=1 / 3),
        dict(language="nl", generator="a", n=1, share_correct=1.0, share_partial=0.0, share_incorrect=0.0),
        dict(language="nl", generator="b", n=1, share_correct=1.0, share_partial=0.0, share_incorrect=0.0),
    ]
    expected = collections.Counter((lang, g, c) for lang, g, cs in zip(langs, gens, codes) for c in cs or [])
    got = {(r["language"], r["generator"], r["code"]): r["count"] for r in error_code_counts(samples).to_pylist()}
    assert got == dict(expected)


def test_kappa_summary_is_a_readable_table():
    samples, scores = _study(n=300)
    text = kappa_summary(calibrate(scores, samples, FAST))
    lines = text.splitlines()
    assert "en" in lines[1] and "zh" in lines[1] and lines[1].index("en") < lines[1].index("zh")
    assert any(line.startswith("bleu") for line in lines) and "n/f" in text
    many = pa.Table.from_pylist(
        [dict(metric="bertscore", scorer=f"/models/m{i}", variant=v, context="full", language="en",
              task="agreement", n=10, fitted=True, kappa=0.5) for i in range(20) for v in ("P", "R", "F")],
        schema=CALIBRATION_SCHEMA)
    short = kappa_summary(many)
    assert "showing 20 of 60" in short and " R " not in short


def test_noise_f1_per_generator_equals_an_independent_per_generator_fit():
    samples, scores = per_generator_study()
    out = calibrate(scores, samples, CalibrateParams(grid_points=256, bootstrap=0))
    rows = scores.to_pylist()
    per_generator = [r for r in out.to_pylist() if r["group_by"] == "language+generator"]
    # every (language, generator, noise kind) once; agreement stays pooled over generators
    assert sorted((r["language"], r["generator"], r["task"]) for r in per_generator) == sorted(
        (lang, g, t) for lang in ("en", "nl") for g in ("gA", "gB", "gC") for t in ("noise-uniform", "noise-targeted"))
    assert {r["group_by"] for r in out.to_pylist() if r["task"] == "agreement"} == {"language"}
    f1s = set()
    for r in per_generator:
        kind = r["task"][len("noise-"):]
        real = np.array([x["value"] for x in rows if x["language"] == r["language"] and x["generator"] == r["generator"]
                         and x["noise"] == "none"])
        fake = np.array([x["value"] for x in rows if x["language"] == r["language"] and x["generator"] == r["generator"]
                         and x["noise"] == kind])
        ref_t, ref_l = kde_thresholds_reference([real, fake], 256)
        v = np.concatenate([real, fake])
        y = np.concatenate([np.zeros(len(real), int), np.ones(len(fake), int)])
        pred = ref_l[np.searchsorted(ref_t, v, side="right")]
        assert r["n"] == len(v) and r["classes"] == ["real", kind]
        np.testing.assert_allclose(r["thresholds"], ref_t, atol=(v.max() - v.min()) / 255)
        assert r["f1"] == pytest.approx(f1_score(y, pred, average="macro"), abs=2 / len(v))
        f1s.add(round(r["f1"], 3))
    assert len(f1s) > 3  # the generators differ: a pooled fit would hide that
    # the pooled rows are what a fit over all generators of a language gives
    pooled = _row(out, language="en", task="noise-uniform")
    assert pooled["generator"] is None and pooled["n"] == sum(
        1 for x in rows if x["language"] == "en" and x["noise"] in ("none", "uniform"))


def test_group_by_is_configurable_per_task_kind():
    samples, scores = per_generator_study(n=300)
    params = CalibrateParams.from_mapping({"grid_points": 128, "bootstrap": 0,
                                           "group_by": {"agreement": ["language", "generator"],
                                                        "noise": [["language"]]}})
    assert params.group_by == {"agreement": (("language", "generator"),), "noise": (("language",),)}
    out = calibrate(scores, samples, params).to_pylist()
    assert {(r["task"], r["group_by"]) for r in out} == {
        ("agreement", "language+generator"), ("noise-uniform", "language"), ("noise-targeted", "language")}
    # a per-generator agreement row equals a pooled fit over that generator's rows alone
    only_a = scores.filter(pc.equal(scores["generator"], "gA"))
    alone = _row(calibrate(only_a, samples, CalibrateParams(grid_points=128, bootstrap=0)), language="nl", task="agreement")
    row = next(r for r in out if r["task"] == "agreement" and r["language"] == "nl" and r["generator"] == "gA")
    assert row["kappa"] == alone["kappa"] and row["thresholds"] == alone["thresholds"]


def test_params_with_groupings_hash_and_compare():
    a = CalibrateParams.from_mapping({"group_by": {"noise": ["language", "generator"]}})
    b = CalibrateParams.from_mapping({"group_by": {"noise": [["generator", "language"]]}})
    assert a == b and hash(a) == hash(b) and a != CalibrateParams()
    assert a.to_dict()["group_by"] == {"agreement": [["language"]], "noise": [["language", "generator"]]}
