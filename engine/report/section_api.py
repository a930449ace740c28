"""What every report section builder receives, and what it returns.

A section builder is a function `(ReportContext) -> Section | list[Section]`; the page is the
list `engine.report.build.SECTION_BUILDERS` in order, so a new section is one function and one
list entry.
"""
from __future__ import annotations

import html
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.io.atomic import is_disk_full
from engine.report.load import RunData
from engine.report.score_settings import ConfigKey

logger = logging.getLogger(__name__)
esc = html.escape


@dataclass
class Section:
    anchor: str
    title: str
    body: str
    missing: str | None = None  # why (part of) the section could not be drawn


class FigureWriter:
    """Names figure files, draws them, and turns failures into a note instead of a crash."""

    def __init__(self, folder: Path, image_format: str):
        self.folder = folder
        self.ext = "svg" if image_format == "svg" else "png"
        self.count = 0
        self.failures: list[str] = []

    def draw(self, stem: str, alt: str, caption: str, fn: Callable[[Path], None]) -> str:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", stem).strip("-").lower()[:80]
        self.count += 1
        name = f"{self.count:02d}-{slug}.{self.ext}"
        try:
            fn(self.folder / name)
        except Exception as exc:  # one bad figure must not cost the whole report
            if is_disk_full(exc):  # ...but a full disk costs every later file: stop with its error now
                raise
            logger.exception("report figure %s failed", name)
            self.failures.append(f"{alt}: {type(exc).__name__}: {exc}")
            return f'<p class="missing">Figure “{esc(alt)}” could not be drawn: {esc(type(exc).__name__)}: {esc(str(exc))}</p>'
        # The image links to itself: on a phone (or any narrow window) a tap opens it full size;
        # there the figure also keeps a legible width and scrolls sideways in its own box.
        return (
            f'<figure><div class="figbox"><a href="{esc(name)}" target="_blank" title="open full size">'
            f'<img src="{esc(name)}" alt="{esc(alt)}"></a></div>'
            f'<figcaption>{caption} <a class="full" href="{esc(name)}" target="_blank">Full size</a></figcaption></figure>'
        )


@dataclass
class ReportContext:
    """The run's data and what the sections share.

    head_keys: the settings figures show (one variant per metric and scorer); groups: those
    settings per (metric, scorer) that have score rows; agreement: pooled agreement rows by
    (metric, scorer, context, variant, language).
    """

    data: RunData
    fw: FigureWriter
    head_keys: set[ConfigKey] = field(default_factory=set)
    groups: list[tuple[tuple[str, str], list[ConfigKey]]] = field(default_factory=list)
    agreement: dict[tuple, dict[str, Any]] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)  # results several sections share (computed once)
