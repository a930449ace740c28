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

from engine.errors import ConfigError

FORMAT = 1


def profile_of(result: Any, device: str, task_stages: set[str]) -> dict[str, Any]:
    """The JSON profile of a BenchResult (engine.bench) measured on `device`; task_stages: the
    stages with a task table of their own (counted per task, not per input row)."""
    steps = []
    for f in result.fits:
        unit = "task" if f.step.removeprefix("stage:") in task_stages else "row"
        base = result.full_tasks if unit == "task" else result.full_rows
        # per_row_s is per row the stage itself reads; times its rows for the whole input, per input row (or task)
        steps.append({"step": f.step, "model": f.model, "fixed_s": f.fixed_s, "unit": unit,
                      "per_unit_s": f.per_row_s * f.full_rows / max(1, base)})
    return {"format": FORMAT, "device": device, "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sample_rows": result.large.rows, "steps": steps}


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
    return profile


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
    if devices > 1:
        lines.append(f"  model stages' per-row time divided by {devices} (parts spread evenly), fixed costs paid once per "
                     "device in parallel: a projection, not a measurement")
    if device != here:
        lines.append(f"  measured on {device}, projected here on {here}: the numbers are the target's, not this machine's")
    if not math.isfinite(total):
        raise ConfigError("the profile holds a non-finite time; write it again on the target machine")
    return lines
