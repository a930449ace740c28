"""Converter from the study's public release layout (one wide table per language) to input samples.

The wide layout and how generators are named: docs/input.md, "Converting a wide table". The
comment's offsets come from locating `original_comment` in `content` (the FIM prefix in
`masked_data_<llm>` picks among repeats); the prime is the tail of that prefix after the
comment's start, else the generator card's prime rule when a tokenizer is given, else empty.
`predicted_comment_<llm>` (else `predict_<llm>`) is the text written after the prime, cut at
the card's first stop string; `predict_<llm>` is kept as `raw_generation`. Details: docs/input.md.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import InputError
from engine.generate.cards import STUDY_STOP_STRINGS, card_for_model
from engine.generate.prompts import cut_at_stop_strings, make_prime
from engine.vocabulary import normalise_label

logger = logging.getLogger(__name__)

PUBLIC_GENERATORS = (
    "google/codegemma-7b",
    "meta-llama/CodeLlama-7b-hf",
    "Qwen/CodeQwen1.5-7B",
    "bigcode/starcoder2-7b",
    "ibm-granite/granite-8b-code-base",
)
GENERATOR_COLUMN_KINDS = ("masked_data", "predict", "predicted_comment", "expert_accuracy", "error_codes")
FILE_COLUMNS = ("file_id", "content", "original_comment")
EXPECTED_PATTERN = "<kind>_<generator> with <kind> one of " + ", ".join(GENERATOR_COLUMN_KINDS)
# (prefix marker, suffix marker) of each FIM format: CodeGemma, StarCoder-style, CodeLlama.
FIM_MARKERS = (
    ("<|fim_prefix|>", "<|fim_suffix|>"),
    ("<fim_prefix>", "<fim_suffix>"),
    ("<PRE> ", " <SUF>"),
)
LANGUAGE_FROM_NAME = re.compile(r"(?:^|[_\-./])(en|nl|zh|el|pl|english|dutch|chinese|greek|polish)(?:[_\-./]|$)", re.I)
LANGUAGE_NAMES = {"english": "en", "dutch": "nl", "chinese": "zh", "greek": "el", "polish": "pl"}


def fim_prefix(masked: str | None) -> str | None:
    """The prefix text of a FIM prompt, whatever the family's format; None if unrecognised."""
    if not masked:
        return None
    for start_marker, end_marker in FIM_MARKERS:
        start = masked.find(start_marker)
        if start < 0:
            continue
        end = masked.find(end_marker, start + len(start_marker))
        if end < 0:
            continue
        return masked[start + len(start_marker) : end]
    return None


def locate_comment(content: str, comment: str, prefix: str | None) -> tuple[int, str] | None:
    """(comment_start, prime) for the occurrence of `comment` that the FIM prefix points at."""
    starts = [m.start() for m in re.finditer(re.escape(comment), content)] if comment else []
    if not starts:
        return None
    if prefix is not None:
        for start in starts:
            prime = prefix[start:]
            if prefix.startswith(content[:start]) and comment.startswith(prime):
                return start, prime
    return starts[0], ""


def short_name(generator: str) -> str:
    return generator.rsplit("/", 1)[-1]


def language_of(path: str) -> str:
    match = LANGUAGE_FROM_NAME.search(Path(path).name)
    if not match:
        raise InputError(f"cannot tell the language of {path!r} from its name; pass --language for each input")
    code = match.group(1).lower()
    return LANGUAGE_NAMES.get(code, code)


