"""The report's figures: matplotlib (Agg backend), one function per figure kind.

Colours are Okabe-Ito (distinguishable with the common colour-vision deficiencies); heatmaps
use cividis (sequential) and PuOr (diverging), both colour-blind safe. Each function writes
one image file and closes its figure, so memory stays flat however many figures a run needs.
"""
from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import TwoSlopeNorm  # noqa: E402

from engine.records import LABELS  # noqa: E402
from engine.report.score_settings import ConfigKey, language_name, regions_out_of_order
from engine.report.sweep import LayerCurve  # noqa: E402
from engine.report.tables import ALL_GENERATORS, AccuracyTable, StripRow

logger = logging.getLogger(__name__)
LABEL_COLOURS = {"incorrect": "#D55E00", "partial": "#E69F00", "correct": "#009E73", "unlabelled": "#8C8C8C"}
# Region tints of the strip plots (colour, alpha): hues apart from each other (vermillion, yellow,
# bluish green), so the partial and incorrect regions are told apart even when pale.
REGION_TINTS = {"incorrect": ("#D55E00", 0.16), "partial": ("#F0E442", 0.35), "correct": ("#009E73", 0.14)}
NOISE_COLOURS = {"none": "#0072B2", "uniform": "#E69F00", "targeted": "#CC79A7"}
NOISE_NAMES = {"none": "real prediction", "uniform": "uniform noise", "targeted": "targeted noise"}
DPI = 100
BEST_COLOUR = "#D55E00"  # the best layer's star; the frame of a panel whose regions are out of order
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


def text_overlaps(fig: plt.Figure, min_px: float = 1.0, drawn: bool = False) -> list[tuple[str, str]]:
    """Pairs of visible texts of `fig` drawn over each other (tick labels, titles, cell values),
    from their extents in the rendered figure; pairs overlapping by at most `min_px` pixels in
    width or height (touching line boxes) do not count. `drawn`: the canvas holds a current draw."""
    if not drawn:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip() and t.figure is fig]
    boxes = np.array([t.get_window_extent(renderer).extents for t in texts]).reshape(-1, 4)  # x0, y0, x1, y1
    drawn = np.isfinite(boxes).all(axis=1)  # a text at a non-finite position is not drawn
    texts, boxes = [t for t, d in zip(texts, drawn) if d], boxes[drawn]
    if len(texts) < 2:
        return []
    w = np.minimum(boxes[:, None, 2], boxes[None, :, 2]) - np.maximum(boxes[:, None, 0], boxes[None, :, 0])
    h = np.minimum(boxes[:, None, 3], boxes[None, :, 3]) - np.maximum(boxes[:, None, 1], boxes[None, :, 1])
    hit = np.triu((w > min_px) & (h > min_px), k=1)
    return [(texts[i].get_text(), texts[j].get_text()) for i, j in zip(*np.nonzero(hit))]


def text_cut_off(fig: plt.Figure, min_px: float = 1.0, drawn: bool = False) -> list[str]:
    """Visible texts of `fig` reaching past the figure's edges (cut off in the image).
    `drawn`: the canvas holds a current draw."""
    if not drawn:
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    out = []
    for t in fig.findobj(matplotlib.text.Text):
        if t.get_visible() and t.get_text().strip() and t.figure is fig:
            x0, y0, x1, y1 = t.get_window_extent(renderer).extents
            if all(map(math.isfinite, (x0, y0, x1, y1))) and (x0 < -min_px or y0 < -min_px or x1 > width + min_px or y1 > height + min_px):
                out.append(t.get_text())
    return out


