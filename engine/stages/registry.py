"""The registry of stages: adding a stage is one module and one line here.

Stages are listed in the order they run. Each stage's class says what it is (`kind`: source,
part or driver) and what rows it provides and consumes (engine.stages.plan resolves that data
flow); nothing else in the engine names a stage. `get_stage(name)` is the stage unbuilt (it
parses sections, declares the data flow and supplies the layout's params-free hooks); `build_stage(name, params)` is the stage built
from its validated section, what the RunPlan holds and ships to workers.
"""
from __future__ import annotations

import importlib
import json
import os
from functools import cache
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from engine.params import Params
    from engine.stages.base import Stage

# name -> "module:Class", in run order.
STAGES: dict[str, str] = {
    "build": "engine.build.stage:BuildStage",
    "generate": "engine.generate.stage:GenerateStage",
    "noise": "engine.noise.stage:NoiseStage",
    "perturb": "engine.perturb.stage:PerturbStage",
    "score": "engine.score.stage:ScoreStage",
    "judge": "engine.judge.stage:JudgeStage",
    "roundtrip": "engine.roundtrip.stage:RoundTripStage",
    "finetune": "engine.finetune.stage:FinetuneStage",
    "calibrate": "engine.calibrate.stage:CalibrateStage",
    "report": "engine.report.stage:ReportStage",
}
DEFAULT_STAGES = ("score",)  # `stages:` when a config leaves it out


# Workers in other processes (Ray) receive the driver's registry through this variable, so a
# stage registered in the driver (a plugin, a test) is known where its parts run.
REGISTRY_ENV = "BABELSCORE_STAGE_REGISTRY"


def forwarded_env() -> dict[str, str]:
    """The registry as an environment entry for the executors to send to their workers."""
    return {REGISTRY_ENV: json.dumps(STAGES)}


@cache
def get_stage(name: str) -> "Stage":
    target = STAGES.get(name) or json.loads(os.environ.get(REGISTRY_ENV) or "{}").get(name)
    if target is None:
        raise KeyError(f"no stage {name!r} in the registry (engine.stages.registry.STAGES)")
    return _load(target)()


def _load(target: str) -> Any:
    """The object a "module:Name" target names."""
    module_name, class_name = target.split(":")
    return getattr(importlib.import_module(module_name), class_name)


def build_stage(name: str, params: "Params | None" = None) -> "Stage":
    """Stage `name` built from its own validated section params (None: it takes no options)."""
    return type(get_stage(name))(params)


def params_type(name: str) -> "type[Params] | None":
    """The Params class of stage `name`'s section (None: the stage takes no options)."""
    target = get_stage(name).params_class
    return None if target is None else _load(target)


def stage_order() -> tuple[str, ...]:
    """Every registered stage's name, in run order (read when asked: a stage registered at run
    time, e.g. by a test, is included)."""
    return tuple(STAGES)


def listed(names: Iterable[str] | None = None, kind: str | None = None) -> list["Stage"]:
    """The unbuilt stages among `names` (None: every registered stage) in run order; only those
    of `kind` (part, source, driver) when given."""
    wanted = set(STAGES if names is None else names)
    out = [get_stage(name) for name in STAGES if name in wanted]
    return [s for s in out if kind is None or s.kind == kind]
