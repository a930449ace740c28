"""Compatibility names for code written before engine.runtime: prefer `engine.runtime`."""
from __future__ import annotations

from engine.runtime.names import (  # noqa: F401 - re-exported
    DEMO_MODELS_ENV,
    DEMO_PREFIX,
    PYPI_MODELS,
    PYPI_PREFIX,
    demo_models_dir,
    resolve_model,
)


def resolve_model_path(name_or_path: str) -> str:
    """What `from_pretrained` is given for a configured name (revision aside); builds `demo:` models."""
    return resolve_model(name_or_path).path
