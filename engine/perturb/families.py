"""The perturbation families: each turns a comment's scored span into one with a known error.

Every family stands for codes of the study's error taxonomy and edits only the words of the
scored span (markers, the prime and the file stay; see `engine.perturb.text`). Choices (which
word, which sentence, how far to cut) come from the generator passed in, so a family is
deterministic for a seed. A family that cannot apply returns a skip with the reason.

The families: negation (SE-HA3), identifier_swap (SE-HA1), deletion (SE-MD), truncation
(MS-ET), verbatim_repetition (MS-RE2), pattern_repetition (MS-RE1), code_copy (MS-CC,
SE-CS2) and foreign_comment (LG-WL2); docs/perturbation.md (the table and "The families,
precisely") says what each changes.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from engine.perturb.language import LanguageResources, code_keywords
from engine.perturb.text import CommentText, Edit

FAMILIES: dict[str, tuple[str, ...]] = {
    "negation": ("SE-HA3",),
    "identifier_swap": ("SE-HA1",),
    "deletion": ("SE-MD",),
    "truncation": ("MS-ET",),
    "verbatim_repetition": ("MS-RE2",),
    "pattern_repetition": ("MS-RE1",),
    "code_copy": ("MS-CC", "SE-CS2"),
    "foreign_comment": ("LG-WL2",),
}
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_$])[A-Za-z_$][A-Za-z0-9_$]*(?![A-Za-z0-9_$])")
_STRING_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"' + r"|'(?:\\.|[^'\\\n])*'")
_HEADER_LINE = re.compile(r"^[ \t]*(?:package|import|from)\b.*$", re.MULTILINE)
NEARBY_CODE_LINES = 3
NO_WORDS = "the scored part of the comment (after the prime) has no words"


@dataclass(frozen=True)
class FamilyOptions:
    truncate_min: float = 0.3
    truncate_max: float = 0.7
    repeat_copies: int = 2
    pattern_repeats: int = 4


@dataclass(frozen=True)
class FamilyInput:
    """What a family may read. `foreign`: (language, file_id, words) of comments in other languages."""

    comment: CommentText
    resources: LanguageResources
    source: str
    comment_start: int
    comment_end: int
    opener: str
    foreign: Sequence[tuple[str, str, str]] = ()
    options: FamilyOptions = FamilyOptions()


@dataclass(frozen=True)
class Outcome:
    text: str | None
    skip_reason: str | None = None
    detail: str | None = None

    @property
    def applied(self) -> bool:
        return self.text is not None


def skip(reason: str) -> Outcome:
    return Outcome(None, reason, None)


def _pick(rng: np.random.Generator, n: int) -> int:
    return int(rng.integers(0, n))


# ----- segmentation ------------------------------------------------------------------------------
def sentence_starts(c: CommentText, res: LanguageResources) -> list[int]:
    """Start of each sentence of the span (the first starts at the first word)."""
    bounds = c.body_bounds()
    if bounds is None:
        return []
    starts = [bounds[0]]
    for _, end, _ in c.finditer(res.sentence_end):
        nxt = c.next_content(end)
        if nxt < bounds[1] and nxt > starts[-1]:
            starts.append(nxt)
    return starts


def _sentence_end(c: CommentText, starts: list[int], i: int, body_end: int) -> int:
    return c.content_end(starts[i], starts[i + 1] if i + 1 < len(starts) else body_end)


def units(c: CommentText, res: LanguageResources) -> list[tuple[int, int]]:
    return [(s, e) for s, e, _ in c.finditer(res.unit)]


# ----- families ------------------------------------------------------------------------------------
def negation(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c, res = inp.comment, inp.resources
    if not res.negation:
        return skip(f"no negation rules for language {res.language!r}")
    found = []
    for r, rule in enumerate(res.negation):
        for s, e, m in c.finditer(rule.pattern, lowered=True):
            found.append((s, r, e, m))
    found.sort(key=lambda x: (x[0], x[1]))
    sites, last_end = [], -1
    for s, r, e, m in found:  # earliest match wins an overlap, then the earlier rule
        if s >= last_end:
            sites.append((s, e, r, m))
            last_end = e
    if not sites:
        return skip(f"no negatable word found by the {res.language!r} negation rules")
    s, e, r, m = sites[_pick(rng, len(sites))]
    replacement = m.expand(res.negation[r].replace)
    if c.text[s].isupper() and replacement:
        replacement = replacement[0].upper() + replacement[1:]
    return Outcome(c.apply([Edit(s, e, replacement)]), detail=f"{c.text[s:e]} -> {replacement}")


@functools.lru_cache(maxsize=64)  # the generators of a file share its identifiers
def file_identifiers(source: str, comment_start: int, comment_end: int, opener: str) -> tuple[str, ...]:
    """Identifiers of the file's code (comments removed; keywords and names under 3 characters left out)."""
    from engine.data.extract import extract_comments

    language = "python" if opener.startswith(("#", '"""', "'''")) else "java"
    code = source[:comment_start] + "\n" + source[comment_end:]
    pieces, pos = [], 0
    for comment in extract_comments(code, language, merge_line_comments=False):
        pieces.append(code[pos:comment.start])
        pos = comment.end
    pieces.append(code[pos:])
    keywords = code_keywords()
    code = _STRING_LITERAL.sub(" ", " ".join(pieces))
    code = _HEADER_LINE.sub(" ", code)  # package paths and imported module names are not the file's own
    names = {m.group() for m in _IDENTIFIER.finditer(code)}
    return tuple(sorted(n for n in names if len(n) >= 3 and n not in keywords))


