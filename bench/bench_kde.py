"""Benchmark: KDE thresholds for many groups, numba kernel vs the scipy-based reference.

Fits G groups of N scores (C classes) with kernels.kde.fit_thresholds (one parallel call) and
with kernels.reference.kde_thresholds_reference (scipy.stats.gaussian_kde.logpdf, one group at
a time), prints both times and the ratio, and checks that the thresholds agree within one grid
step. For transparency it also times the cheapest possible scipy variant (gaussian_kde
evaluate() on the grid only, no log densities, no thresholds): a lower bound for any
scipy-based implementation.

    python bench/bench_kde.py [--groups 1000] [--n 2500] [--classes 3] [--grid 1024]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernels.kde import OK, fit_thresholds  # noqa: E402
from kernels.reference import kde_thresholds_reference  # noqa: E402


def make_groups(n_groups: int, n: int, n_classes: int, seed: int):
    """Scores that look like metric scores: per group, shifted and scaled class distributions."""
    rng = np.random.default_rng(seed)
    values, classes = [], []
    for _ in range(n_groups):
        c = rng.integers(0, n_classes, n)
        shift = rng.uniform(0.3, 1.0)
        v = rng.normal(c * shift, rng.uniform(0.5, 1.5) * (1 + 0.2 * c))
        values.append(v)
        classes.append(c)
    return values, classes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--n", type=int, default=2500)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--grid", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-evaluate-only", action="store_true", help="skip the scipy evaluate()-only timing")
    args = ap.parse_args()

    values, classes = make_groups(args.groups, args.n, args.classes, args.seed)
    flat_v = np.concatenate(values)
    flat_c = np.concatenate(classes).astype(np.int64)
    offsets = np.arange(args.groups + 1, dtype=np.int64) * args.n

    t = time.perf_counter()
    fit_thresholds(flat_v[: 2 * args.n], offsets[:3], flat_c[: 2 * args.n], args.classes, args.grid)
    warm = time.perf_counter() - t
    ours, ours_cpu = [], []
    for _ in range(3):
        t, cpu0 = time.perf_counter(), time.process_time()
        fit = fit_thresholds(flat_v, offsets, flat_c, args.classes, args.grid)
        ours.append(time.perf_counter() - t)
        ours_cpu.append(time.process_time() - cpu0)
    ours_s = min(ours)

    t, cpu0 = time.perf_counter(), time.process_time()
    ref = [kde_thresholds_reference([v[c == k] for k in range(args.classes)], args.grid)
           for v, c in zip(values, classes)]
    ref_s = time.perf_counter() - t
    ref_cpu = time.process_time() - cpu0

    worst_steps, mismatched = 0.0, 0
    for g, (ref_t, ref_l) in enumerate(ref):
        nt = fit.n_thresholds[g]
        if fit.status[g] != OK or nt != len(ref_t) or not np.array_equal(fit.region_labels[g, : nt + 1], ref_l):
            mismatched += 1
            continue
        step = (values[g].max() - values[g].min()) / (args.grid - 1)
        if nt:
            worst_steps = max(worst_steps, float(np.abs(fit.thresholds[g, :nt] - ref_t).max() / step))

    import numba

    print(f"groups {args.groups} x {args.n} scores, {args.classes} classes, grid {args.grid}, "
          f"{os.cpu_count()} CPUs, numba threads {numba.get_num_threads()}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    print(f"ours (numba, one parallel call)      {ours_s:9.3f} s   (best of 3; first call incl. compile/cache load {warm:.2f} s)")
    print(f"reference (scipy gaussian_kde.logpdf) {ref_s:9.3f} s")
    print(f"ratio reference / ours               {ref_s / ours_s:9.1f}x")
    # On a shared machine wall time mostly measures the other processes (and a parallel call
    # loses more of it than a serial one): the CPU seconds each side used compare the work.
    print(f"ratio by CPU seconds                 {ref_cpu / min(ours_cpu):9.1f}x   "
          f"(reference {ref_cpu:.3f} s, ours {min(ours_cpu):.3f} s over all threads)")
    print(f"agreement: {args.groups - mismatched}/{args.groups} groups with identical regions; "
          f"max threshold difference {worst_steps:.2e} grid steps")
    if not args.skip_evaluate_only:
        from scipy.stats import gaussian_kde

        t = time.perf_counter()
        for v, c in zip(values, classes):
            grid = np.linspace(v.min(), v.max(), args.grid)
            for k in range(args.classes):
                x = v[c == k]
                gaussian_kde(x, bw_method=1.06 * len(x) ** (-1 / 5))(grid)
        ev_s = time.perf_counter() - t
        print(f"scipy evaluate() only, lower bound  {ev_s:9.3f} s   ratio {ev_s / ours_s:.1f}x")


if __name__ == "__main__":
    main()
