"""What the generate section needs beside its parts: config checks, its tasks (one per
generator, model-major) and the models they load."""
from __future__ import annotations

from typing import Any

from engine.errors import ConfigError
from engine.generate.params import GenerateParams, GenerateSection
from engine.stages.base import StageTask


def check_section(section: GenerateSection) -> None:
    """Every generator's model and tokenizer resolve; every missing one is named at once."""
    from engine.params import error_messages, raise_all
    from engine.runtime import check_model_name

    errors: list[str] = []
    for i, g in enumerate(section.generators):
        try:
            check_model_name(g.model, f"generate.generators[{i}].model")
            if g.tokenizer_name != g.model:
                check_model_name(g.tokenizer_name, f"generate.generators[{i}].tokenizer", kind="tokenizer")
        except ConfigError as exc:
            errors.extend(error_messages(exc))
    raise_all(errors)


def section_tasks(section: GenerateSection, stage: str) -> list[StageTask[GenerateParams]]:
    """One task per generator, keyed by its model so parts of one model run together."""
    return [StageTask(stage, f"generate-{g.generator_name}", f"generate:{g.model}", i, params=g)
            for i, g in enumerate(section.generators)]


def model_needs(section: GenerateSection, stage: str) -> list[Any]:
    """The models its generators load (engine.runtime.memory.ModelNeed)."""
    from engine.runtime.memory import ModelNeed

    return [ModelNeed(g.model, stage, f"generate.generators[{i}]", g.backend, g.dtype, g.device, g.max_model_len,
                      g.gpu_memory_utilization, g.tensor_parallel_size)
            for i, g in enumerate(section.generators)]
