"""The shape of one hand-written demo file (see DATA_CARD.md).

A `DemoFile` holds a source file whose comment of interest is replaced by `MARKER`, the text
of that comment as plain prose, and the prose of the five controlled variants. Rendering the
prose into comment syntax, offsets and primes is done by `make_demo_data`.
"""
from __future__ import annotations

from dataclasses import dataclass

MARKER = "@@COMMENT@@"
STYLES_BY_PROGRAM = {"java": ("javadoc", "line"), "python": ("hash",)}


@dataclass(frozen=True)
class DemoFile:
    """One source file and its comment of interest, with the five variants as plain prose.

    `source` contains `MARKER` exactly once, alone on its line after the indentation; the
    comment is rendered there in `style` (javadoc `/** */`, `//` lines or `#` lines).
    Every variant starts with the same first three words (first three characters for
    Chinese) as `comment`, so that the prime of the reference fits all of them.
    """

    program: str  # java | python
    style: str  # javadoc | line | hash
    source: str
    comment: str
    paraphrase: str
    wrong_identifier: str
    missing_detail: str
    wrong_statement: str
    wrong_language: str

    def __post_init__(self) -> None:
        allowed = STYLES_BY_PROGRAM.get(self.program)
        if allowed is None:
            raise ValueError(f"program={self.program!r}; allowed: {sorted(STYLES_BY_PROGRAM)}")
        if self.style not in allowed:
            raise ValueError(f"style={self.style!r} for program {self.program!r}; allowed: {list(allowed)}")
        if self.source.count(MARKER) != 1:
            raise ValueError(f"source must contain {MARKER!r} exactly once, found {self.source.count(MARKER)}")
        line_start = self.source.rfind("\n", 0, self.source.index(MARKER)) + 1
        before = self.source[line_start : self.source.index(MARKER)]
        after = self.source[self.source.index(MARKER) + len(MARKER) :].split("\n", 1)[0]
        if before.strip() or after.strip():
            raise ValueError(f"{MARKER!r} must stand alone on its line, found {before + MARKER + after!r}")
        for name in ("comment", *VARIANT_FIELDS):
            text = getattr(self, name)
            if text != text.strip() or "  " in text or "\n" in text:
                raise ValueError(f"{name}={text!r}: write one line of prose, single spaces, no outer blanks")


VARIANT_FIELDS = ("paraphrase", "wrong_identifier", "missing_detail", "wrong_statement", "wrong_language")
