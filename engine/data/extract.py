"""Comment extraction from source files, per programming language (build stage).

A small scanner per language, driven by a table of regular expressions, jumps from one
interesting place to the next and skips string, character and regex literals whole, so
comment markers inside them are never comments. Every comment keeps its exact character span
in the original text; doc comments have kind "doc"; consecutive own-line line comments with
the same opener merge. What each language's scanner handles: docs/generation.md, "Comment
extraction".
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Literal

CommentKind = Literal["line", "block", "doc"]


@dataclass(frozen=True)
class Comment:
    start: int  # character offsets in the source: source[start:end] == text
    end: int
    kind: CommentKind
    opener: str  # "//", "///", "/*", "/**", "#", '"""', ...
    text: str
    own_line: bool  # only whitespace before it on its line


@dataclass(frozen=True)
class _StringForm:
    """A literal form: `opener` regex; the closer computed from the opener's match."""

    opener: str
    closer: Callable[[re.Match], str]
    escapes: bool = True
    multiline: bool = False
    interpolation: Callable[[re.Match], str | None] = lambda m: None  # "${" or "{" or None


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    extensions: tuple[str, ...]
    line: tuple[str, ...]  # line comment openers, longest first
    block: tuple[tuple[str, str], ...] = ()
    nested_blocks: bool = False
    doc_openers: tuple[str, ...] = ()  # openers whose comments are doc comments
    strings: tuple[_StringForm, ...] = ()
    char_literals: Literal["none", "simple", "rust", "cpp"] = "none"
    line_continuation: bool = False  # C: a backslash at the end of a line comment continues it
    regex_literals: bool = False
    docstrings: bool = False


def _fixed(closer: str) -> Callable[[re.Match], str]:
    return lambda m: closer


_NO_ID = r"(?<![A-Za-z0-9_])"
_C_STRINGS = (
    _StringForm(_NO_ID + r'(?:u8|u|U|L)?R"(?P<cppdelim>[^()\\\s"]{0,16})\(',
                lambda m: ")" + m.group("cppdelim") + '"', escapes=False, multiline=True),
    _StringForm('"', _fixed('"')),
)
_JAVA_STRINGS = (_StringForm('"""', _fixed('"""'), multiline=True), _StringForm('"', _fixed('"')))
_JS_STRINGS = (
    _StringForm("`", _fixed("`"), multiline=True, interpolation=lambda m: "${"),
    _StringForm('"', _fixed('"')),
    _StringForm("'", _fixed("'")),
)
_GO_STRINGS = (_StringForm("`", _fixed("`"), escapes=False, multiline=True), _StringForm('"', _fixed('"')))
_RUST_STRINGS = (
    _StringForm(_NO_ID + r'[bc]?r(?P<hashes>#*)"', lambda m: '"' + m.group("hashes"), escapes=False, multiline=True),
    _StringForm(r'(?:(?<![A-Za-z0-9_])[bc])?"', _fixed('"'), multiline=True),
)
_KOTLIN_STRINGS = (
    _StringForm('"""', _fixed('"""'), escapes=False, multiline=True, interpolation=lambda m: "${"),
    _StringForm('"', _fixed('"'), interpolation=lambda m: "${"),
)
_PY_STRINGS = (
    # A prefix needs a non-identifier before it; a bare quote does not (`if"a"in x` is valid).
    _StringForm(r"(?P<pyprefix>(?<![A-Za-z0-9_])[rRbBuUfFtT]{1,2})?(?P<pyquote>\"\"\"|'''|\"|')",
                lambda m: m.group("pyquote"), multiline=True,  # single-quoted ones end at a newline: see _string
                interpolation=lambda m: "{" if "f" in (m.group("pyprefix") or "").lower() else None),
)

LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        LanguageSpec("java", (".java",), ("//",), (("/*", "*/"),), doc_openers=("/**",),
                     strings=_JAVA_STRINGS, char_literals="simple"),
        LanguageSpec("c", (".c", ".h"), ("//",), (("/*", "*/"),), doc_openers=("/**", "/*!", "///", "//!"),
                     strings=_C_STRINGS[1:], char_literals="simple", line_continuation=True),
        LanguageSpec("cpp", (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"), ("//",), (("/*", "*/"),),
                     doc_openers=("/**", "/*!", "///", "//!"), strings=_C_STRINGS, char_literals="cpp",
                     line_continuation=True),
        LanguageSpec("javascript", (".js", ".mjs", ".cjs", ".jsx"), ("//",), (("/*", "*/"),),
                     doc_openers=("/**",), strings=_JS_STRINGS, regex_literals=True),
        LanguageSpec("typescript", (".ts", ".tsx", ".mts", ".cts"), ("//",), (("/*", "*/"),),
                     doc_openers=("/**",), strings=_JS_STRINGS, regex_literals=True),
        LanguageSpec("go", (".go",), ("//",), (("/*", "*/"),), strings=_GO_STRINGS, char_literals="simple"),
        LanguageSpec("python", (".py", ".pyi"), ("#",), strings=_PY_STRINGS, docstrings=True),
        LanguageSpec("rust", (".rs",), ("//",), (("/*", "*/"),), nested_blocks=True,
                     doc_openers=("///", "//!", "/**", "/*!"), strings=_RUST_STRINGS, char_literals="rust"),
        LanguageSpec("kotlin", (".kt", ".kts"), ("//",), (("/*", "*/"),), nested_blocks=True,
                     doc_openers=("/**",), strings=_KOTLIN_STRINGS, char_literals="simple"),
    )
}
_BY_EXTENSION = {ext: spec.name for spec in LANGUAGES.values() for ext in spec.extensions}

_RUST_CHAR = re.compile(r"'(?:\\(?:u\{[0-9A-Fa-f_]{1,8}\}|x[0-9A-Fa-f]{2}|.)|[^\\'\r\n])'")
_SIMPLE_CHAR = re.compile(r"'(?:\\.[^'\r\n]{0,10}|[^\\'\r\n]{1,4})'")  # C allows 'ab' constants
_JS_REGEX_BEFORE = set("([{,;:=!&|?+-*%~^}")
_JS_REGEX_KEYWORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw",
                      "instanceof", "yield", "await"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def language_of_path(path: str | PurePath) -> str | None:
    """The programming language of a file by its extension, or None if unsupported."""
    return _BY_EXTENSION.get(PurePath(path).suffix.lower())


def _opener_kind(spec: LanguageSpec, opener: str, block: bool) -> CommentKind:
    if opener in spec.doc_openers:
        return "doc"
    return "block" if block else "line"


