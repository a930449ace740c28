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
        "axes.titleweight": "bold",
        "legend.frameon": False,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
        "svg.fonttype": "none",  # SVG text stays text: smaller files, drawn in a fraction of the time
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
            if len(panel.x) == 0:
                ax.text(0.5, (len(strips) - 1) / 2, "no scores", ha="center", va="center", color="#999999", fontsize=8)
            for s, code in enumerate(strips):
                mask = panel.label == code
                if mask.any():
                    y = s + rng.uniform(-0.28, 0.28, int(mask.sum()))
                    ax.scatter(panel.x[mask], y, s=7, color=LABEL_COLOURS[_label_name(code)], alpha=0.7, lw=0, rasterized=True)
            if r == 0:
                ax.set_title(language_name(panel.language))
            if c == 0:
                ctx = row.key.context or "no context"
                ax.set_ylabel(f"{ctx}\n[{_fmt(row.lo)}, {_fmt(row.hi)}]", fontsize=8)
    ax = axes[0, 0]  # shared axes: limits and ticks set once hold for every panel
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.6, len(strips) - 0.4)
    ax.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])
    ax.set_yticks(range(len(strips)), [_label_name(code) for code in strips])
    for a in axes.ravel():
        a.tick_params(axis="y", length=0)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="bold")
    h = fig.get_figheight()
    fig.supxlabel("normalised score", fontsize=9, y=0.06 / h)
    if labelled:
        handles = [plt.Line2D([], [], ls="", marker="o", color=LABEL_COLOURS[label]) for label in reversed(LABELS)]
        fig.legend(handles, list(reversed(LABELS)), loc="upper right", ncol=3, fontsize=8, handletextpad=0.2)
    fig.subplots_adjust(left=0.11, right=0.99, top=1 - 0.62 / h, bottom=0.45 / h + 0.02, wspace=0.06, hspace=0.18)
    _save(fig, path)


def _fmt(value: float) -> str:
    return f"{value:.3g}"


# ----- noise distributions ----------------------------------------------------------------------
def noise_figure(path: Path, title: str, rows: Sequence[tuple[ConfigKey, dict[str, dict[str, np.ndarray]]]], languages: Sequence[str]) -> None:
    """Score distributions of real predictions and both noise kinds: rows = context, cols = language.

    Histograms share their bins within a row (one context), so panels of a row compare directly.
    """
    n_rows, n_cols = len(rows), len(languages)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(WIDTH, 0.75 + 1.35 * n_rows), squeeze=False, sharex="row")
    for r, (key, per_language) in enumerate(rows):
        finite = [v for lang in per_language.values() for v in lang.values() if len(v)]
        lo = min(float(v.min()) for v in finite) if finite else 0.0
        hi = max(float(v.max()) for v in finite) if finite else 1.0
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        bins = np.linspace(lo, hi, 31)
        ticks = [lo, (lo + hi) / 2, hi]
        for c, language in enumerate(languages):
            ax = axes[r, c]
            if not any(len(v) for v in per_language.get(language, {}).values()):
                ax.text(0.5, 0.5, "no scores", transform=ax.transAxes, ha="center", va="center", color="#999999", fontsize=8)
            for kind, values in per_language.get(language, {}).items():
                if len(values):
                    counts, _ = np.histogram(values, bins=bins)
                    density = counts / max(counts.sum(), 1)
                    colour = NOISE_COLOURS.get(kind, "#555555")
                    ax.stairs(density, bins, fill=True, alpha=0.22, color=colour)
                    ax.stairs(density, bins, lw=1.2, color=colour)
            ax.set_yticks([])
            ax.set_xticks(ticks, [_fmt(t) for t in ticks], fontsize=7)
            if r == 0:
                ax.set_title(language_name(language))
            if c == 0:
                ax.set_ylabel(key.context or "no context", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=NOISE_COLOURS[k], alpha=0.6) for k in NOISE_COLOURS]
    fig.legend(handles, [NOISE_NAMES[k] for k in NOISE_COLOURS], loc="upper right", ncol=3, fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="bold")
    h = fig.get_figheight()
    fig.supxlabel("score", fontsize=9, y=0.08 / h)
    fig.subplots_adjust(left=0.04, right=0.99, top=1 - 0.55 / h, bottom=0.5 / h, wspace=0.08, hspace=0.4)
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
    nan_text: Sequence[np.ndarray] | None = None,
) -> None:
    """Panels side by side sharing rows; every cell annotated.

    nan_text: per panel, an object array of the text for NaN cells (e.g. 'n/f' for a setting
    that was not fitted, '' for one that does not exist); default 'n/f'.
    """
    n_rows = max(len(row_labels), 1)
    label_width = min(3.6, 0.9 + 0.062 * max((len(s) for s in row_labels), default=8))
    panel_width = max(2.2, 0.62 * len(col_labels))
    width = min(WIDTH, label_width + panel_width * len(panels) + 1.0)
    height = max(2.2, 1.25 + 0.3 * n_rows)  # a one-row heatmap still needs a readable colour bar
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
                    text = "n/f" if nan_text is None else str(nan_text[p][i, j])
                    if text:
                        ax.text(j, i, text, ha="center", va="center", fontsize=7, color="#888888")
        ax.set_xticks(range(len(col_labels)), [language_name(c) for c in col_labels], rotation=30, ha="right")
        ax.set_yticks(range(len(row_labels)), row_labels)
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        ax.set_title(panel_title)
    right = 1 - 1.0 / width  # room for the colour bar and its label
    top, bottom = 1 - 0.75 / height, 0.6 / height
    fig.subplots_adjust(left=label_width / width, right=right, top=top, bottom=bottom, wspace=0.06)
    if image is not None:
        cax = fig.add_axes((right + 0.15 / width, bottom, 0.12 / width, top - bottom))
        fig.colorbar(image, cax=cax).set_label(colorbar_label)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="bold")
    _save(fig, path)


# ----- expert accuracy ---------------------------------------------------------------------------
def accuracy_figure(path: Path, title: str, table: AccuracyTable) -> None:
    """Stacked horizontal bars (correct / partial / incorrect share), grouped by language."""
    generators = [g for g in table.generators if g != ALL_GENERATORS]
    positions, names, y = [], [], 0.0
    for language in table.languages:
        for generator in generators:
            positions.append((language, generator, y))
            names.append(f"{language_name(language)} · {generator.rsplit('/', 1)[-1]}")
            y += 1
        y += 0.8  # gap between languages
    fig, ax = plt.subplots(figsize=(WIDTH, 0.9 + 0.19 * y))
    ys = np.array([p[2] for p in positions])
    left = np.zeros(len(positions))
    for label in reversed(LABELS):  # correct first, from the left
        shares = np.array([np.nan_to_num(table.share(lang, gen, label)) for lang, gen, _ in positions])
        ax.barh(ys, shares, left=left, color=LABEL_COLOURS[label], height=0.8, label=label, lw=0)
        left += shares
    for (lang, gen, yy) in positions:
        share = table.share(lang, gen)
        if math.isfinite(share):
            ax.text(1.0, yy, f"{share:.0f}%", va="center", ha="left", fontsize=7, color="white")
    ax.set_yticks(ys, names, fontsize=7.5)
    ax.set_ylim(y - 0.4, -0.6)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of labelled predictions")
    ax.tick_params(axis="y", length=0)
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="bold")
    h = fig.get_figheight()
    label_width = min(3.6, 0.4 + 0.058 * max((len(n) for n in names), default=8))
    fig.subplots_adjust(left=label_width / WIDTH, right=0.98, top=1 - 0.6 / h, bottom=0.5 / h)
    _save(fig, path)
