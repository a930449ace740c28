"""Bench profiles: what a short `babelscore bench` measured on one machine, to project a whole
run for that kind of machine elsewhere.

A CPU cannot know a GPU's speed, so a projection for other devices comes only from a profile
measured on that kind of device: run `babelscore bench CONFIG --sample 20 --write-profile p.json`
on the target (one GPU node), then `babelscore bench CONFIG --profile p.json --devices 4` here.
Every per-row figure of a profile is per input row (a sample of the input table), whatever the
stage reads (prompts, candidates, pairs): one unit for every stage, so a profile projects any
input size. Stages with a task table of their own (the round trip) count tasks instead.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from engine.config import RunConfig
from engine.config_reference import scorers_section
from engine.errors import ConfigError

FORMAT = 1


def scorers_of(config: RunConfig) -> list[str]:
    """The config's scorers as `kind:label` (label: the model, or '' for a model-free scorer): what a
    profile measured, and what a projection needs measured."""
    section = config.sections.get(scorers_section())
    return sorted({f"{s.kind}:{s.scorer_label}" for s in getattr(section, "scorers", ()) or ()})


def profile_of(result: Any, device: str, task_stages: set[str], config: RunConfig | None = None) -> dict[str, Any]:
    """The JSON profile of a BenchResult (engine.projection) measured on `device`; task_stages: the
    stages with a task table of their own (counted per task, not per input row); config: the run
    config benched (its scorers are recorded, so a projection of another config can be refused)."""
    steps = []
    for f in result.fits:
        unit = "task" if f.step.removeprefix("stage:") in task_stages else "row"
        base = result.full_tasks if unit == "task" else result.full_rows
        # per_row_s is per row the stage itself reads; times its rows for the whole input, per input row (or task)
        steps.append({"step": f.step, "model": f.model, "fixed_s": f.fixed_s, "unit": unit,
                      "per_unit_s": f.per_row_s * f.full_rows / max(1, base)})
    return {"format": FORMAT, "device": device, "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sample_rows": result.large.rows, "steps": steps,
            **({"scorers": scorers_of(config)} if config is not None else {})}


def write_profile(path: str | Path, profile: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(profile, indent=2) + "\n", encoding="utf-8")


def read_profile(path: str | Path) -> dict[str, Any]:
    try:
        profile = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--profile {str(path)!r}: not a readable bench profile ({exc}); write one with "
                          "`babelscore bench CONFIG --write-profile FILE` on the target machine") from None
    if not isinstance(profile, dict) or profile.get("format") != FORMAT or not isinstance(profile.get("steps"), list):
        raise ConfigError(f"--profile {str(path)!r}: not a bench profile of format {FORMAT}; write it again with "
                          "`babelscore bench CONFIG --write-profile FILE` on the target machine")
    problems = _field_problems(profile)
    if problems:
        raise ConfigError(f"--profile {str(path)!r}: not a valid bench profile: " + "; ".join(problems)
                          + "; write it again with `babelscore bench CONFIG --write-profile FILE` on the target machine")
    return profile


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _field_problems(profile: dict[str, Any]) -> list[str]:
    """Every field a projection reads, checked: a hand-edited or truncated profile is named, not a traceback."""
    problems = []
    if not isinstance(profile.get("device"), str):
        problems.append(f"device {profile.get('device')!r} is not a text")
    if "sample_rows" in profile and not (isinstance(profile["sample_rows"], int) and not isinstance(profile["sample_rows"], bool)):
        problems.append(f"sample_rows {profile['sample_rows']!r} is not a whole number")
    scorers = profile.get("scorers")
    if scorers is not None and not (isinstance(scorers, list) and all(isinstance(x, str) for x in scorers)):
        problems.append(f"scorers {scorers!r} is not a list of texts")
    for i, s in enumerate(profile["steps"]):
        if not isinstance(s, dict):
            problems.append(f"steps[{i}] is not an object")
            continue
        if not isinstance(s.get("step"), str) or not s.get("step"):
            problems.append(f"steps[{i}].step {s.get('step')!r} is not a step name")
        for key in ("fixed_s", "per_unit_s"):
            if not _number(s.get(key)):
                problems.append(f"steps[{i}].{key} {s.get(key)!r} is not a finite number of seconds >= 0")
        if s.get("unit", "row") not in ("row", "task"):
            problems.append(f"steps[{i}].unit {s.get('unit')!r} is not 'row' or 'task'")
        if not isinstance(s.get("model", False), bool):
            problems.append(f"steps[{i}].model {s.get('model')!r} is not true or false")
    return problems


def check_covers(profile: dict[str, Any], config: RunConfig, path: str | Path) -> list[str]:
    """Refuse a profile that did not measure every stage and scorer of `config` (a projection would
    leave them out and look complete); returns the notes to print beside the projection."""
    measured = {str(s["step"]).removeprefix("stage:") for s in profile["steps"]}
    missing = [stage for stage in config.stages if stage not in measured]
    recorded = profile.get("scorers")
    if recorded is not None:
        unmeasured = [s for s in scorers_of(config) if s not in set(recorded)]
    else:  # a profile without its scorers: one whose score stage loaded no model measured no model scorer
        step = f"stage:{scorers_section()}"
        score_loaded = any(s.get("model") for s in profile["steps"] if s["step"] == step)
        unmeasured = [] if score_loaded else [s for s in scorers_of(config) if not s.endswith(":")]
    if missing or unmeasured:
        what = ([f"stage(s) {', '.join(missing)}"] if missing else []) + \
               ([f"scorer(s) {', '.join(unmeasured)}"] if unmeasured else [])
        raise ConfigError(f"--profile {str(path)!r} did not measure {' and '.join(what)} of this config (it measured "
                          f"stages {', '.join(sorted(measured))}" + (f"; scorers {', '.join(recorded) or 'none'}" if recorded is not None else "")
                          + "): write a profile of this config with `babelscore bench CONFIG --write-profile FILE` on the target machine")
    if recorded is None and scorers_of(config):
        return ["  the profile does not record which scorers it measured: it projects this config's scorers only if "
                "they are the ones benched"]
    return []


def projection_lines(profile: dict[str, Any], full_rows: int, full_tasks: int, devices: int, here: str) -> list[str]:
    """The whole input's projected time per step from a profile, on `devices` devices of the profile's kind."""
    device = str(profile.get("device", "?"))
    lines = [f"projection from the profile measured on {device} ({profile.get('measured', '?')}, a sample of "
             f"{profile.get('sample_rows', '?')} rows), for {full_rows:,} input rows"
             + (f" and {full_tasks:,} round-trip tasks" if full_tasks else "") + f" on {devices} such device(s):",
             f"  {'stage':<22}{'fixed s':>9}{'s per unit':>12}{'unit':>6}{'projected s':>13}"]
    total = 0.0
    for s in profile["steps"]:
        count = full_tasks if s.get("unit") == "task" else full_rows
        per_unit = float(s.get("per_unit_s") or 0.0)
        spread = devices if s.get("model") else 1  # parts spread over the devices; driver steps do not
        seconds = float(s.get("fixed_s") or 0.0) + per_unit * count / spread
        total += seconds
        lines.append(f"  {str(s['step']).removeprefix('stage:'):<22}{float(s.get('fixed_s') or 0.0):>9.1f}"
                     f"{per_unit:>12.4f}{s.get('unit', 'row'):>6}{seconds:>13.1f}")
    lines.append(f"  {'total':<22}{'':>9}{'':>12}{'':>6}{total:>13.1f}")
    model_steps = [str(s["step"]).removeprefix("stage:") for s in profile["steps"] if s.get("model")]
    if devices > 1 and model_steps:
        lines.append(f"  per-row time of the model stages [{', '.join(model_steps)}] divided by {devices} (parts spread "
                     "evenly), fixed costs paid once per device in parallel: a projection, not a measurement")
    elif devices > 1:
        lines.append(f"  no stage of the profile loads a model: nothing is spread over the {devices} devices, the "
                     "projection is the one-device time")
    if device != here:
        lines.append(f"  measured on {device}, projected here on {here}: the numbers are the target's, not this machine's")
    if not math.isfinite(total):
        raise ConfigError("the profile holds a non-finite time; write it again on the target machine")
    return lines