def _save(fig: plt.Figure, path: Path) -> None:
    # Drawing is most of a report's time, so a figure is drawn once at the image's resolution:
    # the layout checks measure that draw and a PNG is written from its pixels (what savefig
    # would draw again, byte for byte); an SVG is drawn by its own backend.
    fig.set_dpi(DPI)
    fig.canvas.draw()
    # layout bugs to fix in the figure's function (tests look for these warnings); the figure is still written
    overlaps = text_overlaps(fig, drawn=True)
    if overlaps:
        logger.warning("figure %s: %d text(s) drawn over others, e.g. %r over %r", path.name, len(overlaps), *overlaps[0])
    cut = text_cut_off(fig, drawn=True)
    if cut:
        logger.warning("figure %s: %d text(s) cut off at its edges, e.g. %r", path.name, len(cut), cut[0])
    if path.suffix == ".png":
        matplotlib.image.imsave(path, np.asarray(fig.canvas.buffer_rgba()), format="png", origin="upper", dpi=DPI,
                                metadata={"Software": None})
    else:
        fig.savefig(path, dpi=DPI, format=path.suffix.lstrip("."))
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
    flagged = False
    for r, row in enumerate(rows):
        for c, panel in enumerate(row.panels):
            ax = axes[r, c]
            edges = [0.0, *panel.thresholds, 1.0]
            for region, label in enumerate(panel.region_labels):
                if region + 1 < len(edges):
                    colour, alpha = REGION_TINTS.get(label, ("#cccccc", 0.2))
                    ax.axvspan(max(edges[region], -0.02), min(edges[region + 1], 1.02), color=colour, alpha=alpha, lw=0)
            if regions_out_of_order(panel.region_labels):
                flagged = True
                for side in ax.spines.values():
                    side.set_visible(True)
                    side.set_color(BEST_COLOUR)
                    side.set_linewidth(1.6)
                ax.text(0.5, 0.97, "regions out of label order", transform=ax.transAxes, ha="center", va="top",
                        fontsize=7, color=BEST_COLOUR, fontweight="bold",
                        bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1))
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
    handles, names = [], []
    if labelled:
        handles += [plt.Line2D([], [], ls="", marker="o", color=LABEL_COLOURS[label]) for label in reversed(LABELS)]
        names += [f"expert: {label}" for label in reversed(LABELS)]
    if any(p.region_labels for r in rows for p in r.panels):
        handles += [plt.Rectangle((0, 0), 1, 1, color=REGION_TINTS[label][0], alpha=min(1.0, 2 * REGION_TINTS[label][1]))
                    for label in reversed(LABELS)]
        names += [f"region: {label}" for label in reversed(LABELS)]
    if flagged:
        handles.append(plt.Rectangle((0, 0), 1, 1, fill=False, edgecolor=BEST_COLOUR, lw=1.6))
        names.append("regions out of label order")
    if handles:
        fig.legend(handles, names, loc="upper right", ncol=len(handles) if len(handles) <= 4 else math.ceil(len(handles) / 2),
                   fontsize=7.5, handletextpad=0.3, columnspacing=1.0)
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
            # The end ticks sit on the panel's edges: aligned inwards, neighbouring panels' labels
            # ("0.992" | "0.388") cannot run together.
            tick_labels = ax.get_xticklabels()
            tick_labels[0].set_horizontalalignment("left")
            tick_labels[-1].set_horizontalalignment("right")
            if r == 0:
                ax.set_title(language_name(language))
            if c == 0:
                ax.set_ylabel(key.context or "no context", fontsize=8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=NOISE_COLOURS[k], alpha=0.6) for k in NOISE_COLOURS]
    fig.legend(handles, [NOISE_NAMES[k] for k in NOISE_COLOURS], loc="upper right", ncol=3, fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="bold")
    h = fig.get_figheight()
    fig.supxlabel("score", fontsize=9, y=0.08 / h)
    fig.subplots_adjust(left=0.04, right=0.99, top=1 - 0.55 / h, bottom=0.5 / h, wspace=0.12, hspace=0.4)
    _save(fig, path)


