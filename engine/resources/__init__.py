"""Data files shipped inside the package: model cards, the encoder layer table, demo content.

They are read through `importlib.resources`, so an installed wheel (not only a source
checkout) finds them. Users who want their own copy pass its path where an option allows one
(`cards_file:` of a generator).
"""
from __future__ import annotations

from importlib import resources

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
