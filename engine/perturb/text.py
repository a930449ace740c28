"""A comment's scored span with its markers protected, and the edits perturbations make to it.

Perturbations change the words of a comment, never its markers: the opener, the ` * ` or
`//` that starts each line of a block or merged line comment, the closer (`*/`, `\"\"\"`) and
the line breaks are *protected*. Protection is computed on the whole comment (opener first)
and then cut to the scored span, the part after the prime, which is what a perturbation edits.

`apply_edits` replaces character ranges, keeping the protected characters inside a range, so a
deletion across lines keeps the line structure; a line left with markers only is dropped and
the spacing of the changed lines tidied. docs/perturbation.md ("Markers are protected") has
the rules.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Sequence

FREE, MARKER, CLOSER, BREAK = 0, 1, 2, 3

_LINE_MARKER = re.compile(r"^[ \t]*(?:/\*+!?|\*+(?!/)|//+!?|#+|[rRbBuUfF]{0,2}(?:\"\"\"|'''))?[ \t]?", re.MULTILINE)
_CLOSER = re.compile(r"[ \t]*(?:\*+/|\"\"\"|''')[ \t]*$", re.MULTILINE)


def protection(comment: str) -> list[int]:
    """Per character of a whole comment: FREE (words), MARKER, CLOSER or BREAK (\\n, \\r)."""
    kinds = [FREE] * len(comment)
    for m in _LINE_MARKER.finditer(comment):
        for i in range(m.start(), m.end()):
            kinds[i] = MARKER
    for m in _CLOSER.finditer(comment):
        if m.end() > m.start():
            for i in range(m.start(), m.end()):
                kinds[i] = CLOSER
    for i, ch in enumerate(comment):
        if ch in "\r\n":
            kinds[i] = BREAK
    return kinds


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    replacement: str = ""


@dataclass(frozen=True)
class CommentText:
    """The scored span `text` of a comment and the protection kind of each of its characters."""

    text: str
    kinds: tuple[int, ...]

    @classmethod
    def of(cls, comment: str, prime: str = "") -> "CommentText":
        """The part of `comment` after `prime` (`comment` must start with `prime`)."""
        if not comment.startswith(prime):
            raise ValueError("the comment does not start with its prime")
        return cls(comment[len(prime):], tuple(protection(comment)[len(prime):]))

    # ----- reading --------------------------------------------------------------------------
    def free(self, start: int, end: int) -> bool:
        return all(k == FREE for k in self.kinds[start:end])

    def runs(self) -> Iterator[tuple[int, int]]:
        """Maximal ranges of unprotected characters."""
        i, n = 0, len(self.text)
        while i < n:
            if self.kinds[i] != FREE:
                i += 1
                continue
            j = i
            while j < n and self.kinds[j] == FREE:
                j += 1
            yield i, j
            i = j

    def finditer(self, pattern: re.Pattern, lowered: bool = False) -> Iterator[tuple[int, int, re.Match]]:
        """Matches of `pattern` lying entirely in unprotected text (start, end, match)."""
        for a, b in self.runs():
            segment = self.text[a:b]
            if lowered and len(segment.lower()) == len(segment):
                segment = segment.lower()
            for m in pattern.finditer(segment):
                if m.end() > m.start():
                    yield a + m.start(), a + m.end(), m

    def body_bounds(self) -> tuple[int, int] | None:
        """(first, one past last) unprotected non-space character, or None when there is no text."""
        idx = [i for i, (ch, k) in enumerate(zip(self.text, self.kinds)) if k == FREE and not ch.isspace()]
        return (idx[0], idx[-1] + 1) if idx else None

    def content_end(self, start: int, end: int) -> int:
        """One past the last unprotected non-space character in [start, end) (start if none)."""
        for i in range(end - 1, start - 1, -1):
            if self.kinds[i] == FREE and not self.text[i].isspace():
                return i + 1
        return start

    def next_content(self, i: int) -> int:
        """The first unprotected non-space character at or after i (len(text) if none)."""
        n = len(self.text)
        while i < n and (self.kinds[i] != FREE or self.text[i].isspace()):
            i += 1
        return i

    def prose(self, start: int = 0, end: int | None = None, joiner: str = " ") -> str:
        """The words of [start, end) on one line: the pieces between markers joined by `joiner`
        ("" for languages written without spaces), whitespace collapsed."""
        end = len(self.text) if end is None else end
        pieces = [" ".join(self.text[a:b].split()) for a, b in self.runs() if a < end and b > start
                  for a, b in [(max(a, start), min(b, end))]]
        return joiner.join(p for p in pieces if p)

    # ----- editing --------------------------------------------------------------------------
    def apply(self, edits: Sequence[Edit]) -> str:
        """The text with `edits` (non-overlapping; replacements without line breaks) applied."""
        out: list[tuple[str, int, bool]] = []  # (char, kind, changed)
        pos = 0
        for edit in sorted(edits, key=lambda e: (e.start, e.end)):
            if edit.start < pos or "\n" in edit.replacement or "\r" in edit.replacement:
                raise ValueError(f"bad edit {edit}: overlapping, or a replacement with a line break")
            out.extend((c, k, False) for c, k in zip(self.text[pos:edit.start], self.kinds[pos:edit.start]))
            out.extend((c, FREE, True) for c in edit.replacement)
            kept = [(c, k, True) for c, k in zip(self.text[edit.start:edit.end], self.kinds[edit.start:edit.end]) if k != FREE]
            if edit.end > edit.start and not kept and not edit.replacement:
                out.append(("", FREE, True))  # mark the junction as changed
            out.extend(kept)
            pos = edit.end
        out.extend((c, k, False) for c, k in zip(self.text[pos:], self.kinds[pos:]))
        return _clean_lines(_split_lines(out), _split_lines([(c, k, False) for c, k in zip(self.text, self.kinds)]))


def _split_lines(chars: list[tuple[str, int, bool]]) -> list[list[tuple[str, int, bool]]]:
    """Lines ending after each '\\n' (which stays on its line)."""
    lines: list[list[tuple[str, int, bool]]] = [[]]
    for item in chars:
        lines[-1].append(item)
        if item[0] == "\n":
            lines.append([])
    return lines


def _has_words(line: list[tuple[str, int, bool]]) -> bool:
    return any(k == FREE and c.strip() for c, k, _ in line)


def _tidy(line: list[tuple[str, int, bool]]) -> str:
    """Collapse doubled spaces in the words of a changed line; drop spaces before its end."""
    text, kinds = "".join(c for c, _, _ in line), "".join("f" if k == FREE else "p" for c, k, _ in line for _ in c)
    out = []
    for i, ch in enumerate(text):
        if kinds[i] == "f" and ch == " " and out and out[-1][0] == " " and out[-1][1] == "f":
            continue
        out.append((ch, kinds[i]))
    # unprotected spaces just before a line break or the end of the span go
    j = len(out)
    while j > 0 and out[j - 1][1] == "p" and out[j - 1][0] in "\r\n":
        j -= 1
    k = j
    while k > 0 and out[k - 1][1] == "f" and out[k - 1][0] in " \t":
        k -= 1
    return "".join(c for c, _ in out[:k] + out[j:])


def _clean_lines(lines: list[list[tuple[str, int, bool]]], original: list[list[tuple[str, int, bool]]]) -> str:
    result: list[str] = []
    for index, line in enumerate(lines):
        changed = any(ch for _, _, ch in line)
        if index > 0 and changed and not _has_words(line) and _has_words(original[index]):
            # every word of this line was deleted: drop it, keeping a closer it carried
            closer = "".join(c for c, k, _ in line if k == CLOSER).strip()
            if closer and result:
                prev = result[-1]
                stripped = prev.rstrip("\r\n")
                result[-1] = stripped + " " + closer + prev[len(stripped):]
            if line and line[-1][0] != "\n" and result:
                # the last line went: the previous line's break goes with it
                result[-1] = result[-1].rstrip("\r\n")
            continue
        result.append(_tidy(line) if changed else "".join(c for c, _, _ in line))
    return "".join(result)
