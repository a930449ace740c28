"""What every scorer offers the score stage, and how the stage finds a scorer by kind.

A scorer is built once from its validated parameter object (a frozen dataclass with
`from_mapping`) and then scores any number of items; heavy models load lazily on the first
`score()` call so that planning a run never loads a model.
"""
from __future__ import annotations

import importlib
import re
from typing import Any, Mapping, Protocol, Sequence

from engine.errors import ConfigError
from engine.items import ScoreItem, ScoreRow

# kind -> "module:Class"; imported lazily so a lexical-only run never imports torch.
SCORER_KINDS = {
    "lexical": "engine.metrics.lexical:LexicalScorer",
    "embedding": "engine.metrics.embedding:EmbeddingScorer",
    "likelihood": "engine.metrics.likelihood:LikelihoodScorer",
}


class Scorer(Protocol):
    kind: str

    @property
    def task_name(self) -> str:
        """Stable, filesystem-safe name of this scorer's work (used in part names)."""

    @property
    def model_key(self) -> str:
        """Scorers sharing a model key share a loaded model (model-major scheduling); '' = no model."""

    def signatures(self) -> dict[str, str]:
        """metric/context -> signature string, for the manifest."""

    def score(self, items: Sequence[ScoreItem]) -> list[ScoreRow]:
        """Score every item; a failing item yields rows with value NaN and `error` set."""


def scorer_class(kind: str) -> type:
    if kind not in SCORER_KINDS:
        raise ConfigError(f"score.scorers: unknown kind {kind!r}; allowed: {sorted(SCORER_KINDS)}")
    module_name, class_name = SCORER_KINDS[kind].split(":")
    return getattr(importlib.import_module(module_name), class_name)


def build_scorer(kind: str, params: Mapping[str, Any], where: str) -> Scorer:
    """Validate `params` with the scorer's own parameter class and build the scorer."""
    cls = scorer_class(kind)
    return cls(cls.Params.from_mapping(params, where=where))


def options_digest(params: Any) -> str:
    """8 hex digits over every option of an entry but its device: part of its task name (renamed
    keys under their old names, so a task keeps its name across the rename)."""
    from engine.params import option_digest

    return option_digest(params.to_dict(identity=True), exclude=("device",))


def task_name_for(metric: str, model: str, params: Any) -> str:
    """A stable, filesystem-safe part-name stem for one scorer configuration.

    Readable (metric + the model's last path component) and unique: the digest covers every
    option that can change a number, so two scorers of one model never share part files.
    """
    digest = options_digest(params)
    short = re.sub(r"[^A-Za-z0-9._-]+", "-", model.rstrip("/").rsplit("/", 1)[-1].split(":")[-1]).strip("-.")
    return f"{metric}-{short[:40] or 'model'}-{digest}"
