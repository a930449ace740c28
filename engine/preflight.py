"""Config-time checks that need more than the YAML: the input file and what it implies.

`load_config` checks every key and value on its own. `preflight` adds the checks that look
at the input table or across sections, so that a mistake stops the run before any work
instead of failing every part later:

- the input exists and has a readable format (unless a source stage, e.g. `build`, makes it);
- each listed stage's own `Stage.preflight` hook, and for a stage that `ReadsGenerators` (the
  noise stage: every generator has a tokenizer) its check of the generator names it will see:
  those of the stage that generates its samples (`NamesGenerators.row_generators`) when the run
  generates, else the distinct `generator` values of the input (read only when called);
- every local model folder the run loads is whole: config.json, the safetensors headers and
  sizes, a tokenizer's vocabulary file (engine.runtime.model_files; DamagedModelError names the file);
- every model the run loads fits its device's memory budget on its own (estimated from its
  config; see engine.runtime.memory).

Every check reads the RunPlan (engine.stages.plan), never stage names. `babelscore config check`
runs `load_config` and `preflight` and nothing else; `babelscore run` runs them before it opens
the run directory.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterator

from engine.errors import ConfigError

logger = logging.getLogger(__name__)


# A returned line that is a warning, not a passed check, starts with this.
WARNING_PREFIX = "warning: "


def preflight(plan: Any) -> list[str]:
    """Run every check of a RunPlan (engine.stages.plan); ConfigError on the first failing one.
    Returns what was checked (for the CLI)."""
    from engine.stages.base import ReadsGenerators

    config = plan.config
    done = []
    if plan.input_source is None:
        _check_input(config.input)
        done.append(f"input {config.input} exists and is a Parquet / JSON Lines file")
    for bound in plan.stages:
        stage = bound.stage
        checked = [stage.preflight()]
        if isinstance(stage, ReadsGenerators):
            checked.append(stage.check_generators(lambda bound=bound: run_generators(plan, bound)))
        done.extend(line for line in checked if line)
    done.extend(_check_model_files(plan))
    done.extend(_check_memory(plan))
    return done


def _check_model_files(plan: Any) -> list[str]:
    """Refuse a damaged or incomplete local model folder before any work (engine.runtime.model_files)."""
    from engine.runtime.memory import local_model_path
    from engine.runtime.model_files import check_model_dir

    checked = []
    for need in plan.model_needs():
        path = local_model_path(need.model)
        if path is not None and path.is_dir():
            check_model_dir(path, f"{need.where}.model")
            checked.append(f"model files: {need.where}: {path} is whole")
    return checked


def _check_memory(plan: Any) -> list[str]:
    """Refuse a model that cannot fit its device even alone (engine.runtime.memory)."""
    from engine.runtime.memory import check_plan, plan_models

    planned_models = plan_models(plan.model_needs())
    check_plan(planned_models)
    return [memory_line(planned) for planned in planned_models]


def memory_line(planned: Any) -> str:
    """The memory line of one planned model; a warning where it is estimated above its budget but
    was not refused (a vLLM engine on CUDA whose weights alone fit, or are unknown here: it takes
    its gpu_memory_utilization share at start and starts only with that much free)."""
    if planned.estimated_bytes is not None and planned.estimated_bytes > planned.budget_bytes:
        return (f"{WARNING_PREFIX}memory: {planned.line()}, more than is available; it starts only with that much "
                f"free (lower gpu_memory_utilization, or free the device)")
    return f"memory: {planned.line()}"


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


def run_generators(plan: Any, bound: Any) -> list[str | None]:
    """The generator names a bound stage will see (None: input rows without a generator)."""
    generated = plan.generated_names(bound)
    if generated is not None:
        return generated
    if plan.input_source is not None:
        return [None]
    return sorted(set(_input_generators(plan.config.input)), key=lambda g: (g is None, g or ""))


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
