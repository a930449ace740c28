"""Config-time checks that need more than the YAML: the input file and what it implies.

`load_config` checks every key and value on its own. `preflight` adds the checks that look
at the input table or across sections, so that a mistake stops the run before any work
instead of failing every part later:

- the input exists and has a readable format (unless stage `build` makes it);
- stage `noise`: every generator has a tokenizer. The generators are the `generate` section's
  names when the run generates, else the distinct `generator` values of the input (read only
  when `noise.tokenizer` does not already cover every generator).

`babelscore config check` runs `load_config` and `preflight` and nothing else; `babelscore run`
runs them before it opens the run directory.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterator

from engine.errors import ConfigError

logger = logging.getLogger(__name__)


def preflight(config: Any) -> list[str]:
    """Run every check; ConfigError on the first failing one. Returns what was checked (for the CLI)."""
    done = []
    if "build" not in config.stages:
        _check_input(config.input)
        done.append(f"input {config.input} exists and is a Parquet / JSON Lines file")
    if "noise" in config.stages:
        done.append(_check_noise_tokenizers(config))
    return done


def _check_input(path: str) -> None:
    from engine.data.reader import input_format
    from engine.errors import InputError
    from engine.hints import path_hint

    if not Path(path).is_file():
        # An input error (exit 4, as the README's table says), though found at config time.
        raise InputError(f"input: {path!r} does not exist or is not a file{path_hint(path)}; fix `input:` (relative "
                         "paths are relative to the config file's folder)")
    try:
        input_format(path)
    except InputError as exc:
        raise ConfigError(f"input: {exc}") from None


def run_generators(config: Any) -> list[str | None]:
    """The generator names the noise stage will see (None: input rows without a generator)."""
    if "generate" in config.stages:
        return [g.generator_name for g in config.section("generate").generators]
    if "build" in config.stages:
        return [None]
    return sorted(set(_input_generators(config.input)), key=lambda g: (g is None, g or ""))


def _input_generators(path: str) -> Iterator[str | None]:
    """The `generator` column of the input, streamed (only that column is decoded for Parquet)."""
    from engine.data.reader import input_format, iter_raw_rows

    if input_format(path) == "parquet":
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        if "generator" not in parquet.schema_arrow.names:
            yield None
            return
        for batch in parquet.iter_batches(columns=["generator"]):
            yield from batch.column(0).to_pylist()
        return
    for row in iter_raw_rows(path):
        value = (row.values or {}).get("generator")
        yield value if isinstance(value, str) else None


def _check_noise_tokenizers(config: Any) -> str:
    params = config.section("noise")
    if params.tokenizer is not None:
        return f"noise: every generator has a tokenizer (default {params.tokenizer})"
    missing = [g for g in run_generators(config) if g is None or g not in params.generator_tokenizers]
    if missing:
        shown = ", ".join("(rows without a generator)" if g is None else repr(g) for g in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise ConfigError(
            f"noise.tokenizer: no tokenizer for generator(s) {shown}{more}; noise draws tokens with each "
            "generator's tokenizer. Set noise.tokenizer (used for every generator not listed) or add each "
            "generator to noise.generator_tokenizers (generator: tokenizer)"
        )
    return "noise: every generator has a tokenizer in noise.generator_tokenizers"
