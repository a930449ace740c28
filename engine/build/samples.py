"""Stage `build`'s method: from a directory of source files to input samples (SAMPLE_SCHEMA rows).

Each supported file's comments are extracted; those long enough and identified as one of
`languages` are candidates; one per file is chosen by a hash of seed and file id; files whose
context plus the length limit (mean + 3 std of the chosen comments) exceeds `window` are dropped;
then `files_per_language` files per language are selected in a seeded order. Same files and
parameters give the same table. docs/generation.md ("The build stage") has each step, the token
count and the output's columns.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.build.params import BuildParams
from engine.data.extract import (
    Comment,
    comment_body,
    extract_comments,
    language_of_path,
)
from engine.data.langid import LanguageIdentifier
from engine.errors import InputError
from engine.records import SAMPLE_SCHEMA

logger = logging.getLogger(__name__)

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_APPROX_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")


@dataclasses.dataclass(frozen=True)
class _Candidate:
    file_id: str
    source: str
    comment: Comment
    language: str


def approximate_token_count(text: str) -> int:
    """Word pieces, CJK characters and punctuation characters: a tokenizer-free length."""
    return len(_APPROX_TOKEN.findall(text))


def _token_counter(tokenizer: str | None) -> Callable[[str], int]:
    if tokenizer is None:
        return approximate_token_count
    from engine.runtime import load_tokenizer

    tok = load_tokenizer(tokenizer, fast=False)
    return lambda text: len(tok(text, add_special_tokens=False)["input_ids"]) if text else 0


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}\0{key}".encode()).hexdigest()


def _source_files(root: Path, allowed: tuple[str, ...]) -> list[tuple[str, Path, str]]:
    """(file id, path, programming language) of every supported file under root, sorted."""
    files = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        language = language_of_path(path)
        if language is None or (allowed and language not in allowed):
            continue
        files.append((rel.as_posix(), path, language))
    return files


def _read(path: Path, limit: int, dropped: Counter) -> str | None:
    data = path.read_bytes()
    try:
        # Bytes decoded as they are: CRLF stays CRLF, so offsets index the file's own text.
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        dropped["not valid UTF-8"] += 1
        return None
    if not text.strip():
        dropped["empty file"] += 1
        return None
    if len(text) > limit:
        dropped["file longer than max_file_chars"] += 1
        return None
    return text


def _candidates(params: BuildParams, count: Callable[[str], int], dropped: Counter) -> list[_Candidate]:
    root = Path(params.source_dir).expanduser()
    if not root.is_dir():
        raise InputError(f"build: source_dir {params.source_dir!r} is not a directory")
    identifier = LanguageIdentifier(params.languages, params.min_language_confidence, params.other_languages)
    chosen = []
    for file_id, path, language in _source_files(root, params.programming_languages):
        source = _read(path, params.max_file_chars, dropped)
        if source is None:
            continue
        found = []
        for comment in extract_comments(source, language, merge_line_comments=params.merge_line_comments):
            if comment.kind not in params.comment_kinds:
                continue
            body = comment_body(comment.text)
            if count(body) < params.min_comment_tokens:
                continue
            natural = identifier.identify(body)
            if natural is not None:
                found.append(_Candidate(file_id, source, comment, natural))
        if not found:
            dropped["no eligible comment"] += 1
            continue
        chosen.append(found[int(_rank(params.seed, file_id), 16) % len(found)])
    return chosen


def build_samples(params: BuildParams) -> pa.Table:
    """Input samples (SAMPLE_SCHEMA) from the source files under `params.source_dir`."""
    count = _token_counter(params.tokenizer)
    dropped: Counter = Counter()
    candidates = _candidates(params, count, dropped)
    if not candidates:
        logger.warning("build: no file under %s has an eligible comment (%s)", params.source_dir, dict(dropped))
        return pa.Table.from_pylist([], schema=SAMPLE_SCHEMA)

    lengths = [count(c.comment.text) for c in candidates]
    mean = sum(lengths) / len(lengths)
    limit = mean + 3 * math.sqrt(sum((n - mean) ** 2 for n in lengths) / len(lengths))
    fitting: dict[str, list[_Candidate]] = {code: [] for code in dict.fromkeys(params.languages)}
    for c in candidates:
        context = count(c.source[: c.comment.start]) + count(c.source[c.comment.end:])
        if context + limit >= params.window:
            dropped["context + limit over the window"] += 1
            continue
        fitting[c.language].append(c)

    rows: list[dict[str, Any]] = []
    for code, files in fitting.items():
        ranked = sorted(files, key=lambda c: _rank(params.seed, c.file_id))
        n = params.files_per_language
        if n is not None and len(ranked) < n:
            logger.warning("build: language %s has %d eligible files, fewer than files_per_language=%d",
                           code, len(ranked), n)
        for c in sorted(ranked[:n] if n is not None else ranked, key=lambda c: c.file_id):
            rows.append({
                "sample_id": c.file_id, "file_id": c.file_id, "language": code, "source": c.source,
                "comment_start": c.comment.start, "comment_end": c.comment.end, "reference": c.comment.text,
                "generator": None, "prime": None, "prediction": None, "label": None, "error_codes": None,
            })
    logger.info("build: %d samples (%s); limit %.1f tokens; dropped: %s", len(rows),
                dict(Counter(r["language"] for r in rows)), limit, dict(dropped) or "none")
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)
