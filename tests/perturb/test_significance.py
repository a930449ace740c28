"""Williams' test, correlations with the expert labels, and the significance rows."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from engine.perturb.params import SignificanceParams
from engine.perturb.significance import default_context_pairs, language_rows
from engine.stats import williams_test


def _williams_independent(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' T2 (Steiger 1980, eq. 7) with |R| as the determinant of the correlation matrix,
    and the one-sided p from the t distribution's cdf."""
    R = np.array([[1.0, r12, r13], [r12, 1.0, r23], [r13, r23, 1.0]])
    det = np.linalg.det(R)
    rbar = (r12 + r13) / 2
    t = (r12 - r13) * np.sqrt(((n - 1) * (1 + r23)) / (2 * ((n - 1) / (n - 3)) * det + rbar ** 2 * (1 - r23) ** 3))
    return float(t), float(1.0 - stats.t.cdf(t, df=n - 3))


def test_williams_check_value():
    t, p = williams_test(0.6, 0.4, 0.5, 100)
    assert round(t, 4) == 2.4487
    assert round(p, 5) == 0.00807


def test_williams_matches_an_independent_implementation_on_random_data():
    rng = np.random.default_rng(42)
    for _ in range(20):
        n = int(rng.integers(20, 400))
        cov = rng.uniform(-0.6, 0.9)
        z = rng.normal(size=n)
        x = z * rng.uniform(0.2, 2.0) + rng.normal(size=n)
        y = z * rng.uniform(0.2, 2.0) + cov * x + rng.normal(size=n)
        r_xz, r_yz, r_xy = np.corrcoef(x, z)[0, 1], np.corrcoef(y, z)[0, 1], np.corrcoef(x, y)[0, 1]
        t, p = williams_test(r_xz, r_yz, r_xy, n)
        t2, p2 = _williams_independent(r_xz, r_yz, r_xy, n)
        assert t == pytest.approx(t2, rel=1e-9, abs=1e-12)
        assert p == pytest.approx(p2, rel=1e-7, abs=1e-12)


def test_williams_is_one_sided_in_the_stated_direction():
    t, p = williams_test(0.6, 0.4, 0.5, 100)
    t_rev, p_rev = williams_test(0.4, 0.6, 0.5, 100)
    assert t > 0 and t_rev == pytest.approx(-t)
    assert p < 0.05 and p_rev == pytest.approx(1 - p) and p_rev > 0.5  # not two-sided: no 2p anywhere
    assert williams_test(0.5, 0.5, 0.3, 50) == pytest.approx((0.0, 0.5))
    with pytest.raises(ValueError, match="n > 3"):
        williams_test(0.6, 0.4, 0.5, 3)


def test_kendall_tau_b_with_ties_equals_a_hand_computation():
    values = {("m", "", "score", ""): {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}}
    labels = {"a": 0, "b": 0, "c": 1, "d": 2}
    (row,) = language_rows("en", values, labels, SignificanceParams(context_pairs=False))
    # 6 pairs: 5 concordant, 0 discordant, 1 tied in the labels only: 5 / sqrt(6 * 5)
    assert row["kendall"] == pytest.approx(5 / math.sqrt(30))
    # Spearman: ranks x 1..4, labels (1.5, 1.5, 3, 4)
    assert row["spearman"] == pytest.approx(np.corrcoef([1, 2, 3, 4], [1.5, 1.5, 3, 4])[0, 1])
    assert row["n"] == 4 and row["kind"] == "correlation"


def test_context_pairs_and_configured_pairs():
    settings = [("bertscore", "enc", "F", c) for c in ("none", "minimal", "full")] + [("bleu", "", "score", ""),
                                                                                       ("bertscore", "enc", "P", "full")]
    pairs = default_context_pairs(settings)
    assert pairs == [(("bertscore", "enc", "F", "full"), ("bertscore", "enc", "F", "none")),
                     (("bertscore", "enc", "F", "minimal"), ("bertscore", "enc", "F", "none"))]
    rng = np.random.default_rng(0)
    n = 120
    z = rng.integers(0, 3, size=n)
    ids = [f"s{i}" for i in range(n)]
    good = z + rng.normal(0, 0.5, n)
    bad = z + rng.normal(0, 3.0, n)
    values = {
        ("bertscore", "enc", "F", "full"): dict(zip(ids, good)),
        ("bertscore", "enc", "F", "none"): dict(zip(ids, bad)),
        ("bleu", "", "score", ""): dict(zip(ids, bad[::-1])),
    }
    labels = dict(zip(ids, z.tolist()))
    params = SignificanceParams.from_mapping({"pairs": [{"x": {"metric": "bleu", "variant": "score"},
                                                         "y": {"metric": "bertscore", "scorer": "enc", "variant": "F", "context": "full"}}]})
    rows = [r for r in language_rows("nl", values, labels, params) if r["kind"] == "williams"]
    assert len(rows) == 2
    ctx, configured = rows
    assert (ctx["context"], ctx["context_y"]) == ("full", "none")
    r_xz = stats.spearmanr(good, z).statistic
    r_yz = stats.spearmanr(bad, z).statistic
    r_xy = stats.spearmanr(good, bad).statistic
    assert (ctx["r_xz"], ctx["r_yz"], ctx["r_xy"]) == pytest.approx((r_xz, r_yz, r_xy))
    assert (ctx["t"], ctx["p"]) == pytest.approx(williams_test(r_xz, r_yz, r_xy, n))
    assert ctx["significant"] and ctx["direction"] == "x>y"
    assert ctx["sentence"].startswith("In Dutch, bertscore enc F with context full agrees with the expert labels better than")
    assert configured["direction"] == "y>x" and not configured["significant"] and configured.get("sentence") is None
    assert configured["p"] > 0.5


def test_holm_adjustment_equals_a_hand_computation():
    from engine.perturb.significance import holm

    # sorted 0.01, 0.03, 0.04 -> 3 * 0.01, max(0.03, 2 * 0.03), max(0.06, 1 * 0.04)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_significance_uses_the_adjusted_p():
    rng = np.random.default_rng(1)
    n = 60
    z = rng.integers(0, 3, size=n)
    ids = [f"s{i}" for i in range(n)]
    x = z + rng.normal(0, 1.2, n)
    y = z + rng.normal(0, 2.5, n)
    values = {("a", "", "score", ""): dict(zip(ids, x)), ("b", "", "score", ""): dict(zip(ids, y))}
    labels = dict(zip(ids, z.tolist()))
    pair = {"x": {"metric": "a", "variant": "score"}, "y": {"metric": "b", "variant": "score"}}
    raw = SignificanceParams.from_mapping({"pairs": [pair] * 3, "adjust": "none"})
    (row,) = {r["p"]: r for r in language_rows("en", values, labels, raw) if r["kind"] == "williams"}.values()
    holm_rows = [r for r in language_rows("en", values, labels, SignificanceParams.from_mapping({"pairs": [pair] * 3}))
                 if r["kind"] == "williams"]
    assert row["p_adjusted"] == row["p"]
    assert all(r["p_adjusted"] == pytest.approx(min(1.0, 3 * row["p"])) for r in holm_rows)
    assert all(r["significant"] == (r["p_adjusted"] < 0.05) for r in holm_rows)
