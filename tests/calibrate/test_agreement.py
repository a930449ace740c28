"""Agreement statistics (engine/calibrate/agreement.py) against scikit-learn."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score
from sklearn.metrics import confusion_matrix as sk_confusion

from engine.calibrate import agreement


def _labels(seed: int, n: int, c: int, agree: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    true = rng.integers(0, c, n)
    pred = np.where(rng.random(n) < agree, true, rng.integers(0, c, n))
    return true, pred


@pytest.mark.parametrize("seed", range(12))
def test_kappa_and_f1_equal_sklearn_exactly(seed):
    c = 2 + seed % 2
    true, pred = _labels(seed, 50 + 37 * seed, c, agree=seed / 12)
    cm = agreement.confusion_matrix(true, pred, c)
    np.testing.assert_array_equal(cm, sk_confusion(true, pred, labels=range(c)))
    assert agreement.quadratic_kappa(cm) == cohen_kappa_score(true, pred, weights="quadratic", labels=list(range(c)))
    assert agreement.macro_f1(cm) == f1_score(true, pred, average="macro")


def test_kappa_with_a_class_never_predicted():
    true = np.array([0, 0, 1, 1, 2, 2, 2, 0, 1, 2])
    pred = np.array([0, 0, 0, 0, 2, 2, 2, 2, 0, 2])  # class 1 never predicted
    cm = agreement.confusion_matrix(true, pred, 3)
    assert agreement.quadratic_kappa(cm) == cohen_kappa_score(true, pred, weights="quadratic", labels=[0, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns about the ill-defined precision of class 1
        assert agreement.macro_f1(cm) == f1_score(true, pred, average="macro")


def test_undefined_kappa_is_nan():
    cm = agreement.confusion_matrix(np.zeros(5, int), np.zeros(5, int), 3)
    assert math.isnan(agreement.quadratic_kappa(cm))
    assert math.isnan(agreement.quadratic_kappa(np.zeros((3, 3), np.int64)))


def test_normalised_confusions_equal_sklearn():
    true, pred = _labels(4, 300, 3, 0.5)
    cm = agreement.confusion_matrix(true, pred, 3)
    np.testing.assert_allclose(agreement.normalise_rows(cm), sk_confusion(true, pred, normalize="true"), rtol=1e-15)
    np.testing.assert_allclose(agreement.normalise_columns(cm), sk_confusion(true, pred, normalize="pred"), rtol=1e-15)
    empty = np.array([[2, 0], [0, 0]])
    assert np.isnan(agreement.normalise_rows(empty)[1]).all()
    assert np.isnan(agreement.normalise_columns(empty)[:, 1]).all()


def test_vectorised_statistics_equal_the_scalar_ones():
    stack = np.stack([agreement.confusion_matrix(*_labels(s, 200, 3, s / 10), 3) for s in range(10)])
    stack = np.concatenate([stack, np.zeros((1, 3, 3), np.int64)])
    kappas = agreement.quadratic_kappa_many(stack)
    f1s = agreement.macro_f1_many(stack)
    for b in range(len(stack)):
        k = agreement.quadratic_kappa(stack[b])
        assert (math.isnan(k) and math.isnan(kappas[b])) or kappas[b] == pytest.approx(k, abs=1e-14)
        assert f1s[b] == pytest.approx(agreement.macro_f1(stack[b]), abs=1e-14)


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    true, pred = _labels(9, 800, 3, 0.6)
    cm = agreement.confusion_matrix(true, pred, 3)
    a = agreement.bootstrap_intervals(true, pred, 3, 300, 0.95, seed=123)
    b = agreement.bootstrap_intervals(true, pred, 3, 300, 0.95, seed=123)
    c = agreement.bootstrap_intervals(true, pred, 3, 300, 0.95, seed=124)
    assert a == b and a != c
    assert a.kappa_lo < agreement.quadratic_kappa(cm) < a.kappa_hi
    assert a.f1_lo < agreement.macro_f1(cm) < a.f1_hi
    narrow = agreement.bootstrap_intervals(true, pred, 3, 300, 0.5, seed=123)
    assert a.kappa_lo < narrow.kappa_lo < narrow.kappa_hi < a.kappa_hi
    assert all(math.isnan(x) for x in agreement.bootstrap_intervals(true, pred, 3, 0, 0.95, 1))


def test_bootstrap_in_chunks_equals_statistics_of_explicit_resamples(monkeypatch):
    true, pred = _labels(1, 97, 3, 0.5)
    monkeypatch.setattr(agreement, "_BOOTSTRAP_CHUNK", 97 * 7)  # 7 replicates per chunk
    got = agreement.bootstrap_intervals(true, pred, 3, 50, 0.9, seed=5)
    rng = np.random.default_rng(5)
    idx = np.concatenate([rng.integers(0, 97, size=(min(7, 50 - d), 97)) for d in range(0, 50, 7)])
    kappas = [cohen_kappa_score(true[i], pred[i], weights="quadratic", labels=[0, 1, 2]) for i in idx]
    assert got.kappa_lo == pytest.approx(np.quantile(kappas, 0.05), abs=1e-12)
    assert got.kappa_hi == pytest.approx(np.quantile(kappas, 0.95), abs=1e-12)


def test_derived_seed_is_stable():
    assert agreement.derived_seed(0, "bleu", "", "F") == agreement.derived_seed(0, "bleu", "", "F")
    assert agreement.derived_seed(0, "bleu", "", "F") != agreement.derived_seed(1, "bleu", "", "F")
    assert agreement.derived_seed(0, "a", "bc") != agreement.derived_seed(0, "ab", "c")
