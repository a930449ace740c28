"""Data files shipped inside the package: model cards, the encoder layer table, demo content.

They are read through `importlib.resources`, so an installed wheel (not only a source
checkout) finds them. Users who want their own copy pass its path where an option allows one
(`cards_file:` of a generator).
"""
from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

logger = logging.getLogger(__name__)

MODEL_CARDS = "model_cards.yaml"
ENCODERS = "encoders.yaml"


def resource(*parts: str) -> resources.abc.Traversable:
    """A shipped file or folder, e.g. `resource("demo", "en.yaml")`."""
    node = resources.files(__name__)
    for part in parts:
        node = node.joinpath(part)
    return node


def read_text(*parts: str) -> str:
    """The UTF-8 text of a shipped file."""
    return resource(*parts).read_text(encoding="utf-8")


def default_layer_table(path: Path | None = None) -> dict[str, int]:
    """Model name -> default layer, from the table shipped in the package (or the file `path`)."""
    import yaml

    if path is None:
        text = read_text(ENCODERS)
    elif path.is_file():
        text = path.read_text(encoding="utf-8")
    else:
        logger.warning("default layer table %s is missing; models without `layer` use their last layer", path)
        return {}
    data = yaml.safe_load(text) or {}
    table = data.get("default_layers", {})
    return {str(k): int(v) for k, v in table.items()}
