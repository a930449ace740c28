"""Config-time checks that need more than the YAML: the input file and what it implies.

`load_config` checks every key and value on its own; `preflight` adds the checks that look at
the input table or across sections, so a mistake stops the run before any work: the input
exists and is readable (unless a source stage makes it); each listed stage's own
`Stage.preflight` hook; every local model folder the run loads is whole (engine.runtime.model_files;
DamagedModelError names the file); every model fits its device's memory budget on its own
(engine.runtime.memory). Every check reads the RunPlan, never stage names.
`babelscore config check` runs `load_config` and `preflight` and nothing else; `babelscore run`
runs them before it opens the run directory.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from engine.errors import ConfigError

logger = logging.getLogger(__name__)


# A returned line that is a warning, not a passed check, starts with this.
WARNING_PREFIX = "warning: "


def preflight(plan: Any) -> list[str]:
    """Run every check of a RunPlan (engine.stages.plan); ConfigError on the first failing one.
    Returns what was checked (for the CLI)."""
    config = plan.config
    done = []
    if plan.input_source is None:
        _check_input(config.input)
        done.append(f"input {config.input} exists and is a Parquet / JSON Lines file")
    for bound in plan.stages:
        checked = bound.stage.preflight()
        if checked:
            done.append(checked)
    done.extend(_check_model_files(plan))
    done.extend(_check_memory(plan))
    return done


def _check_model_files(plan: Any) -> list[str]:
    """Refuse a damaged or incomplete local model folder before any work (engine.runtime.model_files)."""
    from engine.runtime.model_config import local_model_path
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
