"""What the score section needs beside its parts: config checks, its tasks, the models its
scorers load and the layer each embedding scorer reports."""
from __future__ import annotations

from typing import Any

from engine.score.params import ScorerSpec, ScoreSection, get_scorer
from engine.stages.base import StageTask


def check_section(section: ScoreSection) -> None:
    """Every scorer's model name resolves."""
    from engine.runtime import check_model_name

    for i, spec in enumerate(section.scorers):
        model = spec.params.to_dict().get("model")
        if model:
            check_model_name(model, f"score.scorers[{i}].model")


def section_tasks(section: ScoreSection, stage: str) -> list[StageTask[ScorerSpec]]:
    """One task per entry, named from its complete resolved options (engine.metrics.task_names),
    so two entries never share a part file."""
    out = []
    for i, spec in enumerate(section.scorers):
        scorer = get_scorer(spec, stage=stage)
        out.append(StageTask(stage, scorer.task_name, scorer.model_key, i, params=spec))
    return out


def model_needs(section: ScoreSection, stage: str) -> list[Any]:
    """The models its scorers load (engine.runtime.memory.ModelNeed)."""
    from engine.runtime.memory import ModelNeed

    needs = []
    for i, spec in enumerate(section.scorers):
        options = spec.params.to_dict()
        if options.get("model"):
            dtype = getattr(spec.params, "requested_dtype", options.get("dtype", "auto"))
            needs.append(ModelNeed(options["model"], stage, f"score.scorers[{i}]", "transformers", dtype,
                                   options.get("device", "auto")))
    return needs


def reported_layers(options: dict[str, Any]) -> dict[str, int]:
    """Embedding scorer (model) -> the layer it reports without a sweep: the entry's `layer`,
    else the shipped default (engine/resources/encoders.yaml). Models in neither are absent
    (they use their last layer)."""
    from engine.resources import default_layer_table

    table = default_layer_table()
    out = {}
    for scorer in (options or {}).get("scorers") or []:
        if scorer.get("kind") != "embedding" or not scorer.get("model"):
            continue
        layer = scorer.get("layer")
        if layer is None:
            layer = table.get(scorer["model"])
        if layer is not None:
            out[scorer["model"]] = int(layer)
    return out
