"""FIM model cards: the prompt format of each generator family, read from a YAML file.

The default file ships in the package (engine/resources/model_cards.yaml); `cards_file:` of a
generator points to another. Families are data. Code never branches on a family name; it
reads the card: which special tokens exist, the order of prompt parts, the stop tokens and
stop strings, the prime rule. Adding a family is a YAML edit.
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Literal

import yaml

from engine.errors import ConfigError
from engine.params import Params, require
from engine.resources import MODEL_CARDS, read_text

PLACEHOLDERS = ("{prefix}", "{suffix}")
PRIME_RULES = ("letters", "text-tokens")
# The strings at whose first occurrence the study cut every generation (the cleaned prediction).
STUDY_STOP_STRINGS = (
    "<|file_separator|>", "<|endoftext|>", "<file_sep>", "<fim_suffix>", "<fim_middle>", "<fim_pad>",
    "<|fim_suffix|>", "<|fim_middle|>", "</s>", "<eos>", "<|end|>",
)


@dataclasses.dataclass(frozen=True)
class PromptPart(Params):
    """One part of a FIM prompt: a special token (by name in the card's `tokens`) or a text."""

    token: str | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        require((self.token is None) != (self.text is None), "prompt part", self.to_dict(),
                "exactly one of `token` (a name in `tokens`) or `text`")
        if self.text is not None:
            used = [p for p in PLACEHOLDERS if p in self.text]
            require(len(used) == 1 and self.text.count(used[0]) == 1, "prompt part.text", self.text,
                    "a text containing exactly one of {prefix} or {suffix}")


@dataclasses.dataclass(frozen=True)
class FimCard(Params):
    """The FIM facts of one generator family (the model cards file documents the fields)."""

    tokens: dict[str, str]
    prompt: tuple[PromptPart, ...]
    stop: tuple[str, ...]
    display: str
    stop_strings: tuple[str, ...] = STUDY_STOP_STRINGS
    prime_rule: Literal["letters", "text-tokens"] = "letters"
    tokenizer_kind: Literal["byte_level_bpe", "sentencepiece"] = "byte_level_bpe"
    add_bos: bool = False
    models: tuple[str, ...] = ()
    name: str = ""

    def __post_init__(self) -> None:
        where = f"generators.{self.name}" if self.name else "card"
        for i, part in enumerate(self.prompt):
            if part.token is not None:
                require(part.token in self.tokens, f"{where}.prompt[{i}].token", part.token,
                        f"a name in `tokens`: {sorted(self.tokens)}")
        texts = [p.text for p in self.prompt if p.text is not None]
        for placeholder in PLACEHOLDERS:
            require(sum(placeholder in t for t in texts) == 1, f"{where}.prompt", texts,
                    f"texts that use {placeholder} exactly once")
        for name in ("prefix", "suffix", "middle", "eos"):
            require(name in self.tokens, f"{where}.tokens", sorted(self.tokens), f"a mapping with a `{name}` entry")
        for name in self.stop:
            require(name in self.tokens, f"{where}.stop", name, f"a name in `tokens`: {sorted(self.tokens)}")
        for text in self.stop_strings:
            require(bool(text.strip()), f"{where}.stop_strings", text, "non-blank strings (a blank one would cut everything)")

    @property
    def prompt_token_names(self) -> tuple[str, ...]:
        """Names of the special tokens a prompt uses: these must exist in the tokenizer."""
        return tuple(p.token for p in self.prompt if p.token is not None)

    @property
    def required_tokens(self) -> tuple[str, ...]:
        """Special tokens (as strings) that must encode to one special id: the prompt's and EOS."""
        names = dict.fromkeys(self.prompt_token_names + ("eos",))
        return tuple(self.tokens[n] for n in names)

    @property
    def special_tokens(self) -> tuple[str, ...]:
        """Every special token the card knows, in declaration order."""
        return tuple(dict.fromkeys(self.tokens.values()))


@functools.lru_cache(maxsize=8)
def _load(path: str | None) -> dict[str, FimCard]:
    if path is None:
        path, text = f"(package) {MODEL_CARDS}", read_text(MODEL_CARDS)
    else:
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"model cards file {path!r} does not exist; pass an existing YAML file")
        text = file.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"model cards file {path!r} is not valid YAML: {exc}") from exc
    families = data.get("generators")
    if not isinstance(families, dict) or not families:
        raise ConfigError(f"model cards file {path!r}: `generators` must be a non-empty mapping of families")
    cards = {}
    for name, mapping in families.items():
        if not isinstance(mapping, dict):
            raise ConfigError(f"generators.{name}: got {mapping!r}; allowed: a mapping")
        cards[str(name)] = FimCard.from_mapping({**mapping, "name": str(name)}, where=f"generators.{name}")
    return cards


def load_cards(path: str | Path | None = None) -> dict[str, FimCard]:
    """All generator families of a model cards file (default: the one shipped in the package)."""
    return dict(_load(None if path is None else str(Path(path).resolve())))


def get_card(family: str, path: str | Path | None = None) -> FimCard:
    cards = load_cards(path)
    if family not in cards:
        raise ConfigError(f"card: got {family!r}; allowed: one of {sorted(cards)} (families in the model cards file)")
    return cards[family]


def card_for_model(model: str, path: str | Path | None = None) -> FimCard | None:
    """The family card whose `models` lists `model` (a hub id such as `bigcode/starcoder2-7b`)."""
    for card in load_cards(path).values():
        if model in card.models:
            return card
    return None
