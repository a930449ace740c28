"""The name of a scorer's task: readable (metric, model) and unique (a digest of its options).

Below the scorer kinds and their registry (engine.metrics.base), which both use it.
"""
from __future__ import annotations

import re
from typing import Any

from engine.params import option_digest


def options_digest(params: Any) -> str:
    """8 hex digits over every option of an entry but its device: part of its task name (renamed
    keys under their old names, so a task keeps its name across the rename)."""
    return option_digest(params.to_dict(identity=True), exclude=("device",))


def task_name_for(metric: str, model: str, params: Any) -> str:
    """A stable, filesystem-safe part-name stem for one scorer configuration.

    Readable (metric + the model's last path component) and unique: the digest covers every
    option that can change a number, so two scorers of one model never share part files.
    """
    digest = options_digest(params)
    short = re.sub(r"[^A-Za-z0-9._-]+", "-", model.rstrip("/").rsplit("/", 1)[-1].split(":")[-1]).strip("-.")
    return f"{metric}-{short[:40] or 'model'}-{digest}"
