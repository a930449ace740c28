"""What every scorer offers the score stage, and how the stage finds a scorer by kind.

A scorer is built once from its validated parameter object (a frozen dataclass with
`from_mapping`) and the stage it scores for (`cls(params, stage=...)`: the model registry
records who loaded a model, and a library module never names a stage), then scores any number
of items; heavy models load lazily on the first `score()` call so that planning a run never
loads a model.
"""
from __future__ import annotations

import importlib
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
    stage: str  # the stage its models load for ('' outside a run)

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


