"""The report in a real browser: headless Chromium opens index.html from disk.

Checks that every image loads (the page's inline script marks broken ones after `load`),
that the page is not blank, and that the kappa table equals calibration.parquet. Debian's
`chromium` package is installed by the Makefile's test set-up; without it the test skips.
"""
from __future__ import annotations

import re
from pathlib import Path
from string import Template

import pytest
from PIL import Image

from tests.support.browser import CHROMIUM, answer_first_and_tables_fit, chromium_dom, layout_problems
from tests.support.report_run import STUDY_NUMBERS, build_run_dir, check_kappa_cells, parse

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (the Makefile's test set-up installs Debian's `chromium`)")


def overflow_page(root: Path) -> Path:
    """A page made to overflow (for the test of the layout check): a row of cells wider than its card, text
    drawn over other text, text clipped by its box, a row name squeezed over many lines by wide
    cells, and a wide table in a box meant to scroll (which is fine)."""
    from engine.report.page import PAGE

    body = (
        '<section id="wide"><h2>wide</h2><div style="width:300px" id="card"><div id="too-wide" style="display:flex">'
        + "".join(f"<span style='flex:none;width:60px'>cell-{i}</span>" for i in range(12)) + "</div></div></section>"
        '<section id="over"><h2>over</h2><div style="position:relative;height:40px">'
        '<span style="position:absolute;left:0;top:0">first label</span>'
        '<span style="position:absolute;left:10px;top:2px">second label</span></div></section>'
        '<section id="clip"><h2>clip</h2><div id="clipper" style="width:80px;overflow:hidden;white-space:nowrap">'
        "a sentence far longer than eighty pixels</div></section>"
        '<section id="squeeze"><h2>squeeze</h2><table><tr><th id="squeezed" style="width:40px">a b c d e f g h</th>'
        + "".join(f"<td style='white-space:nowrap'>a long value {i} that does not wrap</td>" for i in range(3)) + "</tr></table></section>"
        '<section id="fine"><h2>fine</h2><div class="scroll" style="width:300px"><table id="scrolls"><tr>'
        + "".join(f"<td>column-{i}</td>" for i in range(12)) + "</tr></table></div></section>"
    )
    values = dict(title="overflow", name="overflow", path=str(root), meta="", chips="", counted="", answer="", toc="", notice="", body=body, footer="")
    root.mkdir(parents=True, exist_ok=True)
    page = root / "index.html"
    page.write_text(Template(PAGE).substitute(values), encoding="utf-8")
    return page


def test_layout_check_finds_overflow_overlap_and_clipping(tmp_path: Path) -> None:
    """The test of the test: each planted fault is found, the box meant to scroll is not."""
    problems = layout_problems(overflow_page(tmp_path / "page"), 1000, tmp_path / "profile", tmp_path / "shot.png")
    kinds = {(p["kind"], p["what"].split(" ")[0]) for p in problems}
    assert ("overflow", "div#card") in kinds and ("outside", "span") in kinds, problems
    assert ("overflow", "div#clipper") in kinds, problems
    assert ("squeezed", "th#squeezed") in kinds, problems
    assert any(p["kind"] == "overlap" and "first label" in p["what"] + p["other"] for p in problems), problems
    assert not [p for p in problems if "#fine" in p["what"] or "scrolls" in p["what"]], problems


@pytest.mark.parametrize("width", [420, 1000, 1600])
def test_fixture_report_layout_holds(browser_page: tuple[Path, str, Path], width: int, tmp_path: Path) -> None:
    run, _, _ = browser_page
    answer_first_and_tables_fit(run / "report" / "index.html", width, tmp_path)


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    from engine.report.build import write_report
    from engine.stages.plan import reopen_run

    tmp = tmp_path_factory.mktemp("browser")
    run = build_run_dir(tmp / "run", n_files=3)
    index = Path(write_report(reopen_run(run)))
    screenshot = tmp / "screenshot.png"
    dom = chromium_dom(index, screenshot, tmp / "profile")
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