# ----- heatmaps ------------------------------------------------------------------------------
def _text_size(text: str, size: float, bold: bool = False) -> tuple[float, float]:
    """(width, height) in inches of `text` (several lines allowed) drawn at `size` points."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    renderer = _text_size.renderer = getattr(_text_size, "renderer", None) or RendererAgg(10, 10, DPI)
    font = FontProperties(size=size, weight="bold" if bold else "normal")
    lines = str(text).split("\n") or [""]
    widths = [renderer.get_text_width_height_descent(line or " ", font, ismath=False)[0] for line in lines]
    return max(widths) / DPI, len(lines) * size * 1.25 / 72


def _wrap(text: str, width: float, size: float, bold: bool = False) -> str:
    """`text` broken at spaces and hyphens (then anywhere) into lines at most `width` inches wide."""
    import textwrap

    if _text_size(text, size, bold)[0] <= width:
        return text
    for chars in range(max(len(text), 1), 0, -1):
        wrapped = "\n".join(textwrap.wrap(text, chars, break_on_hyphens=True))
        if _text_size(wrapped, size, bold)[0] <= width:
            return wrapped
    return text


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
    """Panels sharing rows, every cell annotated, laid out from measured label sizes so that no
    label runs into another: column labels stand upright when wider than a cell, panel titles
    wrap to their panel, and panels that do not fit side by side go on further rows.

    nan_text: per panel, an object array of the text for NaN cells (e.g. 'n/f' for a setting
    that was not fitted, '' for one that does not exist); default 'n/f'.
    """
    tick, value_size = 9.0, 7.5
    n_rows, n_cols = max(len(row_labels), 1), max(len(col_labels), 1)
    columns = [language_name(c) for c in col_labels]
    row_w = max((_text_size(s, tick)[0] for s in row_labels), default=0.5)
    cell_w = max(0.46, _text_size("+0.00", value_size)[0] + 0.12)
    col_w, col_h = max(_text_size(c, tick) for c in columns) if columns else (0.0, 0.0)
    upright = col_w > cell_w - 0.06
    if upright:  # rotated labels are as thick as their lines are tall: the cell must hold them
        cell_w = max(cell_w, col_h + 0.06)
    label_h = (col_w if upright else col_h) + 0.12
    cell_h = 0.3
    panel_w, panel_h = cell_w * n_cols, cell_h * n_rows
    gap, left, right = 0.15, row_w + 0.2, 1.1  # right: the colour bar and its label
    per_row = max(1, min(len(panels), int((WIDTH - left - right + gap) // (panel_w + gap))))
    titles = [_wrap(t, panel_w, 10.0, bold=True) for t, _ in panels]
    title_h = max((_text_size(t, 10.0, bold=True)[1] for t in titles if t), default=0.0) + 0.08
    n_panel_rows = math.ceil(len(panels) / per_row)
    top = 0.45  # the figure's title
    block_h = title_h + panel_h + label_h + 0.15
    width = left + per_row * panel_w + (per_row - 1) * gap + right
    height = top + n_panel_rows * block_h + 0.1
    fig = plt.figure(figsize=(width, height))
    if diverging:
        bound = max(0.05, float(np.nanmax(np.abs(np.concatenate([m.ravel() for _, m in panels])))) if any(np.isfinite(m).any() for _, m in panels) else 1.0)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-bound, vmax=bound)
        cmap = plt.get_cmap("PuOr")
    else:
        norm = plt.Normalize(vmin=vmin, vmax=vmax)
        cmap = plt.get_cmap("cividis")
    image = None
    for p, (_, values) in enumerate(panels):
        r, c = divmod(p, per_row)
        x0 = left + c * (panel_w + gap)
        y0 = height - top - r * block_h - title_h - panel_h  # bottom of the panel, inches from the bottom
        ax = fig.add_axes((x0 / width, y0 / height, panel_w / width, panel_h / height))
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
                    ax.text(j, i, text, ha="center", va="center", fontsize=value_size, color="#111111" if light else "white")
                else:
                    text = "n/f" if nan_text is None else str(nan_text[p][i, j])
                    if text:
                        ax.text(j, i, text, ha="center", va="center", fontsize=7, color="#888888")
        ax.set_xticks(range(len(columns)), columns, rotation=90 if upright else 0, ha="center", va="top", fontsize=tick)
        ax.set_yticks(range(len(row_labels)), row_labels if c == 0 else [""] * len(row_labels), fontsize=tick)
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        if titles[p]:
            ax.set_title(titles[p], fontsize=10, fontweight="bold", pad=4)
        if not np.isfinite(values).any() and not (nan_text is not None and any(str(t) for t in np.ravel(nan_text[p]))):
            # a blank grey panel would read as a drawing fault: say that it has no value
            ax.text((values.shape[1] - 1) / 2, (values.shape[0] - 1) / 2, "no value in this panel", ha="center",
                    va="center", fontsize=8, color="#555555")
    if image is not None:
        bar_top = height - top - title_h
        bar_h = min(max(panel_h, 1.2), bar_top - 0.3)
        cax = fig.add_axes(((width - right + 0.2) / width, (bar_top - bar_h) / height, 0.12 / width, bar_h / height))
        fig.colorbar(image, cax=cax).set_label(colorbar_label)
    fig.suptitle(title, x=0.01, y=1 - 0.08 / height, ha="left", va="top", fontsize=11, fontweight="bold")
    _save(fig, path)


# ----- expert accuracy ---------------------------------------------------------------------------
# Text on each label's bar colour with a contrast ratio of at least 4.5 (white on the orange and
# green is lower than that, the near-black reads on all three).
LABEL_TEXT_COLOURS = {"incorrect": "#111111", "partial": "#111111", "correct": "#111111"}
MIN_LABELLED_SHARE = 8.0  # % of the bar: a narrower segment has no room for its number


def segment_labels(segments: Sequence[tuple[str, float]]) -> list[tuple[float, str, str]]:
    """(x centre, text, label) for each segment of a stacked bar wide enough to hold its number.

    Each number is the share of the segment it sits in, centred in it: never a share printed on
    another class's colour (a "0%" correct share on a bar that is all incorrect reads as the
    bar's value)."""
    out, left = [], 0.0
    for label, share in segments:
        if share >= MIN_LABELLED_SHARE:
            out.append((left + share / 2, f"{share:.0f}%", label))
        left += share
    return out


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
        segments = [(label, float(np.nan_to_num(table.share(lang, gen, label)))) for label in reversed(LABELS)]
        for x, text, label in segment_labels(segments):
            ax.text(x, yy, text, va="center", ha="center", fontsize=7, color=LABEL_TEXT_COLOURS.get(label, "white"))
    ax.set_yticks(ys, names, fontsize=7.5)
    ax.set_ylim(y - 0.4, -0.6)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of labelled predictions")
    ax.tick_params(axis="y", length=0)
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11, fontweight="bold")
    h = fig.get_figheight()
    label_width = 0.25 + max((_text_size(n, 7.5)[0] for n in names), default=0.5)  # measured: long names are never cut off
    fig.subplots_adjust(left=label_width / WIDTH, right=0.98, top=1 - 0.6 / h, bottom=0.5 / h)
    _save(fig, path)


