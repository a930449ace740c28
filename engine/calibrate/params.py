"""Options of stage `calibrate`: the KDE classifier's settings and which groupings each task
kind is fitted under."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.errors import ConfigError
from engine.params import Params, require

GROUPING_KEYS = ("language", "generator")  # what `group_by` may name, in canonical order
TASK_KINDS = ("agreement", "noise")
DEFAULT_GROUP_BY: dict[str, tuple[tuple[str, ...], ...]] = {
    "agreement": (("language",),),
    "noise": (("language", "generator"), ("language",)),
}


def _normalise_group_by(value: Any) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Task kind -> groupings. A grouping may be written as one list of keys, or a list of lists."""
    out = dict(DEFAULT_GROUP_BY)
    for kind, groupings in (value or {}).items():
        where = f"group_by.{kind}"
        if kind not in TASK_KINDS:
            raise ConfigError(f"{where}: unknown task kind; allowed: {', '.join(TASK_KINDS)}")
        groupings = tuple(groupings)
        if groupings and all(isinstance(g, str) for g in groupings):
            groupings = (groupings,)
        if not groupings:
            raise ConfigError(f"{where}: empty; give at least one grouping, e.g. [language, generator]")
        canonical = []
        for g in groupings:
            keys = tuple(g) if isinstance(g, (list, tuple)) else (g,)
            unknown = [k for k in keys if k not in GROUPING_KEYS]
            if unknown or "language" not in keys or len(set(keys)) != len(keys):
                raise ConfigError(
                    f"{where}: got {list(keys)!r}; allowed: [language] or [language, generator] "
                    "(every group is fitted per language)"
                )
            c = tuple(k for k in GROUPING_KEYS if k in keys)
            if c not in canonical:
                canonical.append(c)
        out[kind] = tuple(canonical)
    return out


@dataclass(frozen=True)
class CalibrateParams(Params):
    """Options of stage `calibrate`."""

    grid_points: int = 1024
    """KDE grid points over each group's score range."""
    priors: Literal["equal", "empirical"] = "equal"
    """class weights of the KDE classifier: `equal` or the classes' `empirical` shares."""
    bootstrap: int = 200
    """bootstrap replicates for the confidence intervals of kappa and F1 (0: none)."""
    seed: int = 0
    """bootstrap seed."""
    confidence: float = 0.95
    """level of the bootstrap confidence intervals."""
    min_class_size: int = 2
    """a class with fewer scores leaves its group "not fitted"."""
    group_by: dict[str, tuple[Any, ...]] = field(default_factory=lambda: dict(DEFAULT_GROUP_BY))
    """per task kind (`agreement`, `noise`) the groupings to fit, each `[language]` or
    `[language, generator]`; e.g. `{noise: [[language, generator], [language]]}`. A kind left
    out keeps its default: agreement per language, noise per generator and pooled."""
    min_bandwidth: float = 1e-6
    """floor of each class's KDE bandwidth (the study's 1e-6); 0: a constant class is not fitted."""

    def __post_init__(self) -> None:
        require(self.grid_points >= 2, "grid_points", self.grid_points, "an integer >= 2")
        require(self.bootstrap >= 0, "bootstrap", self.bootstrap, "an integer >= 0 (0: no intervals)")
        require(0.0 < self.confidence < 1.0, "confidence", self.confidence, "a number strictly between 0 and 1")
        require(0.0 <= self.min_bandwidth < math.inf, "min_bandwidth", self.min_bandwidth, "a number >= 0")
        require(self.min_class_size >= 2, "min_class_size", self.min_class_size,
                "an integer >= 2 (a KDE bandwidth needs a standard deviation)")
        object.__setattr__(self, "group_by", _normalise_group_by(self.group_by))

    def __hash__(self) -> int:  # group_by is a dict: hash the plain form instead
        return hash(repr(sorted(self.to_dict().items())))

