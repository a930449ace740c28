"""Copies of engine/ with one violation planted, for the structure checks to find."""
from __future__ import annotations

import shutil
from collections.abc import Callable
from itertools import count
from pathlib import Path


def engine_planter(engine: Path, root: Path) -> Callable[[str, str], Path]:
    """A function that copies `engine` under `root` afresh on each call (~1 MB of source: a
    fraction of a second) and appends `text` to the module at `relative` in the copy."""
    numbers = count()

    def plant(relative: str, text: str) -> Path:
        target = root / f"copy{next(numbers)}" / "engine"
        shutil.copytree(engine, target, ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.yaml", "*.txt", "*.parquet"))
        with (target / relative).open("a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
        return target

    return plant
