"""The HTML report: built from a run directory written here with pyarrow alone.

The fixture run is complete (labels, noise, three contexts, calibration with fitted and
not-fitted rows); its calibration rows are computed in the test with scikit-learn, not with
babelscore's code, and the report's tables are checked against them cell by cell.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from engine.stages.plan import layout_of_run, reopen_run
from engine.taxonomy import accumulate
from tests.support.report_run import LANGUAGES, STUDY_NUMBERS, build_run_dir, check_kappa_cells, parse


@pytest.fixture(scope="module")
def full_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from engine.report.build import write_report

    run = build_run_dir(tmp_path_factory.mktemp("report") / "run")
    return run, write_report(reopen_run(run))


def test_report_writes_page_and_valid_images(full_report: tuple[Path, str]) -> None:
    run, index = full_report
    assert Path(index) == run / "report" / "index.html"
    text = Path(index).read_text(encoding="utf-8")
    images = parse(text, "data-never").images
    assert len(images) >= 10
    for img in images:
        assert "://" not in img["src"] and not img["src"].startswith("/")  # beside the page, no network
        with Image.open(run / "report" / img["src"]) as im:
            im.verify()
    assert "Missing from this report" not in text
    assert not list(run.glob(".report-*"))
    for anchor in ("errors", "scores", "noise", "agreement", "context", "confusion", "noise-f1", "experts", "run"):
        assert f'<section id="{anchor}">' in text
    assert "http://" not in text and "https://" not in text
    assert "metric:bartscore|ctx:minimal" in text  # signatures of the score rows
    assert "metric:bleu|scorer:none|ctx:n/a|version:0.1.0" in text  # the manifest's
    assert "3f1c0ffee0dd" in text and pa.__version__ in text  # config hash, versions


def test_kappa_and_f1_cells_equal_calibration(full_report: tuple[Path, str]) -> None:
    run, index = full_report
    text = Path(index).read_text(encoding="utf-8")
    assert check_kappa_cells(text, run / "calibration.parquet") == 22 * 5
    f1_cells = parse(text, "data-f1").cells
    expected = {(r["metric"], r["scorer"], r["variant"], r["context"], r["language"], r["task"], r["generator"]): r
                for r in pq.read_table(run / "calibration.parquet").to_pylist() if r["task"].startswith("noise-")}
    assert len(f1_cells) == len(expected) and any(r["generator"] for r in expected.values())
    for cell in f1_cells:
        row = expected[(cell["data-metric"], cell["data-scorer"], cell["data-variant"], cell["data-context"], cell["data-language"],
                        cell["data-task"], cell.get("data-generator"))]
        assert (float(cell["data-f1"]) == row["f1"]) if row["fitted"] and row["f1"] is not None else cell["data-f1"] == ""


def test_expert_accuracy_and_error_codes_match_samples(full_report: tuple[Path, str]) -> None:
    run, index = full_report
    text = Path(index).read_text(encoding="utf-8")
    samples = pq.read_table(run / "samples" / "part-00000.parquet").to_pylist()
    for cell in parse(text, "data-correct").cells:
        rows = [s for s in samples if s["language"] == cell["data-language"] and cell["data-generator"] in (s["generator"], "all generators")]
        assert int(cell["data-n"]) == len(rows)
        assert float(cell["data-correct"]) == pytest.approx(100 * sum(s["label"] == "correct" for s in rows) / len(rows))
    code_cells = parse(text, "data-code").cells
    assert {"SE", "SE-HA", "SE-HA3", "LG-GR", "ST-IF2"} <= {c["data-code"] for c in code_cells}  # parents, SE-OI as ST-IF2
    labelled = {lang: sum(1 for s in samples if s["language"] == lang and s["label"]) for lang in LANGUAGES}
    for cell in code_cells:
        code, lang = cell["data-code"], cell["data-language"]

        def count(language: str, code: str = code) -> int:  # samples whose codes include `code` or a child of it
            return sum(1 for s in samples if s["language"] == language and code in accumulate(s["error_codes"] or []))

        assert re.search(rf'data-code="{re.escape(code)}" data-language="{lang}">{count(lang)}<', text)
        ratio = float(cell["data-ratio"])
        if count("en"):
            assert ratio == pytest.approx((count(lang) / labelled[lang]) / (count("en") / labelled["en"]))
        else:
            assert math.isnan(ratio)


def test_each_study_result_is_named_with_its_number(full_report: tuple[Path, str]) -> None:
    _, index = full_report
    headings = re.findall(r"<h2>(.*?)</h2>", Path(index).read_text(encoding="utf-8"))
    for number in STUDY_NUMBERS:
        assert any(h.startswith(number + " — ") for h in headings), (number, headings)


def test_run_without_labels_or_noise_says_what_is_missing(tmp_path: Path) -> None:
    from engine.report.build import write_report

    run = build_run_dir(tmp_path / "run", labelled=False, noise=False, calibrate=False, n_files=2)
    text = Path(write_report(reopen_run(run))).read_text(encoding="utf-8")
    assert "Missing from this report" in text
    assert "agreement needs expert labels" in text
    assert "real vs noise distributions need noise scores: the run has no score rows for noise predictions" in text
    assert "expert accuracy table and error-code counts need expert labels" in text
    assert "data-kappa" not in text
    headings = re.findall(r"<h2>(.*?)</h2>", text)
    assert all(any(h.startswith(number + " — ") for h in headings) for number in STUDY_NUMBERS)  # named even when missing
    notice = text[text.index("Missing from this report"):text.index("</aside>", text.index("Missing from this report"))]
    for number in ("Table 1", "Table 2", "Fig. 3", "Fig. 6", "Figs. 7/8", "Fig. 11", "Fig. 12"):
        assert number + " — " in notice, number
    images = parse(text, "data-never").images
    assert images, "strip plots are still drawn without labels"
    for img in images:
        with Image.open(run / "report" / img["src"]) as im:
            im.verify()


def test_labels_without_calibration_explain_the_stage(tmp_path: Path) -> None:
    from engine.report.build import write_report

    run = build_run_dir(tmp_path / "run", calibrate=False, noise=False, n_files=1)
    text = Path(write_report(reopen_run(run))).read_text(encoding="utf-8")
    assert "stages do not include <code>calibrate</code>" in text
    assert '<section id="experts">' in text and "data-correct" in text  # labels alone are enough here


def test_failed_build_keeps_previous_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.report import build

    run = build_run_dir(tmp_path / "run", noise=False, n_files=2, report={"image_format": "svg", "max_strip_points": 40})
    first = Path(build.write_report(reopen_run(run))).read_text(encoding="utf-8")
    assert ".svg" in first and "Showing a random 40 of" in first

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("disk full")

    monkeypatch.setattr(build, "SECTION_BUILDERS", [broken])  # fails after the temp folder exists
    with pytest.raises(RuntimeError, match="disk full"):
        build.write_report(reopen_run(run))
    assert (run / "report" / "index.html").read_text(encoding="utf-8") == first
    assert not list(run.glob(".report-*"))


def test_status_shown_complete_when_only_the_report_is_left() -> None:
    from engine.io.manifest import Manifest
    from engine.report.tables import display_status

    config = {"stages": ["score", "calibrate", "report"]}
    layout = layout_of_run(config["stages"])
    finishing = {"status": "running", "config": config, "counts": {"score_rows": 10}, "stages": {"calibrate": {"done": True}}}
    assert display_status(Manifest(finishing), layout) == "complete"
    assert display_status(Manifest({**finishing, "stages": {}}), layout) == "running"  # calibration still to come
    assert display_status(Manifest({**finishing, "counts": {}}), layout) == "running"  # parts still being scored
    assert display_status(Manifest({**finishing, "failed_parts": {"score/x/00000": {}}}), layout) == "running"
    assert display_status(Manifest({**finishing, "status": "failed"}), layout) == "failed"
