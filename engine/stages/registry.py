"""The registry of stages: adding a stage is one module and one line here.

Part stages are listed in the order they run; each reads the outputs of earlier ones.
`build` makes the input and `calibrate` / `report` run in the driver after every part.
"""
from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.stages.base import Stage

# name -> "module:Class", in run order.
PART_STAGES: dict[str, str] = {
    "generate": "engine.stages.generate:GenerateStage",
    "noise": "engine.stages.noise:NoiseStage",
    "score": "engine.stages.score:ScoreStage",
    "judge": "engine.stages.judge:JudgeStage",
}
DRIVER_STAGES = ("calibrate", "report")
STAGE_ORDER = ("build", *PART_STAGES, *DRIVER_STAGES)


@cache
def get_stage(name: str) -> "Stage":
    module_name, class_name = PART_STAGES[name].split(":")
    return getattr(importlib.import_module(module_name), class_name)()


def part_stages_of(stages: tuple[str, ...]) -> list["Stage"]:
    return [get_stage(name) for name in PART_STAGES if name in stages]