def _read_table(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(rows, column names in file order) of a Parquet, JSON Lines or JSON-array file."""
    if not Path(path).is_file():
        raise InputError(f"input {path!r} does not exist or is not a file")
    if path.endswith((".parquet", ".pq")):
        table = pq.read_table(path)
        return table.to_pylist(), table.column_names
    import json

    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        rows = json.loads(text) if text.lstrip().startswith("[") else [
            json.loads(line) for line in text.splitlines() if line.strip()
        ]
    except json.JSONDecodeError as exc:
        raise InputError(f"input {path!r} is neither Parquet nor JSON Lines / a JSON array: {exc}") from exc
    columns = list(dict.fromkeys(key for row in rows if isinstance(row, dict) for key in row))
    return rows, columns


def generator_columns(columns: Sequence[str]) -> dict[str, str]:
    """Generator as named in the columns -> generator for the rows (the study's five as hub ids).

    Kinds are tried longest first, so `predicted_comment_x` is generator `x`, not `ed_comment_x`.
    """
    public_by_short = {short_name(g): g for g in PUBLIC_GENERATORS}
    found: dict[str, str] = {}
    for column in columns:
        for kind in sorted(GENERATOR_COLUMN_KINDS, key=len, reverse=True):
            if column.startswith(kind + "_") and len(column) > len(kind) + 1:
                suffix = column[len(kind) + 1 :]
                found.setdefault(suffix, suffix if suffix in PUBLIC_GENERATORS else public_by_short.get(suffix, suffix))
                break
    return found


def check_layout(path: str, columns: Sequence[str]) -> dict[str, str]:
    """The generators of one wide table; InputError listing the columns when it is not one."""
    missing = [c for c in FILE_COLUMNS if c not in columns]
    generators = generator_columns(columns)
    if missing or not generators:
        problem = f"lacks column(s) {missing}" if missing else "has no generator column"
        raise InputError(
            f"{path!r} {problem}; its columns are {list(columns)}. A wide table needs {list(FILE_COLUMNS)} "
            f"and per generator columns named {EXPECTED_PATTERN} (e.g. predicted_comment_my-model, "
            "expert_accuracy_my-model). See 'Converting a wide table' in docs/input.md"
        )
    return generators


def convert_rows(
    rows: Iterable[dict[str, Any]],
    language: str,
    generators: Sequence[str] | Mapping[str, str] = PUBLIC_GENERATORS,
    tokenizers: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Wide rows of one language -> one input sample per (file, generator present in the row).

    generators: the column suffixes to read, or a mapping column suffix -> generator name for
    the rows (`generator_columns`).

    tokenizers: generator hub id -> its tokenizer (an object with offsets, or a name to load),
    used only to recover a prime that no FIM prefix gives. A file whose comment cannot be
    found in its content still yields rows (with offsets -1) so that validation quarantines
    them with a reason instead of losing them here.
    """
    tokenizers = dict(tokenizers or {})
    names = dict(generators) if isinstance(generators, Mapping) else {g: g for g in generators}
    cards = {generator: card_for_model(generator) for generator in names.values()}
    out = []
    for row in rows:
        content, comment = row.get("content"), row.get("original_comment")
        file_id = str(row.get("file_id"))
        for column_name, generator in names.items():
            columns = [f"{kind}_{column_name}" for kind in GENERATOR_COLUMN_KINDS]
            if all(row.get(column) is None for column in columns):
                continue  # this generator has no output for this file (absent or all-null columns)
            card = cards[generator]
            located = None
            if isinstance(content, str) and isinstance(comment, str):
                prefix = fim_prefix(row.get(f"masked_data_{column_name}"))
                located = locate_comment(content, comment, prefix)
                if located and prefix is None and generator in tokenizers:
                    rule = card.prime_rule if card else "letters"
                    located = (located[0], make_prime(comment, _tokenizer(tokenizers, generator), 3, rule))
            start, prime = located if located else (-1, "")
            codes = row.get(f"error_codes_{column_name}")
            if isinstance(codes, (list, tuple)):
                codes = ",".join(str(code) for code in codes)
            raw = row.get(f"predict_{column_name}")
            prediction = row.get(f"predicted_comment_{column_name}")
            if prediction is None:
                prediction = raw
            if isinstance(prediction, str):
                prediction = cut_at_stop_strings(prediction, card.stop_strings if card else STUDY_STOP_STRINGS)
            out.append(
                {
                    "sample_id": f"{file_id}/{short_name(generator)}",
                    "file_id": file_id,
                    "language": language,
                    "source": content,
                    "comment_start": start,
                    "comment_end": start + len(comment) if located and isinstance(comment, str) else -1,
                    "reference": comment,
                    "generator": generator,
                    "prime": prime,
                    "prediction": prediction,
                    "label": normalise_label(row.get(f"expert_accuracy_{column_name}")),
                    "error_codes": codes,
                    "raw_generation": raw,
                }
            )
    return out


def _tokenizer(tokenizers: dict[str, Any], generator: str) -> Any:
    """The tokenizer given for `generator`, loaded once when it was given by name."""
    tokenizer = tokenizers[generator]
    if isinstance(tokenizer, str):
        from engine.generate.fim import generator_tokenizer

        tokenizer = tokenizers[generator] = generator_tokenizer(tokenizer)
    return tokenizer


def convert_public_tables(
    paths: Sequence[str], languages: Sequence[str] | None = None, tokenizers: Mapping[str, Any] | None = None
) -> pa.Table:
    """Convert local copies of the public per-language tables into one input table.

    The table has the input sample columns plus `raw_generation` (the public raw generation,
    unchanged). `tokenizers` as in `convert_rows`.

    Rows are written as read (no validation here; `babelscore validate` or a run quarantines
    bad rows). error_codes stay as the public comma-separated strings; validation splits them.
    """
    if languages and len(languages) != len(paths):
        raise InputError(f"got {len(paths)} input files but {len(languages)} --language values; give one per file")
    rows: list[dict[str, Any]] = []
    for i, path in enumerate(paths):
        language = languages[i] if languages else language_of(path)
        table_rows, columns = _read_table(path)
        generators = check_layout(path, columns)
        converted = convert_rows(table_rows, language, generators, tokenizers=tokenizers)
        logger.info("%s: %d samples (%s), generators %s", path, len(converted), language, sorted(generators.values()))
        rows.extend(converted)
    schema = pa.schema(
        [
            ("sample_id", pa.string()),
            ("file_id", pa.string()),
            ("language", pa.string()),
            ("source", pa.string()),
            ("comment_start", pa.int64()),
            ("comment_end", pa.int64()),
            ("reference", pa.string()),
            ("generator", pa.string()),
            ("prime", pa.string()),
            ("prediction", pa.string()),
            ("label", pa.string()),
            ("error_codes", pa.string()),
            ("raw_generation", pa.string()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)