def test_stage_sections_hold_at_1000_px(tmp_path: Path) -> None:
    """A stage's own section (the round trip: a wide table outside a .scroll box, long signatures
    in a list) in the report page: it scrolls inside itself instead of widening the page."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.records import ROUNDTRIP_SCHEMA
    from engine.report.page import PAGE
    from engine.roundtrip.report import section_html
    from tests.support.roundtrip_rows import ROWS

    (tmp_path / "run" / "roundtrip").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(ROWS, schema=ROUNDTRIP_SCHEMA), tmp_path / "run" / "roundtrip" / "t__part-00000.parquet")
    signature = "metric:roundtrip-pass@1|" + "|".join(f"option-{i}:value-{i}" for i in range(40))
    body = f'<section id="roundtrip"><h2>Execution round trip</h2>{section_html(tmp_path / "run", {"rt": {"pass@1": signature}})}</section>'
    values = dict(title="t", name="t", path="p", meta="", chips="", counted="", answer="", toc="", notice="", body=body, footer="")
    (tmp_path / "report").mkdir()
    index = tmp_path / "report" / "index.html"
    index.write_text(Template(PAGE).substitute(values), encoding="utf-8")
    assert layout_problems(index, 1000, tmp_path / "profile", tmp_path / "shot.png") == []


def _sensitivity_page(root: Path) -> Path:
    """The perturbation section of a five-language run (8 families x 6 settings) in the report page."""
    import types

    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.io.manifest import Manifest
    from engine.perturb.families import FAMILIES
    from engine.perturb.report import sensitivity_section
    from engine.records import SENSITIVITY_SCHEMA
    from engine.report.page import PAGE

    settings = [("bleu", "", "score", ""), ("rougeL", "", "F", ""), ("meteor", "", "score", ""),
                ("bertscore", "pypi:all-MiniLM-L6-v2", "F", "none"), ("bertscore", "pypi:all-MiniLM-L6-v2", "F", "full"),
                ("bartscore", "demo:tiny-bart", "avg", "minimal")]
    rows = [dict(metric=m, scorer=sc, variant=v, context=c, language=lang, target="reference", family=f, codes=list(FAMILIES[f]),
                 n=11, n_skipped=1 if f == "negation" else 0, ds=0.123456 * (i + 1), ds_lo=0.1, ds_hi=0.99, share_dropped=1.0,
                 mean_original=1.0, mean_perturbed=0.5)
            for i, (m, sc, v, c) in enumerate(settings) for lang in ("en", "nl", "zh", "el", "pl") for f in FAMILIES]
    (root / "run").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SENSITIVITY_SCHEMA), root / "run" / "sensitivity.parquet")
    data = types.SimpleNamespace(root=root / "run", manifest=Manifest({"config": {"stages": ["perturb"]}}))
    figure_writer = types.SimpleNamespace(draw=lambda *args, **kwargs: "")  # the table is what is checked here
    body = sensitivity_section(data, figure_writer, lambda anchor, title, html, *rest: f'<section id="{anchor}"><h2>{title}</h2>{html}</section>')
    values = dict(title="t", name="t", path="p", meta="", chips="", counted="", answer="", toc="", notice="", body=body, footer="")
    (root / "report").mkdir()
    index = root / "report" / "index.html"
    index.write_text(Template(PAGE).substitute(values), encoding="utf-8")
    return index


def test_the_sensitivity_table_shows_ds_and_no_column_is_clipped(tmp_path: Path) -> None:
    """The sensitivity table shows dS as the number (dark text, not the share dropped, which reads
    1.00 in most cells), and no column is hidden: the whole table fits its box at 1000 and 1600 px
    (at 420 px it scrolls inside a box no taller than the window, its row names kept in view)."""
    index = _sensitivity_page(tmp_path)
    html = index.read_text(encoding="utf-8")
    cells = html[html.index('data-table="sensitivity"'):]
    assert ">0.123<small>[0.10, 0.99]<br>100% of 11</small>" in cells and "color:#fff" not in cells
    for width in (1000, 1600):
        tables: dict = {}
        assert layout_problems(index, width, tmp_path / "profile", tmp_path / f"shot-{width}.png", tables) == []
        box = tables["sensitivity"]
        assert box["scroll"] <= box["client"] + 1.5, (width, box)
    tables = {}
    assert layout_problems(index, 420, tmp_path / "profile", tmp_path / "shot-420.png", tables) == []
    assert tables["sensitivity"]["scroll"] > tables["sensitivity"]["client"]  # the test can fail: narrow, it must scroll


def test_williams_table_fits_at_1000_and_1600_px_in_the_reports_language_order(tmp_path: Path) -> None:
    """Williams' test table hid t, p and adjusted p at 1000 px: its setting names wrap and its
    column names break now, so every column is in view; languages in the study's order."""
    import types

    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.perturb.report import significance_section
    from engine.records import SIGNIFICANCE_SCHEMA
    from engine.report.page import PAGE

    settings = [("bertscore", "pypi:all-MiniLM-L6-v2", "layer-5/F", c) for c in ("none", "minimal", "full")]
    settings += [("bartscore", "demo:tiny-bart", "avg", "minimal"), ("rougeL", "", "F", "")]
    rows = [dict(kind="williams", language=lang, metric=x[0], scorer=x[1], variant=x[2], context=x[3], metric_y=y[0],
                 scorer_y=y[1], variant_y=y[2], context_y=y[3], n=55, r_xz=0.41, r_yz=0.32, r_xy=0.7, t=1.23456, p=0.1111,
                 p_adjusted=0.3333, direction="x>y", significant=False)
            for lang in ("zh", "de", "en", "nl") for x, y in zip(settings, settings[1:])]
    (tmp_path / "run").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=SIGNIFICANCE_SCHEMA), tmp_path / "run" / "significance.parquet")
    data = types.SimpleNamespace(root=tmp_path / "run")
    body = significance_section(data, lambda anchor, title, html, *rest: f'<section id="{anchor}"><h2>{title}</h2>{html}</section>')
    order = [m.group(1) for m in re.finditer(r'<tr data-significant="false"><td>([^<]+)</td>', body)]
    assert list(dict.fromkeys(order)) == ["English", "Dutch", "Chinese", "German"]  # study order, then the others
    values = dict(title="t", name="t", path="p", meta="", chips="", counted="", answer="", toc="", notice="", body=body, footer="")
    (tmp_path / "report").mkdir()
    index = tmp_path / "report" / "index.html"
    index.write_text(Template(PAGE).substitute(values), encoding="utf-8")
    for width in (1000, 1600):
        tables: dict = {}
        assert layout_problems(index, width, tmp_path / "profile", tmp_path / f"shot-{width}.png", tables) == []
        assert tables["williams"]["scroll"] <= tables["williams"]["client"] + 1.5, (width, tables["williams"])
    assert layout_problems(index, 420, tmp_path / "profile", tmp_path / "shot-420.png") == []