class _Scanner:
    def __init__(self, source: str, spec: LanguageSpec):
        self.src = source
        self.spec = spec
        self.comments: list[Comment] = []
        self._starts_by_end: dict[int, int] = {}  # comment end -> start, to look back past comments
        self._literal_ends: set[int] = set()
        groups = []
        for i, opener in enumerate(sorted(spec.line, key=len, reverse=True)):
            groups.append(f"(?P<line{i}>{re.escape(opener)})")
        for i, (opener, _closer) in enumerate(spec.block):
            groups.append(f"(?P<block{i}>{re.escape(opener)})")
        for i, form in enumerate(spec.strings):
            groups.append(f"(?P<str{i}>{form.opener})")
        if spec.char_literals != "none":
            groups.append("(?P<char>')")
        if spec.regex_literals:
            groups.append("(?P<slash>/)")
        if any(form.interpolation is not None for form in spec.strings):
            groups.append(r"(?P<lbrace>\{)|(?P<rbrace>\})")
        self._starter = re.compile("|".join(groups))
        self._starter_no_comments = re.compile("|".join(g for g in groups if not g.startswith(("(?P<line", "(?P<block"))))

    def run(self) -> list[Comment]:
        self._code(0, in_interpolation=False, comments=True)
        return self.comments

    # --- code ------------------------------------------------------------------------------
    def _code(self, i: int, in_interpolation: bool, comments: bool) -> int:
        """Scan code from i; inside an interpolation, return the index after its closing brace."""
        depth = 0
        starter = self._starter if comments else self._starter_no_comments
        n = len(self.src)
        while i < n:
            m = starter.search(self.src, i)
            if m is None:
                return n
            group = m.lastgroup
            if group == "lbrace":
                depth += 1
                i = m.end()
            elif group == "rbrace":
                if in_interpolation and depth == 0:
                    return m.end()
                depth = max(0, depth - 1)
                i = m.end()
            elif group.startswith("line"):
                i = self._line_comment(m)
            elif group.startswith("block"):
                i = self._block_comment(m, self.spec.block[int(group[5:])])
            elif group.startswith("str"):
                i = self._string(m, self.spec.strings[int(group[3:])])
            elif group == "char":
                i = self._char(m.start())
            else:  # slash
                i = self._slash(m.start())
        return n

    def _record(self, start: int, end: int, kind: CommentKind, opener: str) -> None:
        line_start = self.src.rfind("\n", 0, start) + 1
        line_start = max(line_start, self.src.rfind("\r", 0, start) + 1)
        own_line = self.src[line_start:start].strip() == ""
        self.comments.append(Comment(start, end, kind, opener, self.src[start:end], own_line))
        self._starts_by_end[end] = start

    # --- comments ----------------------------------------------------------------------------
    def _line_comment(self, m: re.Match) -> int:
        start = m.start()
        # Rust/C doc markers are the base opener followed by one more character ("///", "//!"),
        # but "////" is an ordinary comment.
        opener = m.group()
        rest = self.src[m.end(): m.end() + 2]
        for doc in self.spec.doc_openers:
            if doc.startswith(opener) and len(doc) == len(opener) + 1 and rest[:1] == doc[-1] and rest != doc[-1] * 2:
                opener = doc
                break
        i = m.end()
        while True:
            brk = _LINE_BREAK.search(self.src, i)
            end = brk.start() if brk else len(self.src)
            if self.spec.line_continuation and brk and self.src[end - 1: end] == "\\":
                i = brk.end()
                continue
            break
        self._record(start, end, _opener_kind(self.spec, opener, block=False), opener)
        return end

    def _block_comment(self, m: re.Match, pair: tuple[str, str]) -> int:
        start, (open_, close) = m.start(), pair
        opener = open_
        after = self.src[m.end(): m.end() + 2]
        for doc in self.spec.doc_openers:
            if doc.startswith(open_) and len(doc) == len(open_) + 1 and after[:1] == doc[-1]:
                # "/**/" is an empty block comment and "/***" a banner, not doc comments.
                if not after.startswith(doc[-1] + "/") and not (doc[-1] == "*" and after == "**"):
                    opener = doc
                break
        i, depth = m.end(), 1
        while depth:
            j = self.src.find(close, i)
            if self.spec.nested_blocks:
                k = self.src.find(open_, i)
                if k != -1 and (j == -1 or k < j):
                    depth, i = depth + 1, k + len(open_)
                    continue
            if j == -1:
                i = len(self.src)  # unterminated: the comment runs to the end of the file
                break
            depth, i = depth - 1, j + len(close)
        self._record(start, i, _opener_kind(self.spec, opener, block=True), opener)
        return i

    # --- literals ----------------------------------------------------------------------------
    def _string(self, m: re.Match, form: _StringForm) -> int:
        closer = form.closer(m)
        interpolation = form.interpolation(m)
        # A single-quoted Python string ends at a line break; triple-quoted ones span lines.
        multiline = form.multiline and m.groupdict().get("pyquote") not in ('"', "'")
        i, n = m.end(), len(self.src)
        while i < n:
            c = self.src[i]
            if form.escapes and c == "\\":
                i += 2
                continue
            if self.src.startswith(closer, i):
                i += len(closer)
                break
            if not multiline and c in "\r\n":
                break  # unterminated on its line: recover at the line break
            if interpolation is not None and self.src.startswith(interpolation, i):
                if interpolation == "{" and self.src.startswith("{{", i):
                    i += 2
                    continue
                # f-string expressions have no comments ("#" is a format flag there)
                i = self._code(i + len(interpolation), in_interpolation=True, comments=interpolation != "{")
                continue
            i += 1
        end = min(i, n)
        self._literal_ends.add(end)
        if self.spec.docstrings and m.groupdict().get("pyquote") in ('"""', "'''") and self._is_docstring(m.start(), end):
            self._record(m.start(), end, "doc", m.group())
        return end

    def _is_docstring(self, start: int, end: int) -> bool:
        """A triple-quoted string alone on its statement: first on its line, nothing after it."""
        line_start = max(self.src.rfind("\n", 0, start), self.src.rfind("\r", 0, start)) + 1
        if self.src[line_start:start].strip():
            return False
        brk = _LINE_BREAK.search(self.src, end)
        tail = self.src[end: brk.start() if brk else len(self.src)].strip()
        if tail and not tail.startswith("#"):
            return False
        prev, _ = self._previous_significant(start)
        return prev not in ("(", "[", "{", ",", "=", "\\", "+", "%")

    def _char(self, i: int) -> int:
        kind = self.spec.char_literals
        if kind == "cpp":
            # 1'000'000: a digit separator inside a number, not a character literal
            j = i
            while j > 0 and (self.src[j - 1].isalnum() or self.src[j - 1] == "_"):
                j -= 1
            if j < i and self.src[j].isdigit():
                return i + 1
        pattern = _RUST_CHAR if kind == "rust" else _SIMPLE_CHAR
        m = pattern.match(self.src, i)
        if m is None:
            return i + 1  # a Rust lifetime or label ('a), or a stray quote
        self._literal_ends.add(m.end())
        return m.end()

    def _previous_significant(self, i: int) -> tuple[str, int]:
        """The last character before i that is code (whitespace and comments skipped)."""
        j = i
        while j > 0:
            if j in self._starts_by_end:
                j = self._starts_by_end[j]
            elif self.src[j - 1].isspace():
                j -= 1
            else:
                return self.src[j - 1], j - 1
        return "", -1

    def _slash(self, i: int) -> int:
        """A `/` in JavaScript: a regex literal after an operator or keyword, else division."""
        prev, at = self._previous_significant(i)
        regex = prev == "" or prev in _JS_REGEX_BEFORE
        if prev == ">" and self.src[at - 1: at] == "=":
            regex = True  # arrow function body
        if prev.isalnum() or prev in "_$":
            k = at
            while k > 0 and (self.src[k - 1].isalnum() or self.src[k - 1] in "_$"):
                k -= 1
            regex = self.src[k: at + 1] in _JS_REGEX_KEYWORDS
        if at + 1 in self._literal_ends:
            regex = False  # a string or regex literal is an operand: division follows
        if not regex:
            return i + 1
        j, in_class, n = i + 1, False, len(self.src)
        while j < n:
            c = self.src[j]
            if c == "\\":
                j += 2
                continue
            if c in "\r\n":
                return i + 1  # not a regex after all
            if in_class:
                in_class = c != "]"
            elif c == "[":
                in_class = True
            elif c == "/":
                j += 1
                while j < n and self.src[j].isalpha():  # flags
                    j += 1
                self._literal_ends.add(j)
                return j
            j += 1
        return i + 1


