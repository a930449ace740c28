"""Slow, obvious reference versions of the kernels: test oracles."""


# --- greedy matching / pooling (BERTScore-style embedding metrics) ---------------------------
# Plain Python over nested lists, in float64: one pair at a time, no batching, no masking tricks.


def greedy_match_reference(
    cand: list[list[float]],
    cand_match: list[bool],
    cand_weight: list[float],
    ref: list[list[float]],
    ref_match: list[bool],
    ref_weight: list[float],
) -> tuple[float, float]:
    """P and R of one pair as defined in kernels/matching.py (vectors are normalised here)."""
    import math

    def unit(v: list[float]) -> list[float]:
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v] if n > 0 else [0.0 for _ in v]

    c = [unit(v) for v, m in zip(cand, cand_match) if m]
    cw = [w for w, m in zip(cand_weight, cand_match) if m]
    r = [unit(v) for v, m in zip(ref, ref_match) if m]
    rw = [w for w, m in zip(ref_weight, ref_match) if m]
    if not c or not r:
        return 0.0, 0.0
    sim = [[sum(a * b for a, b in zip(ci, rj)) for rj in r] for ci in c]

    def mean(best: list[float], weights: list[float]) -> float:
        total = sum(weights)
        return sum(b * w for b, w in zip(best, weights)) / total if total > 0 else 0.0

    p = mean([max(row) for row in sim], cw)
    rec = mean([max(sim[i][j] for i in range(len(c))) for j in range(len(r))], rw)
    return p, rec


def f_score_reference(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r != 0 else 0.0


def masked_mean_reference(emb: list[list[float]], mask: list[bool]) -> list[float]:
    rows = [v for v, m in zip(emb, mask) if m]
    if not rows:
        return [0.0] * len(emb[0]) if emb else []
    return [sum(col) / len(rows) for col in zip(*rows)]


def pooled_cosine_reference(a: list[float], b: list[float]) -> float:
    import math

    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


# --- KDE (calibration threshold classifier) --------------------------------------------------
# scipy.stats.gaussian_kde per class, evaluated with logpdf on the pooled-range grid: the
# oracle of kernels/kde.py (same definition, see its docstring). A class whose Silverman
# bandwidth falls below `min_bandwidth` (gaussian_kde cannot even be built when all its scores
# are equal) is evaluated directly at the floor, in log space: log-sum-exp of scipy's normal
# log densities.


def kde_thresholds_reference(
    values_by_class: list, grid_points: int = 1024, priors: str = "equal", min_bandwidth: float = 1e-6
) -> tuple:
    """(thresholds (T,) ascending, region_labels (T + 1,) class indices) for one group."""
    import numpy as np
    from scipy.special import logsumexp
    from scipy.stats import gaussian_kde, norm

    pooled = np.concatenate([np.asarray(v, dtype=np.float64) for v in values_by_class])
    grid = np.linspace(pooled.min(), pooled.max(), grid_points)
    rows = []
    for v in values_by_class:
        x = np.asarray(v, dtype=np.float64)
        n = len(x)
        factor = 1.06 * n ** (-1 / 5)
        if factor * np.std(x, ddof=1) >= min_bandwidth and np.std(x) > 0:
            log_density = gaussian_kde(x, bw_method=factor).logpdf(grid)
        else:
            kernels = norm.logpdf(grid[:, None], loc=x[None, :], scale=min_bandwidth)  # (grid_points, n)
            log_density = logsumexp(kernels, axis=1) - np.log(n)
        if priors == "empirical":
            log_density = log_density + np.log(n / len(pooled))
        rows.append(log_density)
    logd = np.vstack(rows)  # (C, grid_points)
    labels = np.argmax(logd, axis=0)
    thresholds = []
    region_labels = [int(labels[0])]
    for j in np.nonzero(labels[1:] != labels[:-1])[0]:
        a, b = labels[j], labels[j + 1]
        d0 = logd[a, j] - logd[b, j]
        d1 = logd[a, j + 1] - logd[b, j + 1]
        frac = d0 / (d0 - d1) if d0 != d1 else 0.0
        thresholds.append(grid[j] + (grid[j + 1] - grid[j]) * frac)
        region_labels.append(int(b))
    return np.array(thresholds, dtype=np.float64), np.array(region_labels, dtype=np.int64)
