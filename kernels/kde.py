"""Gaussian-KDE threshold classifier for thousands of score groups in one parallel numba call.

Per group, each class gets a Gaussian KDE with Silverman's bandwidth (floored at `min_bandwidth`),
its log density plus log prior is evaluated on a uniform grid over the group's pooled scores, and a
threshold is placed where the densest class changes, at the zero of the interpolated log-density
ratio (oracle: `kernels.reference.kde_thresholds_reference`). A recurrence on the uniform grid
makes a block of grid points cost two `exp` per score; sums over scores run in 32 lanes added in a
fixed order (no `fastmath`), so the thresholds are the same bits compiled or cached, in any thread
count. The definition, the recurrence and its exactness bounds: docs/calibration.md, "The KDE
kernel".
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

# Per-group status codes; `status_detail` names the class (or -1) for the message.
OK = 0
NONFINITE = 1  # a score is NaN or infinite
SMALL_CLASS = 2  # a class has fewer than min_class_size scores (detail: the class)
CONSTANT = 3  # all scores of the group are equal: no range for a grid
CLASS_CONSTANT = 4  # all scores of one class are equal and min_bandwidth is 0 (detail: the class)
TOO_MANY_CROSSINGS = 5  # more density crossings than max_thresholds
BAD_CLASS_ID = 6  # a class id outside [0, n_classes of the group)
BAD_GRID = 7  # grid_points < 2
OVERFLOW = 8  # scores so large (|x| above ~1e150) that their spread or bandwidth is not finite

_CUTOFF = 30.0  # |u| beyond which a kernel term (< exp(-450)) is skipped
_MAX_U = 37.0  # bound on |u| inside a block: exp(-37^2 / 2) ~ 1e-297 is still a normal float
_EXACT_BELOW = 1e-150  # density sums below this are recomputed as an exact log-sum-exp
LANES = 32  # independent partial sums per grid point (a power of 2: they are added in a halving tree)
STEPS = 8  # grid points walked per pass over the scores (written out in block_sums)
_MAX_BLOCK = 256  # grid points per block at most: the recurrence's rounding grows with its length
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class KdeFit(NamedTuple):
    """Result of `fit_thresholds` for G groups over N scores (T = max_thresholds, C = max classes).

    status: (G,) int64, one of the codes above; status_detail: (G,) int64, the class concerned
    or -1. n_thresholds: (G,) int64. thresholds: (G, T) float64, ascending, NaN-padded.
    region_labels: (G, T + 1) int64, the class of each region, -1-padded (n_thresholds + 1 used).
    predicted: (N,) int64, the class of each score's region, -1 for groups not fitted.
    bandwidth: (G, C) float64, NaN where not computed. grid_lo, grid_hi: (G,) float64.
    """

    status: np.ndarray
    status_detail: np.ndarray
    n_thresholds: np.ndarray
    thresholds: np.ndarray
    region_labels: np.ndarray
    predicted: np.ndarray
    bandwidth: np.ndarray
    grid_lo: np.ndarray
    grid_hi: np.ndarray


@njit(cache=True)
def _first_at_least(xs: np.ndarray, x: float, stop: int) -> int:
    """First index i < stop with xs[i] >= x (stop if none); xs ascending. Like searchsorted left."""
    a = 0
    b = stop
    while a < b:
        mid = (a + b) // 2
        if xs[mid] < x:
            a = mid + 1
        else:
            b = mid
    return a


@njit(cache=True)
def _first_above(xs: np.ndarray, x: float, stop: int) -> int:
    """First index i < stop with xs[i] > x (stop if none); xs ascending. Like searchsorted right."""
    a = 0
    b = stop
    while a < b:
        mid = (a + b) // 2
        if xs[mid] <= x:
            a = mid + 1
        else:
            b = mid
    return a


@njit(cache=True)
def block_sums(t: np.ndarray, r: np.ndarray, q: float, acc: np.ndarray, out: np.ndarray, chunks: int, nb: int) -> None:
    """out[k] = sum_i t_i * prod(r_i q^l, l<k) for k < nb: the recurrence walk over the scores.

    t, r: (C, LANES) scratch, overwritten; scores past the block's own are 0 in both (they add
    +0.0, which changes no sum). acc: (STEPS, LANES) scratch. out: (nb,). chunks: rows of t used.
    The summation order is explicit and fixed by the number of scores alone: score c * LANES + l
    goes to lane l, each lane adds its scores in increasing c, and the LANES lane sums of a grid
    point are added in a fixed halving tree. Every lane is an independent sum, so the innermost
    loop (over lanes) vectorises without reassociation, i.e. without `fastmath`: with `fastmath`
    the compiler chose the order itself, and code compiled afresh and the same code loaded from
    numba's cache summed differently (a run's thresholds moved in the last digit with the state of
    the cache). STEPS grid points are walked per pass over the scores, so each score's t and r
    are loaded and stored once per STEPS grid points instead of once per grid point.
    """
    k0 = 0
    while k0 < nb:
        acc[:, :] = 0.0
        steps = min(STEPS, nb - k0)
        if steps == STEPS:
            for c in range(chunks):
                for lane in range(LANES):
                    tv = t[c, lane]
                    rv = r[c, lane]
                    acc[0, lane] += tv
                    tv *= rv
                    rv *= q
                    acc[1, lane] += tv
                    tv *= rv
                    rv *= q
                    acc[2, lane] += tv
                    tv *= rv
                    rv *= q
                    acc[3, lane] += tv
                    tv *= rv
                    rv *= q
                    acc[4, lane] += tv
                    tv *= rv
                    rv *= q
                    acc[5, lane] += tv
                    tv *= rv
                    rv *= q
                    acc[6, lane] += tv
                    tv *= rv
                    rv *= q
                    acc[7, lane] += tv
                    tv *= rv
                    rv *= q
                    t[c, lane] = tv
                    r[c, lane] = rv
        else:
            # the same operations per lane, one grid point per pass: the same bits
            for c in range(chunks):
                for j in range(steps):
                    for lane in range(LANES):
                        acc[j, lane] += t[c, lane]
                        t[c, lane] *= r[c, lane]
                        r[c, lane] *= q
        for j in range(steps):
            width = LANES
            while width > 1:
                width //= 2
                for lane in range(width):
                    acc[j, lane] += acc[j, lane + width]
            out[k0 + j] = acc[j, 0]
        k0 += steps


@njit(cache=True)
def _exact_log_sum(xs: np.ndarray, g: float, h: float) -> float:
    """log sum_i exp(-((g - x_i) / h)^2 / 2) for sorted xs, walking out from the nearest score."""
    n = xs.shape[0]
    k = _first_at_least(xs, g, n)
    best = k if k < n else n - 1
    if k > 0 and (k == n or g - xs[k - 1] < xs[k] - g):
        best = k - 1
    u0 = (g - xs[best]) / h
    e0 = 0.5 * u0 * u0
    total = 1.0
    for i in range(best + 1, n):  # terms shrink monotonically away from the nearest score
        u = (g - xs[i]) / h
        d = 0.5 * u * u - e0
        if d > 60.0:
            break
        total += math.exp(-d)
    for i in range(best - 1, -1, -1):
        u = (g - xs[i]) / h
        d = 0.5 * u * u - e0
        if d > 60.0:
            break
        total += math.exp(-d)
    return math.log(total) - e0


@njit(cache=True)
def _class_log_density(xs: np.ndarray, h: float, lo: float, step: float, grid: np.ndarray, out: np.ndarray) -> None:
    """out[j] = log KDE density of sorted xs (n,) at grid[j] (m,), normalised like scipy."""
    n = xs.shape[0]
    m = grid.shape[0]
    s = step / h
    nb_max = int(min(float(_MAX_BLOCK), max(1.0, (_MAX_U - _CUTOFF) / s))) if s > 0 else _MAX_BLOCK
    q = math.exp(-s * s)
    rows = (n + LANES - 1) // LANES
    t = np.zeros((rows, LANES))  # (rows, LANES): score i of a block at [i // LANES, i % LANES]
    r = np.zeros((rows, LANES))
    t_flat = t.reshape(-1)  # views: the block's scores are written flat, summed by lane
    r_flat = r.reshape(-1)
    acc = np.empty((STEPS, LANES))
    sums = np.empty(nb_max)
    lin = np.zeros(m)
    j0 = 0
    while j0 < m:
        nb = min(nb_max, m - j0)
        first = grid[j0]
        last = grid[j0 + nb - 1]
        a = _first_at_least(xs, first - _CUTOFF * h, n)
        b = _first_above(xs, last + _CUTOFF * h, n)
        count = b - a
        if count > 0:
            for i in range(count):
                u0 = (first - xs[a + i]) / h
                t_flat[i] = math.exp(-0.5 * u0 * u0)
                r_flat[i] = math.exp(-u0 * s - 0.5 * s * s) if nb > 1 else 0.0
            chunks = (count + LANES - 1) // LANES
            for i in range(count, chunks * LANES):
                t_flat[i] = 0.0
                r_flat[i] = 0.0
            block_sums(t, r, q, acc, sums, chunks, nb)
            for k in range(nb):
                lin[j0 + k] = sums[k]
        j0 += nb
    norm = math.log(n) + math.log(h) + _LOG_SQRT_2PI
    for j in range(m):
        if lin[j] >= _EXACT_BELOW:
            out[j] = math.log(lin[j]) - norm
        else:
            out[j] = _exact_log_sum(xs, grid[j], h) - norm


@njit(cache=True)
def _fit_one(
    values: np.ndarray,
    classes: np.ndarray,
    n_classes: int,
    grid_points: int,
    priors_empirical: bool,
    min_class_size: int,
    min_bandwidth: float,
    thresholds: np.ndarray,
    region_labels: np.ndarray,
    predicted: np.ndarray,
    bandwidth: np.ndarray,
    lo_hi: np.ndarray,
) -> tuple[int, int, int]:
    """Fit one group in place; returns (status, detail, n_thresholds). Shapes as in KdeFit rows."""
    n = values.shape[0]
    max_t = thresholds.shape[0]
    if grid_points < 2:
        return BAD_GRID, -1, 0
    if n_classes < 1:
        return (BAD_CLASS_ID, classes[0], 0) if n > 0 else (SMALL_CLASS, -1, 0)
    counts = np.zeros(n_classes, np.int64)
    for i in range(n):
        if not np.isfinite(values[i]):
            return NONFINITE, -1, 0
        c = classes[i]
        if c < 0 or c >= n_classes:
            return BAD_CLASS_ID, c, 0
        counts[c] += 1
    for c in range(n_classes):
        if counts[c] < min_class_size or counts[c] < 2:
            return SMALL_CLASS, c, 0
    lo = values.min()
    hi = values.max()
    lo_hi[0] = lo
    lo_hi[1] = hi
    if lo == hi:
        return CONSTANT, -1, 0
    # np.linspace's arithmetic, so grid points equal the reference's bit for bit.
    step = (hi - lo) / (grid_points - 1)
    if not math.isfinite(step):
        return OVERFLOW, -1, 0
    grid = np.empty(grid_points)
    for j in range(grid_points):
        grid[j] = j * step + lo
    grid[grid_points - 1] = hi
    logd = np.empty((n_classes, grid_points))
    for c in range(n_classes):
        xs = np.empty(counts[c])
        k = 0
        for i in range(n):
            if classes[i] == c:
                xs[k] = values[i]
                k += 1
        xs.sort()  # order-free result: sums over sorted scores do not depend on input order
        mean = xs.sum() / counts[c]
        ss = 0.0
        for i in range(counts[c]):
            d = xs[i] - mean
            ss += d * d
        std = math.sqrt(ss / (counts[c] - 1))
        h = 1.06 * counts[c] ** (-0.2) * std
        if h < min_bandwidth:
            h = min_bandwidth
        if not math.isfinite(h):  # squared deviations overflowed: no density, not a silent all-one-class fit
            return OVERFLOW, c, 0
        if not h > 0.0:
            return CLASS_CONSTANT, c, 0
        bandwidth[c] = h
        _class_log_density(xs, h, lo, step, grid, logd[c])
        if priors_empirical:
            prior = math.log(counts[c] / n)
            for j in range(grid_points):
                logd[c, j] += prior
    labels = np.empty(grid_points, np.int64)
    for j in range(grid_points):
        best = 0
        for c in range(1, n_classes):
            if logd[c, j] > logd[best, j]:
                best = c
        labels[j] = best
    n_t = 0
    region_labels[0] = labels[0]
    for j in range(grid_points - 1):
        a = labels[j]
        b = labels[j + 1]
        if a == b:
            continue
        if n_t == max_t:
            return TOO_MANY_CROSSINGS, -1, 0
        d0 = logd[a, j] - logd[b, j]
        d1 = logd[a, j + 1] - logd[b, j + 1]
        frac = d0 / (d0 - d1) if d0 != d1 else 0.0
        thresholds[n_t] = grid[j] + (grid[j + 1] - grid[j]) * frac
        n_t += 1
        region_labels[n_t] = b
    for i in range(n):
        # side="right": a score exactly on a threshold goes to the upper region
        predicted[i] = region_labels[_first_above(thresholds, values[i], n_t)]
    return OK, -1, n_t


@njit(cache=True, parallel=True)
def _fit_many(
    values: np.ndarray,
    group_offsets: np.ndarray,
    class_ids: np.ndarray,
    group_classes: np.ndarray,
    grid_points: int,
    priors_empirical: bool,
    min_class_size: int,
    min_bandwidth: float,
    status: np.ndarray,
    detail: np.ndarray,
    n_thr: np.ndarray,
    thresholds: np.ndarray,
    region_labels: np.ndarray,
    predicted: np.ndarray,
    bandwidth: np.ndarray,
    lo_hi: np.ndarray,
) -> None:
    """Fill the preallocated outputs (shapes as in KdeFit); nothing but the prange loop here,
    since every array expression in a parallel function costs numba compile time."""
    for g in prange(group_offsets.shape[0] - 1):
        start = group_offsets[g]
        end = group_offsets[g + 1]
        st, de, nt = _fit_one(
            values[start:end],
            class_ids[start:end],
            group_classes[g],
            grid_points,
            priors_empirical,
            min_class_size,
            min_bandwidth,
            thresholds[g],
            region_labels[g],
            predicted[start:end],
            bandwidth[g],
            lo_hi[g],
        )
        status[g] = st
        detail[g] = de
        n_thr[g] = nt


def fit_thresholds(
    values: np.ndarray,
    group_offsets: np.ndarray,
    class_ids: np.ndarray,
    group_classes: np.ndarray | int,
    grid_points: int = 1024,
    priors_empirical: bool = False,
    min_class_size: int = 2,
    max_thresholds: int = 255,
    min_bandwidth: float = 1e-6,
) -> KdeFit:
    """Fit KDE thresholds for G groups packed in flat arrays, in one parallel call.

    values: (N,) float64 scores; group g owns values[group_offsets[g]:group_offsets[g + 1]].
    group_offsets: (G + 1,) int64, non-decreasing, starting at 0 and ending at N.
    class_ids: (N,) int64, the class of each score, in [0, group_classes[g]).
    group_classes: (G,) int64 number of classes per group, or one int for all groups.
    min_bandwidth: floor of every class's bandwidth (0: a constant class is not fitted).
    Degenerate groups never raise: they get a status code (module constants) and no fit.
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    group_offsets = np.ascontiguousarray(group_offsets, dtype=np.int64)
    class_ids = np.ascontiguousarray(class_ids, dtype=np.int64)
    n_groups = group_offsets.shape[0] - 1
    if np.isscalar(group_classes):
        group_classes = np.full(n_groups, int(group_classes), np.int64)
    group_classes = np.ascontiguousarray(group_classes, dtype=np.int64)
    if values.shape != class_ids.shape or values.ndim != 1:
        raise ValueError(f"values {values.shape} and class_ids {class_ids.shape} must be equal 1-d shapes")
    if n_groups < 0 or group_offsets[0] != 0 or group_offsets[-1] != values.shape[0] or np.any(np.diff(group_offsets) < 0):
        raise ValueError("group_offsets must rise from 0 to len(values)")
    if group_classes.shape != (n_groups,):
        raise ValueError(f"group_classes must have shape ({n_groups},), got {group_classes.shape}")
    if max_thresholds < 1:
        raise ValueError(f"max_thresholds must be >= 1, got {max_thresholds}")
    if not (min_bandwidth >= 0.0 and math.isfinite(min_bandwidth)):
        raise ValueError(f"min_bandwidth must be a finite number >= 0, got {min_bandwidth}")
    n_values = values.shape[0]
    status = np.zeros(n_groups, np.int64)
    detail = np.full(n_groups, -1, np.int64)
    n_thr = np.zeros(n_groups, np.int64)
    thresholds = np.full((n_groups, max_thresholds), np.nan)
    region_labels = np.full((n_groups, max_thresholds + 1), -1, np.int64)
    predicted = np.full(n_values, -1, np.int64)
    bandwidth = np.full((n_groups, max(1, int(group_classes.max(initial=1)))), np.nan)
    lo_hi = np.full((n_groups, 2), np.nan)
    _fit_many(
        values, group_offsets, class_ids, group_classes, int(grid_points), bool(priors_empirical),
        int(min_class_size), float(min_bandwidth), status, detail, n_thr, thresholds, region_labels, predicted, bandwidth, lo_hi,
    )
    # a group that failed half-way may have written partial results: clear them
    failed = status != OK
    thresholds[failed] = np.nan
    region_labels[failed] = -1
    n_thr[failed] = 0
    predicted[np.repeat(failed, np.diff(group_offsets))] = -1
    return KdeFit(status, detail, n_thr, thresholds, region_labels, predicted, bandwidth, lo_hi[:, 0], lo_hi[:, 1])