def _merge_line_comments(source: str, comments: list[Comment]) -> list[Comment]:
    merged: list[Comment] = []
    for c in comments:
        prev = merged[-1] if merged else None
        if (
            prev is not None and c.kind != "block" and prev.kind == c.kind and prev.opener == c.opener
            and prev.own_line and c.own_line and not prev.opener.startswith(("/*", '"', "'"))
            and re.fullmatch(r"(?:\r\n|\r|\n)[ \t]*", source[prev.end: c.start])
        ):
            merged[-1] = replace(prev, end=c.end, text=source[prev.start: c.end])
        else:
            merged.append(c)
    return merged


def extract_comments(source: str, language: str, *, merge_line_comments: bool = True) -> list[Comment]:
    """The comments of `source` written in programming `language` (a key of LANGUAGES), in order."""
    if language not in LANGUAGES:
        raise ValueError(f"unsupported programming language {language!r}; supported: {sorted(LANGUAGES)}")
    comments = _Scanner(source, LANGUAGES[language]).run()
    return _merge_line_comments(source, comments) if merge_line_comments else comments


_MARKER_LINE = re.compile(
    r"^[ \t]*(?:/\*+!?|//+!?|#+|\*+(?!/)|[rRbBuUfF]{0,2}(?:\"\"\"|'''))?[ \t]?", re.MULTILINE
)
_CLOSER = re.compile(r"[ \t]*(?:\*+/|\"\"\"|''')[ \t]*$", re.MULTILINE)
_DOC_TAG = re.compile(r"\{@\w+\s*|@\w+")


def comment_body(text: str) -> str:
    """A comment's words without its markers (openers, closers, ` * ` decoration, doc tags)."""
    body = _CLOSER.sub("", text)
    body = _MARKER_LINE.sub("", body)
    body = _DOC_TAG.sub("", body).replace("}", " ")
    return " ".join(body.split())
