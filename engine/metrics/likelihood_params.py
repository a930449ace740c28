"""The likelihood scorer's options: a model entry and how its texts are scored."""
from __future__ import annotations

import dataclasses
import re
from typing import ClassVar, Literal, Mapping

from engine.params import ModelEntry, require
from engine.runtime import check_dtype, resolve_dtype

Direction = Literal["forward", "reverse", "avg"]
Context = Literal["none", "minimal", "full"]
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


@dataclasses.dataclass(frozen=True)
class LikelihoodParams(ModelEntry):
    """Options of a likelihood scorer: a model entry (`ModelEntry`: model, dtype, max_model_len),
    a seq2seq (BARTScore-style) or causal LM (GPTScore-style), and how it is scored. With
    max_model_len null the window is the model's (tokenizer / position embeddings).

    Keys:
        architecture: `auto` reads it from the model config; or force `seq2seq` / `causal`.
        directions: `forward` (reference -> prediction), `reverse`, `avg` (their mean).
        contexts: context settings to score in: `none`, `minimal`, `full`.
        strict_dtype: refuse the config when the device computes `dtype` > 4x slower than float32
            (otherwise float32 is used with one warning).
        batch_size: sequences per forward batch.
        device: `auto`, `cpu`, `cuda`, `cuda:N` or `mps`.
        separator: text between source and target for causal LMs (seq2seq models do not use it).
    """

    architecture: Literal["auto", "seq2seq", "causal"] = "auto"
    directions: tuple[Direction, ...] = ("forward", "reverse", "avg")
    contexts: tuple[Context, ...] = ("none",)
    strict_dtype: bool = False
    batch_size: int = 8
    device: str = "auto"
    separator: str = "\n"
    min_model_len: ClassVar[int] = 8
    renamed_keys: ClassVar[Mapping[str, str]] = {"max_length": "max_model_len"}
    identity_order: ClassVar[tuple[str, ...]] = ("model", "architecture", "directions", "contexts", "dtype",
                                                 "strict_dtype", "batch_size", "max_length", "device", "separator")

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, allowed in (("directions", ("forward", "reverse", "avg")), ("contexts", ("none", "minimal", "full"))):
            value = getattr(self, name)
            require(
                isinstance(value, tuple) and len(value) > 0 and len(set(value)) == len(value)
                and all(v in allowed for v in value),
                name, value, f"a non-empty list without repeats of {', '.join(allowed)}",
            )
        require(self.architecture in ("auto", "seq2seq", "causal"), "architecture", self.architecture, "auto, seq2seq, causal")
        require(isinstance(self.batch_size, int) and self.batch_size >= 1, "batch_size", self.batch_size, "an integer >= 1")
        require(isinstance(self.device, str) and bool(_DEVICE_RE.match(self.device)), "device", self.device,
                "auto, cpu, mps, cuda or cuda:N")
        require(isinstance(self.separator, str), "separator", self.separator, "a string")
        if self.strict_dtype:  # refused at config time, before any work, when the device is slow in it
            check_dtype(self.dtype, self.device, True, "dtype", self.model)

    @property
    def resolved_dtype(self) -> str:
        """The dtype the model runs in on this machine (the capability probe's choice for auto)."""
        return resolve_dtype(self.dtype, self.device, self.strict_dtype, self.model)
