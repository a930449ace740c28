"""The demo config end to end on a subset of the demo data: noise, every scorer kind,
calibration and the report, opened in headless Chromium."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from engine.config import config_from_mapping
from engine.records import SCORE_KEY
from engine.runner import execute_run
from tests.support.browser import CHROMIUM, chromium_dom, layout_problems
from tests.support.paths import REPO
from tests.support.report_run import STUDY_NUMBERS, check_kappa_cells, parse
from tests.support.samples import write_demo_subset

FILES_PER_LANGUAGE = 2


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import os

    from engine.demo import prepare_demo_models
    from engine.runtime import DEMO_MODELS_ENV

    tmp = tmp_path_factory.mktemp("demo")
    os.environ[DEMO_MODELS_ENV] = str(tmp / "models")
    prepare_demo_models(tmp / "models")
    write_demo_subset(tmp / "subset.jsonl", FILES_PER_LANGUAGE)
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    raw["input"] = str(tmp / "subset.jsonl")
    raw["part_size"] = 25
    raw["calibrate"]["bootstrap"] = 20
    config = config_from_mapping(raw, REPO / "configs")
    execute_run(config, str(tmp / "run"))
    return tmp / "run"


def test_demo_run_is_complete_and_exactly_once(demo_run: Path) -> None:
    manifest = json.loads((demo_run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["counts"]["rejected_rows"] == 0
    scores = pq.read_table(demo_run / "scores").to_pylist()
    keys = [tuple(r[k] for k in SCORE_KEY) for r in scores]
    assert len(keys) == len(set(keys)) == manifest["counts"]["score_rows"]
    assert {r["metric"] for r in scores} == {"bleu", "rougeL", "meteor", "bertscore", "bartscore"}
    assert {r["noise"] for r in scores if not r["noise"].startswith("perturb:")} == {"none", "uniform", "targeted"}
    perturbed = {r["noise"] for r in scores if r["noise"].startswith("perturb:")}
    assert "perturb:reference:original" in perturbed and "perturb:reference:negation" in perturbed
    sensitivity = pq.read_table(demo_run / "sensitivity.parquet").to_pylist()
    assert {r["metric"] for r in sensitivity} == {"bleu", "rougeL", "meteor", "bertscore", "bartscore"}
    significance = pq.read_table(demo_run / "significance.parquet").to_pylist()
    assert {(r["context"], r["context_y"]) for r in significance if r["kind"] == "williams" and r["metric"] == "bertscore"} \
        == {("full", "none"), ("minimal", "none")}
    assert {r["context"] for r in scores if r["metric"] == "bertscore"} == {"none", "minimal", "full"}
    calibration = pq.read_table(demo_run / "calibration.parquet").to_pylist()
    assert {r["task"] for r in calibration} == {"agreement", "noise-uniform", "noise-targeted"}
    assert any(r["fitted"] and r["kappa"] is not None for r in calibration if r["task"] == "agreement")
    # the study's groupings: agreement pooled over generators, noise per target LLM (and pooled)
    assert {r["group_by"] for r in calibration if r["task"] == "agreement"} == {"language"}
    noise = [r for r in calibration if r["task"].startswith("noise-")]
    assert {r["group_by"] for r in noise} == {"language", "language+generator"}
    per_generator = {r["generator"] for r in noise if r["group_by"] == "language+generator"}
    assert per_generator == {r["generator"] for r in scores} and None not in per_generator


def test_demo_report_names_each_study_result_with_its_number(demo_run: Path) -> None:
    text = (demo_run / "report" / "index.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h2>(.*?)</h2>", text)
    for number in STUDY_NUMBERS:
        assert any(h.startswith(number + " — ") for h in headings), (number, headings)
    f1_generators = {c.get("data-generator") for c in parse(text, "data-f1").cells}
    assert len(f1_generators - {None}) >= 2  # Fig. 12 has cells per target LLM


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (the Makefile's test set-up installs Debian's `chromium`)")
def test_demo_report_opens_in_a_browser_with_every_image_and_the_right_kappas(demo_run: Path, tmp_path: Path) -> None:
    index = demo_run / "report" / "index.html"
    assert index.exists()
    dom = chromium_dom(index, tmp_path / "shot.png", tmp_path / "profile")
    body = parse(dom, "data-images-ok").cells
    assert body and body[0]["data-images-ok"] == "true"
    images = parse(dom, "data-never").images
    assert images and not [img["src"] for img in images if "data-broken" in img]
    with Image.open(tmp_path / "shot.png") as im:
        colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is None or len(colours) > 50
    assert check_kappa_cells(dom, demo_run / "calibration.parquet") > 0


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (the Makefile's test set-up installs Debian's `chromium`)")
@pytest.mark.parametrize("width", [420, 1000, 1600])
def test_demo_report_layout_holds(demo_run: Path, width: int, tmp_path: Path) -> None:
    """No element overflows its box (boxes meant to scroll aside) and no text overlaps, in the page."""
    problems = layout_problems(demo_run / "report" / "index.html", width, tmp_path / "profile", tmp_path / "shot.png")
    assert problems == [], problems[:10]


def test_demo_report_figures_have_no_overlapping_text(demo_run: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The figures' own measure (engine.report.figures.text_overlaps) over every figure of the demo report."""
    import logging

    from engine.report.build import write_report
    from engine.stages.plan import reopen_run

    with caplog.at_level(logging.WARNING, logger="engine.report.figures"):
        write_report(reopen_run(demo_run))
    assert not [r.getMessage() for r in caplog.records if ("drawn over" in r.getMessage() or "cut off" in r.getMessage())]


def test_demo_header_counts_every_score_row_and_says_what_it_counts(demo_run: Path) -> None:
    """The header's score rows are the console's (manifest counts), split into the rows the score
    views read and the perturbation rows."""
    manifest = json.loads((demo_run / "manifest.json").read_text())
    noise = pq.read_table(demo_run / "scores", columns=["noise"]).column("noise").to_pylist()
    perturbed = sum(n.startswith("perturb:") for n in noise)
    assert perturbed > 0 and len(noise) == manifest["counts"]["score_rows"]
    text = (demo_run / "report" / "index.html").read_text(encoding="utf-8")
    assert f"<span>score rows</span><b>{len(noise):,}</b>" in text
    note = re.search(r'<p class="counted">(.*?)</p>', text).group(1)
    assert f"Of the {len(noise):,} score rows, {len(noise) - perturbed:,} score the real predictions" in note
    assert f"{perturbed:,} score perturbed texts" in note