# ----- layer sweeps ------------------------------------------------------------------------------


def layer_figure(path: Path, title: str, curves: Sequence[LayerCurve]) -> None:
    """Kappa against layer: one panel per (context, language), rows = contexts.

    Each panel: kappa per layer with its bootstrap interval (band), the best layer as a star with
    its interval as an error bar and named in the panel's title, the representative (shipped
    default) layer as a dotted line.
    """
    contexts = list(dict.fromkeys(c.context for c in curves))
    languages = list(dict.fromkeys(c.language for c in curves))
    by = {(c.context, c.language): c for c in curves}
    n_rows, n_cols = len(contexts), len(languages)
    panel_w = min(2.6, (WIDTH - 0.6) / max(n_cols, 1))
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(0.6 + panel_w * n_cols, 0.7 + 2.0 * n_rows), squeeze=False,
                             sharex=True, sharey=True)
    for r, context in enumerate(contexts):
        for c, language in enumerate(languages):
            ax = axes[r, c]
            curve = by.get((context, language))
            name = f"{language_name(language)} · {context or 'no context'}"
            if curve is None:
                ax.set_title(name, fontsize=8)
                ax.text(0.5, 0.5, "not scored", transform=ax.transAxes, ha="center", va="center", color="#999999", fontsize=8)
                continue
            x = np.array(curve.layers)
            k, lo, hi = (np.array(v, dtype=float) for v in (curve.kappa, curve.lo, curve.hi))
            ax.fill_between(x, lo, hi, color="#0072B2", alpha=0.15, lw=0, step=None)
            ax.plot(x, k, color="#0072B2", marker="o", ms=3, lw=1.2)
            if curve.default is not None and curve.default in curve.layers:
                ax.axvline(curve.default, color="#555555", ls=":", lw=1)
            best = curve.best
            if best is None:
                ax.set_title(name + "\nno layer fitted", fontsize=8)
                continue
            b = curve.layers[best]
            kb, lb, hb = k[best], lo[best], hi[best]
            err = [[kb - lb], [hb - kb]] if math.isfinite(lb) and math.isfinite(hb) else None
            ax.errorbar([b], [kb], yerr=err, color=BEST_COLOUR, marker="*", ms=11, capsize=3, lw=1.4, zorder=5)
            interval = f" [{lb:.2f}, {hb:.2f}]" if err is not None else ""
            tied = curve.tied
            head = (f"no single best layer: {', '.join(map(str, tied))} share" if len(tied) > 1 else f"best layer {b}:")
            ax.set_title(f"{name}\n{head} κ {kb:.2f}{interval}", fontsize=7.5)
    for ax in axes[-1]:
        ax.set_xlabel("layer", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("kappa", fontsize=8)
    ax = axes[0, 0]
    layers = sorted({k for c in curves for k in c.layers})
    step = max(1, math.ceil(len(layers) / 8))
    ax.set_xticks(layers[::step])
    handles = [plt.Line2D([], [], color="#0072B2", marker="o", ms=3), plt.Rectangle((0, 0), 1, 1, color="#0072B2", alpha=0.15),
               plt.Line2D([], [], color=BEST_COLOUR, marker="*", ms=9, ls=""), plt.Line2D([], [], color="#555555", ls=":")]
    fig.set_figheight(fig.get_figheight() + 0.25)
    h, w = fig.get_figheight(), fig.get_figwidth()
    # Title on the first line, the legend on its own line under it: side by side they ran into
    # each other on figures of few languages.
    fig.suptitle(title, x=0.01, y=1 - 0.06 / h, ha="left", va="top", fontsize=11, fontweight="bold")
    fig.legend(handles, ["kappa (variant F)", "bootstrap interval", "best F layer (its interval)", "shipped default layer"],
               loc="upper left", bbox_to_anchor=(0.0, 1 - 0.3 / h), ncol=4, fontsize=7.5)
    fig.subplots_adjust(left=0.55 / w, right=1 - 0.1 / w, top=1 - 1.0 / h, bottom=0.45 / h, wspace=0.12, hspace=0.55)
    _save(fig, path)
