"""The report in a real browser: headless Chromium opens index.html from disk.

Checks that every image loads (the page's inline script marks broken ones after `load`),
that the page is not blank, and that the kappa table equals calibration.parquet. Debian's
`chromium` package is installed by the Makefile's test set-up; without it the test skips.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from test_report import STUDY_NUMBERS, build_run_dir, check_kappa_cells, parse

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (the Makefile's test set-up installs Debian's `chromium`)")


def _chromium(page: Path, screenshot: Path, profile: Path) -> str:
    """Screenshot the page and return its DOM after scripts ran (one browser start)."""
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        f"--user-data-dir={profile}", f"--screenshot={screenshot}", "--window-size=1280,2000", "--dump-dom",
        page.resolve().as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"chromium failed ({result.returncode}): {result.stderr[-2000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    from engine.report.build import write_report

    tmp = tmp_path_factory.mktemp("browser")
    run = build_run_dir(tmp / "run", n_files=3)
    index = Path(write_report(str(run)))
    screenshot = tmp / "screenshot.png"
    dom = _chromium(index, screenshot, tmp / "profile")
    return run, dom, screenshot


def test_every_image_loads(browser_page: tuple[Path, str, Path]) -> None:
    run, dom, _ = browser_page
    body = parse(dom, "data-images-ok").cells
    assert body, "the page's load script did not run: no data-images-ok on <body>"
    assert body[0]["data-images-ok"] == "true"
    images = parse(dom, "data-never").images
    assert len(images) == int(body[0]["data-images"]) >= 8
    assert not [img["src"] for img in images if "data-broken" in img]
    for img in images:  # and the files themselves are whole images
        with Image.open(run / "report" / img["src"]) as im:
            im.load()
            assert im.width > 100 and im.height > 100


def test_page_is_not_blank(browser_page: tuple[Path, str, Path]) -> None:
    _, _, screenshot = browser_page
    with Image.open(screenshot) as im:
        assert im.size == (1280, 2000)
        colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is None or len(colours) > 50, "the screenshot is (nearly) one colour"


def test_kappa_table_equals_calibration_parquet(browser_page: tuple[Path, str, Path]) -> None:
    run, dom, _ = browser_page
    assert check_kappa_cells(dom, run / "calibration.parquet") > 0


def test_each_study_result_is_a_numbered_heading(browser_page: tuple[Path, str, Path]) -> None:
    _, dom, _ = browser_page
    headings = re.findall(r"<h2>(.*?)</h2>", dom)
    for number in STUDY_NUMBERS:
        assert any(h.startswith(number + " — ") for h in headings), (number, headings)