def identifier_swap(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c = inp.comment
    identifiers = file_identifiers(inp.source, inp.comment_start, inp.comment_end, inp.opener)
    known = frozenset(identifiers)
    mentioned = [(s, e, m.group()) for s, e, m in c.finditer(_IDENTIFIER) if m.group() in known]
    if not mentioned:
        return skip("no identifier of the file's code appears in the comment")
    names = sorted({name for _, _, name in mentioned})
    chosen = names[_pick(rng, len(names))]
    in_comment = {m.group() for _, _, m in c.finditer(_IDENTIFIER)}
    others = [name for name in identifiers if name not in in_comment]
    if not others:
        return skip("the file has no other identifier that the comment does not already name")
    swapped = others[_pick(rng, len(others))]
    edits = [Edit(s, e, swapped) for s, e, name in mentioned if name == chosen]
    return Outcome(c.apply(edits), detail=f"{chosen} -> {swapped}")


def deletion(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c, res = inp.comment, inp.resources
    bounds = c.body_bounds()
    assert bounds is not None
    starts = sentence_starts(c, res)
    if len(starts) >= 2:
        i = 1 + _pick(rng, len(starts) - 1)
        end = _sentence_end(c, starts, i, bounds[1])
        if i + 1 < len(starts):
            span = (starts[i], starts[i + 1])
        else:  # the last sentence goes with the space before it
            span = (_sentence_end(c, starts, i - 1, bounds[1]), bounds[1])
        return Outcome(c.apply([Edit(*span)]), detail=f"sentence: {c.prose(starts[i], end)}")
    stops = sorted({s for s, _, _ in c.finditer(res.sentence_end)} | {bounds[1]})
    boundaries = [s for s, _, _ in c.finditer(res.clause_boundary) if s > bounds[0]]
    clauses = []
    for j, s in enumerate(boundaries):
        nxt = boundaries[j + 1:j + 2]
        clauses.append((s, min([x for x in stops if x > s] + nxt)))
    clauses = [(s, e) for s, e in clauses if c.prose(s, e).strip(" ,;:，；：")]
    if not clauses:
        return skip("one sentence of one clause: nothing to delete but the whole comment")
    s, e = clauses[_pick(rng, len(clauses))]
    return Outcome(c.apply([Edit(s, e)]), detail=f"clause: {c.prose(s, e)}")


def truncation(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c, o = inp.comment, inp.options
    found = units(c, inp.resources)
    n = len(found)
    if n < 2:
        return skip("fewer than 2 words after the prime: nothing to cut")
    f = float(rng.uniform(o.truncate_min, o.truncate_max))
    k = min(max(int(f * n), 1), n - 1)
    bounds = c.body_bounds()
    assert bounds is not None
    return Outcome(c.apply([Edit(found[k - 1][1], bounds[1])]), detail=f"kept {k} of {n} words")


def verbatim_repetition(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c, res = inp.comment, inp.resources
    bounds = c.body_bounds()
    assert bounds is not None
    starts = sentence_starts(c, res)
    i = _pick(rng, len(starts))
    end = _sentence_end(c, starts, i, bounds[1])
    sentence = c.prose(starts[i], end, res.joiner or "")
    sep = " " if res.joiner else ""
    return Outcome(c.apply([Edit(end, end, (sep + sentence) * inp.options.repeat_copies)]), detail=f"sentence: {sentence}")


def _strip_punctuation(text: str) -> str:
    chars = list(text)
    while chars and unicodedata.category(chars[-1]).startswith("P"):
        chars.pop()
    while chars and unicodedata.category(chars[0]).startswith("P"):
        chars.pop(0)
    return "".join(chars)


def pattern_repetition(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c, res = inp.comment, inp.resources
    found = units(c, res)
    k = 1 + _pick(rng, min(3, len(found)))
    first = _pick(rng, len(found) - k + 1)
    pattern = _strip_punctuation(res.joiner.join(c.text[s:e] for s, e in found[first:first + k]))
    if not pattern:
        return skip("the chosen words are punctuation only")
    bounds = c.body_bounds()
    assert bounds is not None
    return Outcome(c.apply([Edit(bounds[1], bounds[1], (res.joiner + pattern) * inp.options.pattern_repeats)]),
                   detail=f"pattern: {pattern}")


def nearby_code_lines(source: str, comment_start: int, comment_end: int) -> list[str]:
    """Up to 3 nearest code lines after the comment (before it when none follows), stripped."""
    def usable(line: str) -> bool:
        line = line.strip()
        return any(ch.isalpha() for ch in line) and not line.startswith(("//", "#", "/*", "*")) and "*/" not in line \
            and '"""' not in line and "'''" not in line
    after = [line.strip() for line in source[comment_end:].splitlines() if usable(line)]
    if after:
        return after[:NEARBY_CODE_LINES]
    before = [line.strip() for line in source[:comment_start].splitlines() if usable(line)]
    return before[::-1][:NEARBY_CODE_LINES]


def code_copy(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c = inp.comment
    lines = nearby_code_lines(inp.source, inp.comment_start, inp.comment_end)
    if not lines:
        return skip("no code line near the comment")
    line = lines[_pick(rng, len(lines))]
    bounds = c.body_bounds()
    assert bounds is not None
    return Outcome(c.apply([Edit(bounds[1], bounds[1], " " + line)]), detail=f"code: {line}")


def foreign_comment(inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    c = inp.comment
    if not inp.foreign:
        return skip("the corpus has no comment in another language")
    language, file_id, words = inp.foreign[_pick(rng, len(inp.foreign))]
    bounds = c.body_bounds()
    assert bounds is not None
    return Outcome(c.apply([Edit(bounds[0], bounds[1], words)]), detail=f"comment of {language} file {file_id}")


_FUNCTIONS = {
    "negation": negation,
    "identifier_swap": identifier_swap,
    "deletion": deletion,
    "truncation": truncation,
    "verbatim_repetition": verbatim_repetition,
    "pattern_repetition": pattern_repetition,
    "code_copy": code_copy,
    "foreign_comment": foreign_comment,
}


def perturb(family: str, inp: FamilyInput, rng: np.random.Generator) -> Outcome:
    """Apply one family; a span without words is skipped for every family."""
    if inp.comment.body_bounds() is None:
        return skip(NO_WORDS)
    return _FUNCTIONS[family](inp, rng)
