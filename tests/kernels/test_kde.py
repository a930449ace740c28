"""KDE threshold kernel (kernels/kde.py) against scipy.stats.gaussian_kde (kernels/reference.py)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from scipy.stats import gaussian_kde

from kernels import kde
from kernels.reference import kde_thresholds_reference
from tests.support.paths import REPO


def _fit_one(values_by_class, grid_points=1024, priors="equal", seed=0, min_bandwidth=1e-6):
    """Fit one group through the kernel, scores in shuffled order."""
    v = np.concatenate(values_by_class)
    c = np.concatenate([np.full(len(x), k) for k, x in enumerate(values_by_class)])
    perm = np.random.default_rng(seed).permutation(len(v))
    fit = kde.fit_thresholds(v[perm], np.array([0, len(v)]), c[perm], len(values_by_class), grid_points,
                             priors == "empirical", min_bandwidth=min_bandwidth)
    return fit, v[perm], c[perm]


def _assert_matches_reference(values_by_class, grid_points=1024, priors="equal", min_bandwidth=1e-6):
    ref_t, ref_l = kde_thresholds_reference(values_by_class, grid_points, priors, min_bandwidth)
    fit, _, _ = _fit_one(values_by_class, grid_points, priors, min_bandwidth=min_bandwidth)
    assert fit.status[0] == kde.OK
    nt = fit.n_thresholds[0]
    pooled = np.concatenate(values_by_class)
    step = (pooled.max() - pooled.min()) / (grid_points - 1)
    assert nt == len(ref_t)
    np.testing.assert_array_equal(fit.region_labels[0, : nt + 1], ref_l)
    assert np.all(np.abs(fit.thresholds[0, :nt] - ref_t) <= step)
    assert np.all(np.diff(fit.thresholds[0, :nt]) > 0)
    return fit


CASES = {
    "overlapping-3": lambda r: [r.normal(0, 1, 900), r.normal(0.7, 1.2, 700), r.normal(1.5, 0.8, 400)],
    "skewed-3": lambda r: [r.beta(2, 5, 600), r.beta(3, 3, 300), r.beta(5, 2, 900)],
    "separable-2": lambda r: [r.uniform(0, 0.3, 500), r.uniform(0.7, 1.0, 500)],
    "tight-class": lambda r: [r.normal(0, 1e-4, 100), r.normal(0.5, 0.2, 300)],  # bandwidth << grid step
    "far-apart": lambda r: [r.normal(0, 0.01, 50), r.normal(50, 3, 50), r.normal(100, 0.01, 50)],  # underflow gaps
    "two-each": lambda r: [np.array([0.0, 1.0]), np.array([0.5, 3.0])],
    "bleu-like": lambda r: [np.abs(r.normal(0, 1e-3, 300)), r.beta(2, 5, 300)],
}


@pytest.mark.parametrize("priors", ["equal", "empirical"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_thresholds_match_scipy_reference(case, priors):
    _assert_matches_reference(CASES[case](np.random.default_rng(7)), 1024, priors)


def test_small_grid_and_priors_change_the_answer():
    rng = np.random.default_rng(3)
    classes = [rng.normal(0, 1, 2000), rng.normal(1, 1, 200)]
    eq = _assert_matches_reference(classes, 64, "equal")
    emp = _assert_matches_reference(classes, 64, "empirical")
    # the rare class loses ground under empirical priors
    assert eq.n_thresholds[0] != emp.n_thresholds[0] or not np.allclose(eq.thresholds[0, :1], emp.thresholds[0, :1])


def test_bandwidth_is_scipys():
    rng = np.random.default_rng(1)
    classes = [rng.normal(0, 2, 333), rng.gamma(2, 1, 97)]
    fit, _, _ = _fit_one(classes)
    for k, x in enumerate(classes):
        scipy_h = np.sqrt(gaussian_kde(x, bw_method=1.06 * len(x) ** (-1 / 5)).covariance[0, 0])
        assert fit.bandwidth[0, k] == pytest.approx(scipy_h, rel=1e-12)


def test_many_groups_in_one_call_equal_single_fits():
    rng = np.random.default_rng(11)
    groups = []
    for g in range(40):
        n_classes = 2 + g % 2
        groups.append([rng.normal(k * rng.uniform(0.2, 1.5), rng.uniform(0.5, 2), rng.integers(5, 300))
                       for k in range(n_classes)])
    values = np.concatenate([np.concatenate(g) for g in groups])
    ids = np.concatenate([np.concatenate([np.full(len(x), k) for k, x in enumerate(g)]) for g in groups])
    offsets = np.concatenate([[0], np.cumsum([sum(len(x) for x in g) for g in groups])])
    fit = kde.fit_thresholds(values, offsets, ids, np.array([len(g) for g in groups]), 256)
    assert np.all(fit.status == kde.OK)
    for g, classes in enumerate(groups):
        ref_t, ref_l = kde_thresholds_reference(classes, 256)
        nt = fit.n_thresholds[g]
        pooled = np.concatenate(classes)
        assert nt == len(ref_t)
        np.testing.assert_array_equal(fit.region_labels[g, : nt + 1], ref_l)
        assert np.all(np.abs(fit.thresholds[g, :nt] - ref_t) <= (pooled.max() - pooled.min()) / 255)
        # reclassification: the region each score falls in (upper region on a tie)
        sl = slice(offsets[g], offsets[g + 1])
        expected = ref_l[np.searchsorted(ref_t, values[sl], side="right")]
        assert np.mean(fit.predicted[sl] == expected) > 0.995  # only scores within 1e-10 of a threshold may differ


def test_result_does_not_depend_on_score_order():
    rng = np.random.default_rng(5)
    classes = [rng.normal(0, 1, 500), rng.normal(1, 1, 400), rng.normal(2, 1, 300)]
    a, _, _ = _fit_one(classes, seed=1)
    b, _, _ = _fit_one(classes, seed=2)
    np.testing.assert_array_equal(a.thresholds, b.thresholds)


def test_separable_scores_are_reclassified_perfectly():
    rng = np.random.default_rng(2)
    classes = [rng.uniform(0, 1, 300), rng.uniform(2, 3, 300), rng.uniform(4, 5, 300)]
    fit, v, c = _fit_one(classes)
    assert fit.n_thresholds[0] == 2
    np.testing.assert_array_equal(fit.predicted, c)


def test_degenerate_groups_get_a_status_not_an_exception():
    rng = np.random.default_rng(0)
    good = [rng.normal(0, 1, 50), rng.normal(1, 1, 50)]
    groups = {
        "empty-class": ([good[0]], [0] * 50, kde.SMALL_CLASS, 1),
        "one-score-class": ([good[0], np.array([3.0])], None, kde.SMALL_CLASS, 1),
        "constant": ([np.full(10, 0.5), np.full(10, 0.5)], None, kde.CONSTANT, -1),
        "constant-class": ([np.full(10, 0.0), good[1]], None, kde.CLASS_CONSTANT, 0),  # with no floor
        "nan": ([np.append(good[0], np.nan), good[1]], None, kde.NONFINITE, -1),
        "ok": (good, None, kde.OK, -1),
        "huge-spread": ([good[0] * 1e160, good[1] * 1e160], None, kde.OVERFLOW, 0),  # squared deviations overflow
        "huge-range": ([np.array([-1.7e308, -1.6e308]), np.array([1.6e308, 1.7e308])], None, kde.OVERFLOW, -1),
        "empty-group": ([np.zeros(0), np.zeros(0)], None, kde.SMALL_CLASS, 0),
    }
    values, ids, offsets = [], [], [0]
    for classes, forced_ids, _, _ in groups.values():
        v = np.concatenate(classes)
        values.append(v)
        ids.append(np.array(forced_ids) if forced_ids is not None
                   else np.concatenate([np.full(len(x), k) for k, x in enumerate(classes)]))
        offsets.append(offsets[-1] + len(v))
    fit = kde.fit_thresholds(np.concatenate(values), np.array(offsets), np.concatenate(ids).astype(np.int64), 2,
                             min_bandwidth=0.0)
    for g, (name, (_, _, status, detail)) in enumerate(groups.items()):
        assert fit.status[g] == status, name
        assert fit.status_detail[g] == detail, name
        if status != kde.OK:
            assert np.all(fit.predicted[offsets[g]:offsets[g + 1]] == -1), name
            assert fit.n_thresholds[g] == 0
    assert fit.status[list(groups).index("ok")] == kde.OK


def test_min_class_size_and_input_checks():
    v = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    c = np.array([0, 0, 0, 1, 1, 1])
    assert kde.fit_thresholds(v, np.array([0, 6]), c, 2, 64, min_class_size=4).status[0] == kde.SMALL_CLASS
    assert kde.fit_thresholds(v, np.array([0, 6]), c, 2, 64, min_class_size=3).status[0] == kde.OK
    assert kde.fit_thresholds(v, np.array([0, 6]), c + 1, 2, 64).status[0] == kde.BAD_CLASS_ID
    assert kde.fit_thresholds(v, np.array([0, 6]), c, 0).status[0] == kde.BAD_CLASS_ID
    assert kde.fit_thresholds(np.zeros(0), np.array([0, 0]), np.zeros(0, np.int64), 0).status[0] == kde.SMALL_CLASS
    assert kde.fit_thresholds(v, np.array([0, 6]), c, 2, grid_points=1).status[0] == kde.BAD_GRID
    with pytest.raises(ValueError):
        kde.fit_thresholds(v, np.array([0, 5]), c, 2)


def _macro_f1(true, predicted, n_classes):
    """Macro F1 by hand: the mean over classes of 2 TP / (2 TP + FP + FN)."""
    scores = []
    for k in range(n_classes):
        tp = np.sum((predicted == k) & (true == k))
        fp = np.sum((predicted == k) & (true != k))
        fn = np.sum((predicted != k) & (true == k))
        scores.append(2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


@pytest.mark.parametrize("constant_value", [0.0, 1.0])
def test_a_constant_class_gets_the_bandwidth_floor_and_separates(constant_value):
    """BLEU of uniform noise is often all 0: the floored peak separates it from the real scores."""
    rng = np.random.default_rng(4)
    classes = [rng.uniform(0.05, 0.95, 200), np.full(150, constant_value)]
    fit = _assert_matches_reference(classes)  # same thresholds and regions as the oracle, same floor
    assert fit.bandwidth[0, 1] == 1e-6
    _, v, c = _fit_one(classes)
    assert _macro_f1(c, fit.predicted, 2) == 1.0
    ref_t, ref_l = kde_thresholds_reference(classes, 1024, "equal", 1e-6)
    assert _macro_f1(c, ref_l[np.searchsorted(ref_t, v, side="right")], 2) == 1.0
    # no floor: the class has bandwidth 0 and the group is not fitted
    assert _fit_one(classes, min_bandwidth=0.0)[0].status[0] == kde.CLASS_CONSTANT


def test_the_floor_lifts_only_bandwidths_below_it():
    rng = np.random.default_rng(8)
    classes = [rng.normal(0, 1e-7, 60), rng.normal(0.5, 0.2, 300)]  # Silverman h ~ 4e-8 < 1e-6
    fit = _assert_matches_reference(classes, 512)
    assert fit.bandwidth[0, 0] == 1e-6
    assert fit.bandwidth[0, 1] == pytest.approx(1.06 * 300 ** -0.2 * np.std(classes[1], ddof=1), rel=1e-12)
    _assert_matches_reference([np.full(40, 0.5), rng.uniform(0, 1, 300)], 1024)  # a peak inside the spread


def test_constant_group_and_nan_stay_not_fitted_with_the_floor():
    assert _fit_one([np.full(10, 0.5), np.full(10, 0.5)])[0].status[0] == kde.CONSTANT
    assert _fit_one([np.append(np.zeros(5), np.nan), np.ones(5)])[0].status[0] == kde.NONFINITE
    with pytest.raises(ValueError, match="min_bandwidth"):
        _fit_one([np.zeros(3), np.ones(3)], min_bandwidth=-1.0)


def test_thresholds_are_the_same_bits_compiled_afresh_and_loaded_from_the_cache_in_any_thread_count(tmp_path) -> None:
    """The kernels compiled in a process and the same kernels loaded from numba's cache by the next
    processes, with 1 or 3 numba threads, give bit-identical thresholds (with `fastmath` in the block
    sums they did not: the compiler chose the summation order, and a run's thresholds moved with the
    cache's state)."""
    import subprocess
    import sys

    code = (
        "import hashlib, numba, numpy as np\n"
        "from kernels.kde import fit_thresholds\n"
        "rng = np.random.default_rng(0)\n"
        "c = rng.integers(0, 3, 300 * 300)\n"
        "v = rng.normal(c * 0.6, 1.0 + 0.2 * c)\n"
        "fit = fit_thresholds(v, np.arange(301, dtype=np.int64) * 300, c.astype(np.int64), 3, 1024)\n"
        "print(numba.get_num_threads(), hashlib.sha256(np.ascontiguousarray(fit.thresholds).tobytes()).hexdigest())\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    env.pop("NUMBA_NUM_THREADS", None)
    runs = []
    for threads in (None, None, "1", "3"):
        extra = {"NUMBA_NUM_THREADS": threads} if threads else {}
        runs.append(subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**env, **extra}, capture_output=True,
                                   text=True, check=True).stdout.split())
        if len(runs) == 1:  # the first process compiled and cached, the next ones loaded
            assert any((tmp_path / "numba-cache").rglob("*.nbi"))
    assert [r[0] for r in runs[2:]] == ["1", "3"]
    digests = {r[1] for r in runs}
    assert len(digests) == 1, runs


