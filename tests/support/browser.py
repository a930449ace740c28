"""Headless Chromium (Debian's package) over report pages: the DOM after scripts ran, and the layout
problems tests/support/layout_check.js finds."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.support.report_run import parse

CHROMIUM = shutil.which("chromium")


def chromium_dom(page: Path, screenshot: Path, profile: Path, size: tuple[int, int] = (1280, 2000)) -> str:
    """Screenshot the page and return its DOM after scripts ran (one browser start)."""
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
        "--hide-scrollbars", f"--user-data-dir={profile}", f"--screenshot={screenshot}", f"--window-size={size[0]},{size[1]}",
        "--dump-dom", page.resolve().as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"chromium failed ({result.returncode}): {result.stderr[-2000:]}"
    return result.stdout


LAYOUT_CHECK = Path(__file__).with_name("layout_check.js")


def layout_problems(index: Path, width: int, profile: Path, screenshot: Path, tables: dict | None = None,
                    height: int = 1400) -> list[dict]:
    """The problems tests/support/layout_check.js finds in the page `index` opened `width` px wide.

    The check runs in a copy of the page beside it (same folder, so its images load), with the
    script added before </body>; the page itself is left as the report wrote it.
    """
    copy = index.with_name(f".layout-check-{width}.html")
    text = index.read_text(encoding="utf-8")
    script = "<script>" + LAYOUT_CHECK.read_text(encoding="utf-8") + "</script>"
    copy.write_text(text.replace("</body>", script + "</body>", 1), encoding="utf-8")
    try:
        dom = chromium_dom(copy, screenshot, profile, (width, height))
    finally:
        copy.unlink()
    [body] = parse(dom, "data-layout-checked").cells or [{}]
    assert "data-layout-error" not in body, body.get("data-layout-error")
    assert int(body.get("data-layout-checked", 0)) > 0, "the layout check did not run (no data-layout-checked on <body>)"
    if tables is not None:  # scroll and client widths of the boxes named with data-table
        tables.update(json.loads(body.get("data-layout-tables", "{}")))
    return json.loads(body["data-layout"])


def answer_first_and_tables_fit(index: Path, width: int, tmp_path: Path, must_fit: tuple[str, ...] = ()) -> None:
    """At `width` px (a phone-sized 900 px high window): no layout problem, the first answer line (the
    first language's best setting) on the first screen, and the tables named in `must_fit` show every
    column without scrolling at 1000 px and wider."""
    tables: dict = {}
    problems = layout_problems(index, width, tmp_path / "profile", tmp_path / f"shot-{width}.png", tables, height=900)
    assert problems == [], problems
    answer = tables["answer-block"]
    assert answer["first_line_bottom"] <= answer["window"], (width, answer)  # the first language's best is on screen
    for name in must_fit if width >= 1000 else ():
        box = tables[name]
        assert box["scroll"] <= box["client"] + 1.5, (width, name, box)
