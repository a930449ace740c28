"""Agreement between expert labels and reclassified labels: kappa, macro F1, confusion matrices.

Labels are class indices 0..C-1 in a fixed order (for the expert task incorrect < partial <
correct, `engine.records.LABELS`), so quadratic weights (i - j)^2 follow that order.

The point estimates reproduce scikit-learn's `cohen_kappa_score(weights="quadratic",
labels=range(C))` and `f1_score(average="macro")` operation by operation (same arrays, same
numpy reductions), so they are equal to the float; scikit-learn is only the test oracle. The
bootstrap works on stacks of confusion matrices, so B replicates cost a few array operations.
"""
from __future__ import annotations

import hashlib
import math
from typing import NamedTuple

import numpy as np

# Bootstrap index matrices are built in chunks of at most this many entries (memory bound).
_BOOTSTRAP_CHUNK = 4_000_000


def confusion_matrix(true: np.ndarray, pred: np.ndarray, n_classes: int) -> np.ndarray:
    """(C, C) int64 counts; rows: true (expert) class, columns: predicted class.

    true, pred: (n,) integer class indices in [0, C).
    """
    codes = np.asarray(true, dtype=np.int64) * n_classes + np.asarray(pred, dtype=np.int64)
    return np.bincount(codes, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def normalise_rows(confusion: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (recall view); rows summing to 0 are NaN. (C, C) float64."""
    sums = confusion.sum(axis=1, keepdims=True).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sums > 0, confusion / np.where(sums > 0, sums, 1.0), np.nan)


def normalise_columns(confusion: np.ndarray) -> np.ndarray:
    """Each column divided by its sum (precision view); empty columns are NaN. (C, C) float64."""
    return normalise_rows(confusion.T).T


def _quadratic_weights(n_classes: int) -> np.ndarray:
    w = np.zeros([n_classes, n_classes], dtype=np.float64)
    w += np.arange(n_classes)
    return (w - w.T) ** 2


def quadratic_kappa(confusion: np.ndarray) -> float:
    """Quadratically weighted Cohen's kappa of one (C, C) confusion matrix; NaN if undefined.

    Same operations as scikit-learn 1.9's cohen_kappa_score, so the result is identical.
    """
    confusion = confusion.astype(np.float64)
    sum0 = np.sum(confusion, axis=0)
    sum1 = np.sum(confusion, axis=1)
    total = np.sum(sum0)
    if total == 0:
        return math.nan
    expected = np.outer(sum0, sum1) / total
    w = _quadratic_weights(confusion.shape[0])
    denominator = np.sum(w * expected)
    if denominator == 0:
        return math.nan
    return float(1 - np.sum(w * confusion) / denominator)


def macro_f1(confusion: np.ndarray) -> float:
    """Macro-averaged F1 over all C classes of one (C, C) confusion matrix (0 where undefined).

    Same as scikit-learn's f1_score(average="macro") when every class occurs in the labels.
    """
    tp = np.diagonal(confusion)
    pred_sum = confusion.sum(axis=0)
    true_sum = confusion.sum(axis=1)
    denom = (1.0 * true_sum.astype(np.float64) + pred_sum.astype(np.float64))
    safe = np.where(denom == 0, 1.0, denom)
    f = np.where(denom == 0, 0.0, (2.0 * tp.astype(np.float64)) / safe)
    return float(np.mean(f))


def quadratic_kappa_many(confusions: np.ndarray) -> np.ndarray:
    """Kappa of each of B confusion matrices: (B, C, C) -> (B,) float64, NaN where undefined."""
    c = confusions.astype(np.float64)
    sum0 = c.sum(axis=1)  # (B, C) predicted totals
    sum1 = c.sum(axis=2)  # (B, C) true totals
    total = sum0.sum(axis=1)  # (B,)
    w = _quadratic_weights(c.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = sum0[:, :, None] * sum1[:, None, :] / total[:, None, None]  # (B, C, C)
        denominator = (w * expected).sum(axis=(1, 2))
        kappa = 1 - (w * c).sum(axis=(1, 2)) / denominator
    return np.where((total > 0) & (denominator != 0), kappa, np.nan)


def macro_f1_many(confusions: np.ndarray) -> np.ndarray:
    """Macro F1 of each of B confusion matrices: (B, C, C) -> (B,) float64."""
    tp = np.diagonal(confusions, axis1=1, axis2=2).astype(np.float64)  # (B, C)
    denom = confusions.sum(axis=2) + confusions.sum(axis=1)  # (B, C) true + predicted
    f = np.where(denom == 0, 0.0, 2.0 * tp / np.where(denom == 0, 1, denom))
    return f.mean(axis=1)


def derived_seed(seed: int, *parts: str) -> int:
    """A 64-bit seed from the run seed and a group's identity, stable across runs and platforms.

    Python's hash() is salted per process, so it would make the bootstrap non-reproducible.
    """
    text = "\x1f".join([str(seed), *parts]).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


class Interval(NamedTuple):
    kappa_lo: float
    kappa_hi: float
    f1_lo: float
    f1_hi: float


def bootstrap_intervals(
    true: np.ndarray,
    pred: np.ndarray,
    n_classes: int,
    replicates: int,
    confidence: float,
    seed: int,
) -> Interval:
    """Percentile bootstrap intervals for kappa and macro F1, resampling (true, pred) pairs.

    The thresholds stay fixed: the interval reflects sampling variability of the agreement given
    the fitted classifier, not the variability of the fit itself. NaN replicates (kappa
    undefined in a resample) are ignored; all NaN gives NaN bounds.
    true, pred: (n,) class indices.
    """
    n = len(true)
    if replicates <= 0 or n == 0:
        return Interval(math.nan, math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    codes = np.asarray(true, dtype=np.int64) * n_classes + np.asarray(pred, dtype=np.int64)
    cells = n_classes * n_classes
    per_chunk = max(1, _BOOTSTRAP_CHUNK // n)
    kappas = []
    f1s = []
    done = 0
    while done < replicates:
        b = min(per_chunk, replicates - done)
        idx = rng.integers(0, n, size=(b, n))  # (b, n) resampled rows
        flat = codes[idx] + (np.arange(b) * cells)[:, None]
        confusions = np.bincount(flat.ravel(), minlength=b * cells).reshape(b, n_classes, n_classes)
        kappas.append(quadratic_kappa_many(confusions))
        f1s.append(macro_f1_many(confusions))
        done += b
    alpha = (1.0 - confidence) / 2.0

    def bounds(samples: list[np.ndarray]) -> tuple[float, float]:
        x = np.concatenate(samples)
        x = x[~np.isnan(x)]
        if x.size == 0:
            return math.nan, math.nan
        lo, hi = np.quantile(x, [alpha, 1.0 - alpha])
        return float(lo), float(hi)

    k_lo, k_hi = bounds(kappas)
    f_lo, f_hi = bounds(f1s)
    return Interval(k_lo, k_hi, f_lo, f_hi)