def test_block_sums_follow_their_documented_order_bit_for_bit() -> None:
    """The compiled block sums equal plain Python floats added in the documented order (lane
    i mod LANES, lanes in a halving tree): the compiler reordered nothing, so no compiler or
    cache state can change the bits. 75 scores leave a part-filled chunk; 13 grid points take
    both the 8-point pass and the one-point remainder."""
    rng = np.random.default_rng(9)
    count, nb, lanes = 75, 13, kde.LANES
    t0 = rng.uniform(0.0, 1.0, count)
    r0 = rng.uniform(0.5, 1.5, count)
    q = 0.97
    chunks = -(-count // lanes)
    t = np.zeros((chunks, lanes))
    r = np.zeros((chunks, lanes))
    t.reshape(-1)[:count] = t0
    r.reshape(-1)[:count] = r0
    out = np.empty(nb)
    kde.block_sums(t, r, q, np.empty((kde.STEPS, lanes)), out, chunks, nb)

    tv, rv = [float(x) for x in t0], [float(x) for x in r0]
    expected = []
    for _ in range(nb):
        lane_sums = [0.0] * lanes
        for i in range(count):
            lane_sums[i % lanes] += tv[i]
            tv[i] *= rv[i]
            rv[i] *= q
        width = lanes
        while width > 1:
            width //= 2
            for j in range(width):
                lane_sums[j] += lane_sums[j + width]
        expected.append(lane_sums[0])
    assert out.tobytes() == np.array(expected).tobytes()
