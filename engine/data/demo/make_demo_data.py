"""Build the embedded demo dataset, ``samples.jsonl`` next to this file (DATA_CARD.md).

The files, comments and variants are hand-written data in ``content_<lang>.yaml`` (a
``language`` and a list of ``files``, each with the fields of ``spec.DemoFile``; read from the
installed package through importlib.resources). This script only
renders each comment in its file's comment syntax, locates it in the source, computes the
prime, and writes one row per (file, variant) with the label the variant has by construction.
The output is deterministic: running it again reproduces the committed file byte for byte.

Usage: python -m engine.data.demo.make_demo_data [OUTPUT]   (default: samples.jsonl here)
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import textwrap
import unicodedata
from importlib import resources
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a plain script: make the `engine` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from engine.data.demo.spec import MARKER, DemoFile

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT = Path(__file__).with_name("samples.jsonl")
CONTENT_FILES = tuple(f"content_{lang}.yaml" for lang in ("en", "nl", "zh", "el", "pl"))
LINE_WIDTH = 88  # columns, indentation and comment markers included
PRIME_WORDS = 3  # the study primed generation with the opener plus the first 3 tokens
PRIME_CHARS_ZH = 3  # Chinese has no spaces: 3 characters stand in for 3 tokens
NO_LINE_START = frozenset("，。、；：！？）」』》")  # Chinese typesetting keeps these at the end of a line

# generator slot -> (DemoFile field, label, error codes). The study's taxonomy has no code for
# "wrong identifier": an identifier taken from elsewhere in the file is a misplaced fact (SE-HA1).
VARIANTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "demo/paraphrase": ("paraphrase", "correct", ()),
    "demo/wrong-identifier": ("wrong_identifier", "partial", ("SE-HA1",)),
    "demo/missing-detail": ("missing_detail", "partial", ("SE-MD",)),
    "demo/wrong-statement": ("wrong_statement", "incorrect", ("SE-HA3",)),
    "demo/wrong-language": ("wrong_language", "incorrect", ("LG-WL2",)),
}


def _display_width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _wrap_cjk(text: str, width: int) -> list[str]:
    """Greedy wrap by display width; breaks between CJK characters, never inside a Latin word."""
    tokens: list[str] = []
    for char in text:
        latin = not char.isspace() and _display_width(char) == 1
        if latin and tokens and not tokens[-1][-1].isspace() and _display_width(tokens[-1][-1]) == 1:
            tokens[-1] += char
        else:
            tokens.append(char)
    lines, current = [], ""
    for token in tokens:
        if current and _display_width(current + token) > width and token not in NO_LINE_START:
            lines.append(current.rstrip())
            current = "" if token.isspace() else token
        else:
            current += token
    lines.append(current.rstrip())
    return lines


def _wrap(text: str, width: int, language: str) -> list[str]:
    if language == "zh":
        return _wrap_cjk(text, width)
    return textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False)


def _openers(style: str, indent: str) -> tuple[str, str, str]:
    """(text before the first line, text before each later line, closing text)."""
    if style == "javadoc":
        return f"/**\n{indent} * ", f"\n{indent} * ", f"\n{indent} */"
    marker = "// " if style == "line" else "# "
    return marker, f"\n{indent}{marker}", ""


def render_comment(text: str, style: str, indent: str, language: str) -> str:
    """The comment as it appears in the file, starting at the marker's column."""
    first, later, closing = _openers(style, indent)
    width = LINE_WIDTH - (len(later) - 1)  # `later` is newline + indent + marker
    lines = _wrap(text, width, language)
    return first + later.join(lines) + closing


def _head(text: str, language: str) -> str:
    """The first 3 words of `text` (3 characters for Chinese): the part of the prime after the opener."""
    return text[:PRIME_CHARS_ZH] if language == "zh" else " ".join(text.split(" ")[:PRIME_WORDS])


def prime_of(text: str, style: str, indent: str, language: str) -> str:
    """The comment opener plus the head of `text`."""
    return _openers(style, indent)[0] + _head(text, language)


def _marker_indent(source: str) -> str:
    position = source.index(MARKER)
    return source[source.rfind("\n", 0, position) + 1 : position]


def file_rows(file_id: str, language: str, demo: DemoFile) -> list[dict[str, Any]]:
    """The five sample rows of one demo file, in VARIANTS order."""
    indent = _marker_indent(demo.source)
    reference = render_comment(demo.comment, demo.style, indent, language)
    source = demo.source.replace(MARKER, reference)
    start = demo.source.index(MARKER)
    end = start + len(reference)
    if source[start:end] != reference:
        raise ValueError(f"{file_id}: reference is not at the computed offsets")
    prime = prime_of(demo.comment, demo.style, indent, language)
    if not reference.startswith(prime):
        raise ValueError(f"{file_id}: reference {reference!r} does not start with prime {prime!r}")
    head = _head(demo.comment, language)
    rows = []
    for generator, (field, label, codes) in VARIANTS.items():
        text = getattr(demo, field)
        # Comparing whole words: "Takes one token," would also pass a startswith test on "Takes one token".
        if _head(text, language) != head:
            raise ValueError(f"{file_id} {generator}: starts with {_head(text, language)!r}, the prime needs {head!r}")
        variant = render_comment(text, demo.style, indent, language)
        if not variant.startswith(prime):
            raise ValueError(f"{file_id} {generator}: rendered variant does not start with the prime")
        rows.append(
            {
                "sample_id": f"{file_id}/{generator}",
                "file_id": file_id,
                "language": language,
                "source": source,
                "comment_start": start,
                "comment_end": end,
                "reference": reference,
                "generator": generator,
                "prime": prime,
                "prediction": variant[len(prime) :],
                "label": label,
                "error_codes": list(codes),
            }
        )
    return rows


def load_content(name: str) -> tuple[str, list[DemoFile]]:
    """(language, demo files) of one shipped content file, e.g. `content_en.yaml`."""
    import yaml

    text = resources.files("engine.data.demo").joinpath(name).read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("language"), str) or not isinstance(data.get("files"), list):
        raise ValueError(f"{name}: expected a mapping with `language` (a string) and `files` (a list)")
    files = []
    for i, entry in enumerate(data["files"]):
        try:
            files.append(DemoFile(**entry))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: files[{i}]: {exc}") from exc
    return data["language"], files


def build_rows() -> list[dict[str, Any]]:
    """All rows, sorted by file_id then generator, so the rows of one file are contiguous."""
    rows: list[dict[str, Any]] = []
    for name in CONTENT_FILES:
        language, files = load_content(name)
        counters: dict[str, int] = {}
        for demo in files:
            counters[demo.program] = counters.get(demo.program, 0) + 1
            file_id = f"{language}_{demo.program}_{counters[demo.program]:02d}"
            rows.extend(file_rows(file_id, language, demo))
    rows.sort(key=lambda row: (row["file_id"], row["generator"]))
    return rows


def write_samples(path: Path) -> int:
    """Write the dataset as JSONL (UTF-8, one object per line); returns the row count."""
    rows = build_rows()
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    path.write_bytes(text.encode("utf-8"))
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("output", nargs="?", type=Path, default=DEFAULT_OUTPUT, help="JSONL file to write")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    count = write_samples(args.output)
    logger.info("wrote %d rows to %s", count, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
