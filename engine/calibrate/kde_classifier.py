"""KDE threshold classifier over many groups: packs groups into flat arrays, calls the kernel once.

The numerics live in `kernels.kde` (numba); this module turns its per-group status codes into
readable "not fitted" reasons and hands back per-group thresholds and reclassified labels.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PackedGroups:
    """G groups of scores in flat arrays (the kernel's input layout).

    values: (N,) float64; class_ids: (N,) int64 indices into the group's `class_names`;
    offsets: (G + 1,) int64, group g owns rows offsets[g]:offsets[g + 1];
    class_names: G tuples, the ordered class names of each group.
    """

    values: np.ndarray
    class_ids: np.ndarray
    offsets: np.ndarray
    class_names: Sequence[tuple[str, ...]]


@dataclass(frozen=True)
class GroupFit:
    """The classifier of one group. Arrays are views into the kernel's output; do not modify.

    thresholds: (T,) ascending; region_labels: (T + 1,) class indices; true, predicted: (n,)
    class indices of the group's scores (predicted is -1 when not fitted).
    """

    fitted: bool
    reason: str | None
    thresholds: np.ndarray
    region_labels: np.ndarray
    true: np.ndarray
    predicted: np.ndarray
    bandwidth: np.ndarray


def _reason(status: int, detail: int, names: tuple[str, ...], counts: np.ndarray, lo: float,
            min_class_size: int, max_thresholds: int) -> str:
    from kernels import kde

    name = names[detail] if 0 <= detail < len(names) else str(detail)
    if status == kde.SMALL_CLASS:
        need = max(min_class_size, 2)
        return f"class {name!r} has {int(counts[detail])} score(s); at least {need} needed for a KDE"
    if status == kde.CONSTANT:
        return f"all scores are equal ({lo!r}): no score range to put a grid on"
    if status == kde.CLASS_CONSTANT:
        return f"all scores of class {name!r} are equal: KDE bandwidth would be 0 (set min_bandwidth > 0)"
    if status == kde.NONFINITE:
        return "a score is NaN or infinite"
    if status == kde.TOO_MANY_CROSSINGS:
        return f"more than {max_thresholds} density crossings"
    if status == kde.BAD_CLASS_ID:
        return f"class id {detail} outside the group's {len(names)} classes"
    if status == kde.BAD_GRID:
        return "grid_points must be at least 2"
    if status == kde.OVERFLOW:
        return "scores too large for a KDE (their spread or bandwidth overflows a float; rescale them)"
    return f"kernel status {status}"


def fit_packed(
    packed: PackedGroups,
    grid_points: int = 1024,
    priors: str = "equal",
    min_class_size: int = 2,
    max_thresholds: int = 255,
    min_bandwidth: float = 1e-6,
) -> list[GroupFit]:
    """Fit every group of `packed` in one parallel kernel call; one GroupFit per group.

    min_bandwidth floors every class's bandwidth, so a class whose scores are all equal still
    forms a (narrow) density peak; 0 leaves such a group not fitted.
    """
    from kernels.kde import OK, fit_thresholds

    n_groups = len(packed.class_names)
    if n_groups == 0:
        return []
    group_classes = np.array([len(names) for names in packed.class_names], np.int64)
    fit = fit_thresholds(
        packed.values, packed.offsets, packed.class_ids, group_classes, grid_points,
        priors == "empirical", min_class_size, max_thresholds, min_bandwidth,
    )
    results = []
    for g in range(n_groups):
        start, end = packed.offsets[g], packed.offsets[g + 1]
        true = packed.class_ids[start:end]
        names = packed.class_names[g]
        status = int(fit.status[g])
        if status == OK:
            nt = int(fit.n_thresholds[g])
            results.append(GroupFit(True, None, fit.thresholds[g, :nt], fit.region_labels[g, : nt + 1],
                                    true, fit.predicted[start:end], fit.bandwidth[g, : len(names)]))
        else:
            counts = np.bincount(true[(true >= 0) & (true < len(names))], minlength=len(names))
            reason = _reason(status, int(fit.status_detail[g]), names, counts, float(fit.grid_lo[g]),
                             min_class_size, max_thresholds)
            results.append(GroupFit(False, reason, np.zeros(0), np.zeros(0, np.int64), true,
                                    fit.predicted[start:end], fit.bandwidth[g, : len(names)]))
    n_bad = sum(not r.fitted for r in results)
    if n_bad:
        # Per score setting, so DEBUG: the run lists the reasons once, grouped, under its kappa table.
        logger.debug("KDE classifier: %d of %d groups not fitted", n_bad, n_groups)
    return results
