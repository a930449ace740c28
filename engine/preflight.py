"""Config-time checks that need more than the YAML: the input file and what it implies.

`load_config` checks every key and value on its own. `preflight` adds the checks that look
at the input table or across sections, so that a mistake stops the run before any work
instead of failing every part later:

- the input exists and has a readable format (unless a source stage, e.g. `build`, makes it);
- each listed stage's own `Stage.preflight` hook (e.g. the noise stage: every generator has a
  tokenizer). The generators are those of the stage that generates the samples
  (`Stage.row_generators`) when the run generates, else the distinct `generator` values of the
  input (read only when a default tokenizer does not already cover every generator);
- every local model folder the run loads is whole: config.json, the safetensors headers and
  sizes, a tokenizer's vocabulary file (engine.runtime.model_files; DamagedModelError names the file);
- every model the run loads fits its device's memory budget on its own (estimated from its
  config; see engine.runtime.memory).

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
    from engine.stages import flow

    done = []
    if flow.input_source(config.stages) is None:
        _check_input(config.input)
        done.append(f"input {config.input} exists and is a Parquet / JSON Lines file")
    for stage in flow.listed(config.stages):
        checked = stage.preflight(config)
        if checked:
            done.append(checked)
    done.extend(_check_model_files(config))
    done.extend(_check_memory(config))
    return done


def _check_model_files(config: Any) -> list[str]:
    """Refuse a damaged or incomplete local model folder before any work (engine.runtime.model_files)."""
    from engine.runtime.memory import local_model_path
    from engine.runtime.model_files import check_model_dir
    from engine.stages.plan import as_plan

    checked = []
    for need in as_plan(config).model_needs():
        path = local_model_path(need.model)
        if path is not None and path.is_dir():
            check_model_dir(path, f"{need.where}.model")
            checked.append(f"model files: {need.where}: {path} is whole")
    return checked


def _check_memory(config: Any) -> list[str]:
    """Refuse a model that cannot fit its device even alone (engine.runtime.memory)."""
    from engine.runtime.memory import check_plan, plan_models
    from engine.stages.plan import as_plan

    plan = plan_models(as_plan(config).model_needs())
    check_plan(plan)
    return [f"memory: {planned.line()}" for planned in plan]


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


def generated_names(config: Any) -> list[str | None] | None:
    """The generator names of the rows a listed stage generates (None: the run generates nothing)."""
    from engine.stages import flow

    source = flow.sample_source(config.stages)
    return None if source is None else list(source.row_generators(config))


def run_generators(config: Any) -> list[str | None]:
    """The generator names the later stages will see (None: input rows without a generator)."""
    from engine.stages import flow

    generated = generated_names(config)
    if generated is not None:
        return generated
    if flow.input_source(config.stages) is not None:
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
