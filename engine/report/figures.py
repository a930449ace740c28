"""The report's figures: matplotlib (Agg backend), one function per figure kind.

Colours are Okabe-Ito (distinguishable with the common colour-vision deficiencies); heatmaps
use cividis (sequential) and PuOr (diverging), both colour-blind safe. Each function writes
one image file and closes its figure, so memory stays flat however many figures a run needs.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

from engine.records import LABELS  # noqa: E402
from engine.report.tables import (  # noqa: E402
    ALL_GENERATORS,
    AccuracyTable,
    ConfigKey,
    StripRow,
    language_name,
)

LABEL_COLOURS = {"incorrect": "#D55E00", "partial": "#E69F00", "correct": "#009E73", "unlabelled": "#8C8C8C"}
NOISE_COLOURS = {"none": "#0072B2", "uniform": "#E69F00", "targeted": "#CC79A7"}
NOISE_NAMES = {"none": "real prediction", "uniform": "uniform noise", "targeted": "targeted noise"}
DPI = 100
WIDTH = 11.0  # inches; the page's content column is ~1100 px wide

plt.rcParams.update(
    {
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.edgecolor": "#555555",
        "axes.titleweight": "semibold",
        "legend.frameon": False,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
    }
)


def _save(fig: plt.Figure, path: Path) -> None:
    fig.savefig(path, dpi=DPI, format=path.suffix.lstrip("."), metadata={"Software": None} if path.suffix == ".png" else None)
    plt.close(fig)


def _label_name(code: int) -> str:
    return LABELS[code] if code >= 0 else "unlabelled"


# ----- strip plots --------------------------------------------------------------------------
def strip_figure(path: Path, title: str, rows: Sequence[StripRow]) -> None:
    """One row of panels per context setting, one panel per language.

    In a panel each point is a real prediction: x its min-max normalised score, y its expert
    label (jittered); dashed lines are the KDE classifier's boundaries, the background tint
    the label of each region.
    """
    languages = [p.language for p in rows[0].panels]
    n_rows, n_cols = len(rows), len(languages)
    labelled = any((p.label >= 0).any() for r in rows for p in r.panels)
    strips = list(range(len(LABELS))) if labelled else []
    if not labelled or any((p.label < 0).any() for r in rows for p in r.panels):
        strips = [-1] + strips
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(WIDTH, 0.55 + (0.32 * len(strips) + 0.55) * n_rows), squeeze=False, sharex=True, sharey=True
    )
    rng = np.random.default_rng(0)
    for r, row in enumerate(rows):
        for c, panel in enumerate(row.panels):
            ax = axes[r, c]
            edges = [0.0, *panel.thresholds, 1.0]
            for region, label in enumerate(panel.region_labels):
                if region + 1 < len(edges):
                    ax.axvspan(max(edges[region], -0.02), min(edges[region + 1], 1.02), color=LABEL_COLOURS.get(label, "#cccccc"), alpha=0.10, lw=0)
            for t in panel.thresholds:
                ax.axvline(t, color="#333333", lw=0.8, ls="--")
            for s, code in enumerate(strips):
                mask = panel.label == code
                if mask.any():
                    y = s + rng.uniform(-0.28, 0.28, int(mask.sum()))
                    ax.scatter(panel.x[mask], y, s=7, color=LABEL_COLOURS[_label_name(code)], alpha=0.7, lw=0, rasterized=True)
            ax.set_xlim(-0.03, 1.03)
            ax.set_ylim(-0.6, len(strips) - 0.4)
            ax.set_yticks(range(len(strips)), [_label_name(code) for code in strips])
            ax.tick_params(axis="y", length=0)
            ax.grid(axis="x", color="#e6e6e6", lw=0.6)
            ax.set_axisbelow(True)
            if r == 0:
                ax.set_title(language_name(panel.language))
            if r == n_rows - 1:
                ax.set_xlabel("normalised score")
            if c == 0:
                ctx = row.key.context or "no context"
                ax.set_ylabel(f"{ctx}\n[{_fmt(row.lo)}, {_fmt(row.hi)}]", fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="semibold")
    fig.subplots_adjust(left=0.11, right=0.99, top=1 - 0.45 / fig.get_figheight(), bottom=0.45 / fig.get_figheight() + 0.02, wspace=0.06, hspace=0.18)
    _save(fig, path)


def _fmt(value: float) -> str:
    return f"{value:.3g}"


# ----- noise distributions ----------------------------------------------------------------------
def noise_figure(path: Path, title: str, rows: Sequence[tuple[ConfigKey, dict[str, dict[str, np.ndarray]]]], languages: Sequence[str]) -> None:
    """Score distributions of real predictions and both noise kinds: rows = context, cols = language."""
    n_rows, n_cols = len(rows), len(languages)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(WIDTH, 0.7 + 1.45 * n_rows), squeeze=False, sharey=False)
    for r, (key, per_language) in enumerate(rows):
        finite = [v for lang in per_language.values() for v in lang.values() if len(v)]
        lo = min(float(v.min()) for v in finite) if finite else 0.0
        hi = max(float(v.max()) for v in finite) if finite else 1.0
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        bins = np.linspace(lo, hi, 31)
        for c, language in enumerate(languages):
            ax = axes[r, c]
            for kind, values in per_language.get(language, {}).items():
                if len(values):
                    ax.hist(values, bins=bins, histtype="stepfilled", alpha=0.25, color=NOISE_COLOURS.get(kind, "#555555"))
                    ax.hist(values, bins=bins, histtype="step", lw=1.2, color=NOISE_COLOURS.get(kind, "#555555"), label=NOISE_NAMES.get(kind, kind))
            ax.set_yticks([])
            ax.tick_params(axis="x", labelsize=7)
            if r == 0:
                ax.set_title(language_name(language))
            if r == n_rows - 1:
                ax.set_xlabel("score")
            if c == 0:
                ax.set_ylabel(key.context or "no context", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=NOISE_COLOURS[k], alpha=0.6) for k in NOISE_COLOURS]
    fig.legend(handles, [NOISE_NAMES[k] for k in NOISE_COLOURS], loc="upper right", ncol=3, fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="semibold")
    h = fig.get_figheight()
    fig.subplots_adjust(left=0.05, right=0.99, top=1 - 0.5 / h, bottom=0.45 / h + 0.02, wspace=0.08, hspace=0.35)
    _save(fig, path)


# ----- heatmaps ------------------------------------------------------------------------------
def heatmap_figure(
    path: Path,
    title: str,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    panels: Sequence[tuple[str, np.ndarray]],
    colorbar_label: str,
    diverging: bool = False,
    vmin: float = 0.0,
    vmax: float = 1.0,
) -> None:
    """Panels side by side sharing rows; every cell annotated, NaN cells hatched ('n/f')."""
    n_rows = max(len(row_labels), 1)
    label_width = min(3.6, 0.9 + 0.062 * max((len(s) for s in row_labels), default=8))
    panel_width = max(2.2, 0.62 * len(col_labels))
    width = min(WIDTH, label_width + panel_width * len(panels) + 1.0)
    height = 1.0 + 0.3 * n_rows
    fig, axes = plt.subplots(1, len(panels), figsize=(width, height), squeeze=False, sharey=True)
    if diverging:
        bound = max(0.05, float(np.nanmax(np.abs(np.concatenate([m.ravel() for _, m in panels])))) if any(np.isfinite(m).any() for _, m in panels) else 1.0)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-bound, vmax=bound)
        cmap = plt.get_cmap("PuOr")
    else:
        norm = plt.Normalize(vmin=vmin, vmax=vmax)
        cmap = plt.get_cmap("cividis")
    image = None
    for p, (panel_title, values) in enumerate(panels):
        ax = axes[0, p]
        masked = np.ma.masked_invalid(values)
        ax.set_facecolor("#f2f2f2")
        image = ax.imshow(masked, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                v = values[i, j]
                if math.isfinite(v):
                    rgba = cmap(norm(v))
                    light = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] > 0.55
                    text = f"{v:+.2f}" if diverging else f"{v:.2f}"
                    ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color="#111111" if light else "white")
                else:
                    ax.text(j, i, "n/f", ha="center", va="center", fontsize=7, color="#888888")
        ax.set_xticks(range(len(col_labels)), [language_name(c) for c in col_labels], rotation=30, ha="right")
        ax.set_yticks(range(len(row_labels)), row_labels)
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.set_title(panel_title)
    if image is not None:
        bar = fig.colorbar(image, ax=axes[0, :].tolist(), fraction=0.04 if len(panels) > 1 else 0.06, pad=0.02)
        bar.set_label(colorbar_label)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="semibold")
    fig.subplots_adjust(left=label_width / width, right=0.88 if len(panels) > 1 else 0.86, top=1 - 0.6 / height, bottom=0.55 / height, wspace=0.06)
    _save(fig, path)


# ----- confusion matrices --------------------------------------------------------------------------
def confusion_figure(path: Path, title: str, entries: Sequence[tuple[str, list[str], list[list[float]], list[list[float]], list[list[int]]]]) -> None:
    """One row per entry (caption, classes, row-normalised, column-normalised, counts)."""
    n = len(entries)
    fig, axes = plt.subplots(n, 2, figsize=(7.2, 0.5 + 2.55 * n), squeeze=False)
    cmap = plt.get_cmap("cividis")
    for r, (caption, classes, row_norm, col_norm, counts) in enumerate(entries):
        for c, (name, values) in enumerate((("row-normalised (recall)", row_norm), ("column-normalised (precision)", col_norm))):
            ax = axes[r, c]
            m = np.array(values, dtype=np.float64)
            ax.imshow(np.ma.masked_invalid(m), cmap=cmap, vmin=0, vmax=1)
            for i in range(m.shape[0]):
                for j in range(m.shape[1]):
                    v = m[i, j]
                    text = f"{v:.2f}\n({counts[i][j]})" if math.isfinite(v) else f"–\n({counts[i][j]})"
                    ax.text(j, i, text, ha="center", va="center", fontsize=7.5, color="#111111" if math.isfinite(v) and v > 0.55 else "white")
            ax.set_xticks(range(len(classes)), classes, fontsize=8)
            ax.set_yticks(range(len(classes)), classes, fontsize=8)
            ax.set_xlabel("KDE classifier", fontsize=8)
            if c == 0:
                ax.set_ylabel("expert", fontsize=8)
            ax.set_title(f"{caption}\n{name}", fontsize=8.5)
            ax.tick_params(length=0)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="semibold")
    h = fig.get_figheight()
    fig.subplots_adjust(left=0.14, right=0.98, top=1 - 0.45 / h, bottom=0.35 / h, wspace=0.45, hspace=0.75)
    _save(fig, path)


# ----- expert accuracy ---------------------------------------------------------------------------
def accuracy_figure(path: Path, title: str, table: AccuracyTable) -> None:
    """Stacked horizontal bars: share of correct / partial / incorrect per language x generator."""
    generators = [g for g in table.generators if g != ALL_GENERATORS]
    n_lang = len(table.languages)
    fig, axes = plt.subplots(1, n_lang, figsize=(WIDTH, 0.9 + 0.28 * len(generators) + 0.3), squeeze=False, sharey=True)
    for c, language in enumerate(table.languages):
        ax = axes[0, c]
        left = np.zeros(len(generators))
        for label in reversed(LABELS):  # correct first, from the left
            shares = np.array([np.nan_to_num(table.share(language, g, label)) for g in generators])
            ax.barh(range(len(generators)), shares, left=left, color=LABEL_COLOURS[label], height=0.75, label=label)
            left += shares
        ax.set_xlim(0, 100)
        ax.set_title(language_name(language))
        ax.set_xlabel("% of labelled")
        ax.invert_yaxis() if c == 0 else None
        ax.set_yticks(range(len(generators)), generators)
        ax.tick_params(axis="y", length=0)
    handles = [plt.Rectangle((0, 0), 1, 1, color=LABEL_COLOURS[l]) for l in reversed(LABELS)]
    fig.legend(handles, list(reversed(LABELS)), loc="upper right", ncol=3, fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="semibold")
    h = fig.get_figheight()
    label_width = min(3.0, 0.5 + 0.065 * max((len(g) for g in generators), default=8))
    fig.subplots_adjust(left=label_width / WIDTH, right=0.99, top=1 - 0.55 / h, bottom=0.5 / h + 0.02, wspace=0.08)
    _save(fig, path)
