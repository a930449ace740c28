"""The options of every scorer kind of the `score:` section (one entry of `score.scorers` each):
what the scorers in engine/metrics/ are built from and engine.score.params parses entries into."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, Mapping

from engine.context import CONTEXT_SETTINGS, ContextSetting
from engine.errors import ConfigError
from engine.params import ModelEntry, Params, require
from engine.runtime import check_dtype, resolve_dtype

LEXICAL_METRICS = ("bleu", "rougeL", "meteor")


@dataclass(frozen=True)
class LexicalParams(Params):
    """Options of the lexical scorer (each key is described under its field)."""

    metrics: tuple[Literal["bleu", "rougeL", "meteor"], ...] = LEXICAL_METRICS
    """lexical metrics to compute."""
    span: Literal["scored", "whole"] = "scored"
    """`scored` compares the parts after the prime; `whole` the whole comments, prime included."""
    bleu_tokenize: Literal["auto", "13a", "intl", "zh", "char", "none"] = "auto"
    """sacrebleu tokenizer; `auto`: `zh` for Chinese, `13a` otherwise."""
    meteor_synonyms: Literal["auto", "off"] = "auto"
    """`auto`: WordNet synonyms (English) when WordNet is installed; `off`: never."""

    def __post_init__(self) -> None:
        require(len(self.metrics) > 0, "metrics", self.metrics, f"a non-empty list drawn from {list(LEXICAL_METRICS)}")
        require(len(set(self.metrics)) == len(self.metrics), "metrics", self.metrics, "no repeated metric")


@dataclass(frozen=True)
class EmbeddingParams(ModelEntry):
    """Options of the embedding scorer (docs/metrics.md gives the semantics): a model entry
    (`ModelEntry`: model, dtype, max_model_len) and how it is matched. With max_model_len null
    the window is the tokenizer's model_max_length.
    """

    layer: int | None = None
    """layer whose output is matched (0 = embeddings; null: the packaged table engine/resources/encoders.yaml, else the last)."""
    all_layers: bool = False
    """P/R/F for every layer from one forward pass (variants `layer-K/P`...)."""
    idf: bool = False
    """weight tokens by log((M+1)/(df+1)) over the references."""
    baseline: str | None = None
    """`LAYER,P,R,F` file for baseline rescaling (null: none)."""
    mode: Literal["compat", "fast"] = "compat"
    """`compat` reproduces the bert_score package in context `none` (always float32: dtype `auto`
    or float32); `fast` allows other dtypes, `auto` there being the device probe's choice."""
    strict_dtype: bool = False
    """refuse the config when the device computes `dtype` > 4x slower than float32
    (otherwise float32 is used with one warning)."""
    contexts: tuple[ContextSetting, ...] = ("none",)
    """context settings to score in: `none`, `minimal`, `full`."""
    batch_tokens: int = 16384
    """padded tokens per forward batch."""
    mean_pool: bool = True
    """also the `mean-cos` variant (cosine of the mean-pooled span embeddings)."""
    device: str = "auto"
    """`auto`, `cpu`, `cuda`, `cuda:N` or `mps`."""
    min_model_len: ClassVar[int] = 3
    renamed_keys: ClassVar[Mapping[str, str]] = {"max_length": "max_model_len"}
    identity_order: ClassVar[tuple[str, ...]] = ("model", "layer", "all_layers", "idf", "baseline", "mode", "dtype",
                                                 "strict_dtype", "contexts", "batch_tokens", "max_length", "mean_pool",
                                                 "device")

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.layer is None or self.layer >= 0, "layer", self.layer, "null or an integer >= 0")
        require(len(self.contexts) > 0, "contexts", self.contexts, f"a non-empty list drawn from {list(CONTEXT_SETTINGS)}")
        require(len(set(self.contexts)) == len(self.contexts), "contexts", self.contexts, "no repeated setting")
        require(all(c in CONTEXT_SETTINGS for c in self.contexts), "contexts", self.contexts, f"settings drawn from {list(CONTEXT_SETTINGS)}")
        require(self.batch_tokens >= 1, "batch_tokens", self.batch_tokens, "an integer >= 1")
        require(
            self.mode == "fast" or self.dtype in ("auto", "float32"), "dtype", self.dtype,
            "auto or float32 in mode compat (exact bert_score, always float32); use mode: fast for bfloat16 or float16",
        )
        require(
            re.fullmatch(r"auto|cpu|cuda(:\d+)?|mps", self.device) is not None, "device", self.device,
            "auto, cpu, cuda, cuda:N or mps",
        )
        if self.strict_dtype:  # refused at config time, before any work, when the device is slow in it
            from engine.runtime import check_dtype

            check_dtype(self.requested_dtype, self.device, True, "dtype", self.model)
        if self.baseline is not None and not Path(self.baseline).expanduser().is_file():
            raise ConfigError(f"baseline: got {self.baseline!r}; allowed: null or an existing LAYER,P,R,F file")

    @property
    def requested_dtype(self) -> str:
        """compat mode reproduces bert_score, which runs float32: `auto` means float32 there."""
        return "float32" if self.mode == "compat" else self.dtype

    @property
    def resolved_dtype(self) -> str:
        """The dtype the model runs in on this machine (the capability probe's choice for auto)."""
        from engine.runtime import resolve_dtype

        return resolve_dtype(self.requested_dtype, self.device, self.strict_dtype, self.model)


Direction = Literal["forward", "reverse", "avg"]
Context = Literal["none", "minimal", "full"]
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


@dataclass(frozen=True)
class LikelihoodParams(ModelEntry):
    """Options of a likelihood scorer: a model entry (`ModelEntry`: model, dtype, max_model_len),
    a seq2seq (BARTScore-style) or causal LM (GPTScore-style), and how it is scored. With
    max_model_len null the window is the model's (tokenizer / position embeddings).
    """

    architecture: Literal["auto", "seq2seq", "causal"] = "auto"
    """`auto` reads it from the model config; or force `seq2seq` / `causal`."""
    directions: tuple[Direction, ...] = ("forward", "reverse", "avg")
    """`forward` (reference -> prediction), `reverse`, `avg` (their mean)."""
    contexts: tuple[Context, ...] = ("none",)
    """context settings to score in: `none`, `minimal`, `full`."""
    strict_dtype: bool = False
    """refuse the config when the device computes `dtype` > 4x slower than float32
    (otherwise float32 is used with one warning)."""
    batch_size: int = 8
    """sequences per forward batch."""
    device: str = "auto"
    """`auto`, `cpu`, `cuda`, `cuda:N` or `mps`."""
    separator: str = "\n"
    """text between source and target for causal LMs (seq2seq models do not use it)."""
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
