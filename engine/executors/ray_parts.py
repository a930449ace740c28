"""What the Ray driver sends and tracks: parts split into model-free tasks and per-model groups,
the calls in flight, and the environment every worker mirrors (no Ray needed)."""
from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Sequence

from engine.part_execution import PartTask

# Environment variables with this prefix are passed on to every worker (test hooks, switches).
FORWARDED_ENV_PREFIX = "BABELSCORE_"

Queue = deque[tuple[PartTask, int]]  # parts waiting, each with its 1-based attempt number


def needs_model(part: PartTask) -> bool:
    """Parts of a task with a model key go to that model's actor pool; the others run as Ray tasks.

    A stage says which by its tasks' `model_key` (engine.stages.base.StageTask): empty when a
    part loads no model worth keeping between parts (lexical scores, noise, oracle round trips).
    """
    return part.model_key != ""


def split_parts(parts: Sequence[PartTask]) -> tuple[Queue, deque[tuple[str, Queue]]]:
    """The model-free parts, and the model parts grouped by model in order of first appearance
    (one pool per model, ever), each at its first attempt."""
    tasks: Queue = deque((p, 1) for p in parts if not needs_model(p))
    by_model: dict[str, Queue] = {}
    for part in parts:
        if needs_model(part):
            by_model.setdefault(part.model_key, deque()).append((part, 1))
    return tasks, deque(by_model.items())


@dataclasses.dataclass
class PartCall:
    """One attempt at a part in flight."""

    part: PartTask
    attempt: int  # 1-based
    seq: int  # submission order (an actor runs its calls in this order)
    slot: int | None = None  # actor slot in the current pool; None for a task
    generation: int = 0  # which incarnation of that slot's actor


def driver_env() -> dict[str, str]:
    """The driver's variables every worker mirrors: BABELSCORE_* and those the stages forward."""
    from engine.stages.registry import forwarded_env

    return {**{k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIX)}, **forwarded_env()}


def apply_env(env: dict[str, str]) -> None:
    """Mirror the driver's BABELSCORE_* variables in this worker. Sent with each call rather than
    as a Ray runtime_env, which would start fresh worker processes for every distinct value."""
    for key in [k for k in os.environ if k.startswith(FORWARDED_ENV_PREFIX) and k not in env]:
        del os.environ[key]
    os.environ.update(env)
