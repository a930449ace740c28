"""Texts to token sequences for the likelihood scorer: which tokens the model reads, which it scores.

The conventions (BARTScore's formula in `none`, span tokens by overlap, windows around the
span, the causal prompt format) are in docs/metrics.md, "Likelihood scores".
"""
from __future__ import annotations

import dataclasses
from typing import Any

from engine.context import candidate_text, plan_windows, reference_text, span_token_mask
from engine.items import ScoreItem

Key = tuple[int, str, str]  # (item index, context, direction)


@dataclasses.dataclass
class LikelihoodInput:
    """One model input: `key` = (item index, context, direction); `scored[j]` says if target token j counts."""

    key: Key
    source: list[int]
    target: list[int]
    scored: list[bool]

    @property
    def length(self) -> int:
        return len(self.source) + len(self.target)


@dataclasses.dataclass
class Encoded:
    """A text's tokens split into the tokenizer's leading specials, content and trailing specials."""

    lead: list[int]
    content: list[int]
    offsets: list[tuple[int, int]]  # of `content`
    trail: list[int]


class EmptySpan(ValueError):
    """The target's scored span has no token: the item has no score in this setting."""


class TokenPlanner:
    """Plans the jobs of one `score` call; texts are tokenized once per call (shared by directions)."""

    def __init__(self, tokenizer: Any, architecture: str, max_length: int, separator: str):
        self.tokenizer = tokenizer
        self.architecture = architecture
        self.max_length = max_length
        self.separator = separator
        self.cache: dict[str, Encoded] = {}

    def plan(self, key: Key, item: ScoreItem) -> list[LikelihoodInput]:
        _, context, direction = key
        cand, ref = candidate_text(item, context), reference_text(item, context)  # type: ignore[arg-type]
        src, tgt = (ref, cand) if direction == "forward" else (cand, ref)
        if self.architecture == "seq2seq" and context == "none":
            return [self._plan_bartscore(key, src.text, tgt.text)]
        src_enc, tgt_enc = self._encode(src.text), self._encode(tgt.text)
        src_mask = span_token_mask(src_enc.offsets, src.span_start, src.span_end)
        tgt_mask = span_token_mask(tgt_enc.offsets, tgt.span_start, tgt.span_end)
        if self.architecture == "causal":
            return self._plan_causal(key, src_enc, src_mask, tgt_enc, tgt_mask, everything=context == "none")
        if not any(tgt_mask):
            raise EmptySpan(f"{direction}: no token of the target overlaps its scored span (empty prediction?)")
        budget = self.max_length - len(tgt_enc.lead) - len(tgt_enc.trail)
        src_budget = self.max_length - len(src_enc.lead) - len(src_enc.trail)
        if min(budget, src_budget) < 1:
            raise ValueError(f"max_length {self.max_length} leaves no room besides the special tokens")
        s_lo, s_hi = _window(src_mask, len(src_enc.content), src_budget)
        source = src_enc.lead + src_enc.content[s_lo:s_hi] + src_enc.trail
        t0, t1 = _span_range(tgt_mask)
        jobs = []
        for w in plan_windows(len(tgt_enc.content), t0, t1, budget):
            scored = [tgt_mask[i] and w.score_start <= i < w.score_end for i in range(w.start, w.end)]
            jobs.append(LikelihoodInput(key, source, tgt_enc.lead + tgt_enc.content[w.start:w.end] + tgt_enc.trail,
                            [False] * len(tgt_enc.lead) + scored + [False] * len(tgt_enc.trail)))
        return jobs

    def _encode(self, text: str) -> Encoded:
        if text not in self.cache:
            enc = self.tokenizer(text, add_special_tokens=True, return_offsets_mapping=True,
                                 return_special_tokens_mask=True)
            ids, offsets, special = enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]
            lead = 0
            while lead < len(ids) and special[lead]:
                lead += 1
            trail = len(ids)
            while trail > lead and special[trail - 1]:
                trail -= 1
            self.cache[text] = Encoded(list(ids[:lead]), list(ids[lead:trail]),
                                       [tuple(o) for o in offsets[lead:trail]], list(ids[trail:]))
        return self.cache[text]

    def _start_ids(self) -> list[int]:
        tok = self.tokenizer
        start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        return [start] if start is not None else []

    def _plan_bartscore(self, key: Key, src: str, tgt: str) -> LikelihoodInput:
        """The reference formula: whole texts with the tokenizer's specials, truncated; all target tokens count."""
        encode = self.tokenizer
        source = encode(src, max_length=self.max_length, truncation=True)["input_ids"]
        target = encode(tgt, max_length=self.max_length, truncation=True)["input_ids"]
        return LikelihoodInput(key, list(source), list(target), [True] * len(target))

    def _plan_causal(self, key: Key, src: Encoded, src_mask: list[bool], tgt: Encoded,
                     tgt_mask: list[bool], everything: bool) -> list[LikelihoodInput]:
        tok = self.tokenizer
        lead = src.lead or self._start_ids()
        separator = list(tok(self.separator, add_special_tokens=False)["input_ids"])
        target, mask = list(tgt.content), list(tgt_mask)
        if everything:  # `none`: the whole target, and its end, as BARTScore scores EOS
            target += [tok.eos_token_id] if tok.eos_token_id is not None else []
            mask = [True] * len(target)
        if not any(mask):
            raise EmptySpan(f"{key[2]}: no token of the target overlaps its scored span (empty prediction?)")
        budget = self.max_length - len(lead) - len(separator)
        if budget < 2:
            raise ValueError(f"max_length {self.max_length} leaves no room besides the prompt's fixed tokens")
        n_src, n_tgt = len(src.content), len(target)
        src_budget = n_src if n_src + n_tgt <= budget else min(n_src, max(budget - n_tgt, budget // 2))
        s_lo, s_hi = _window(src_mask, n_src, src_budget) if src_budget > 0 else (0, 0)
        prefix = lead + src.content[s_lo:s_hi] + separator
        if not prefix:
            raise ValueError("the tokenizer has no BOS/EOS token and the prompt is empty: nothing to condition on")
        t0, t1 = _span_range(mask)
        jobs = []
        for w in plan_windows(n_tgt, t0, t1, budget - (s_hi - s_lo)):
            scored = [mask[i] and w.score_start <= i < w.score_end for i in range(w.start, w.end)]
            jobs.append(LikelihoodInput(key, prefix, target[w.start:w.end], scored))
        return jobs


def _span_range(mask: list[bool]) -> tuple[int, int]:
    """[first, last + 1) of the True entries (the scored span in token indices)."""
    first = mask.index(True)
    last = len(mask) - 1 - mask[::-1].index(True)
    return first, last + 1


def _window(mask: list[bool], n_tokens: int, budget: int) -> tuple[int, int]:
    """One window of at most `budget` tokens around the span in `mask` (a source: read, not scored)."""
    if n_tokens <= budget:
        return 0, n_tokens
    if not any(mask):  # nothing to centre on: keep the beginning, as truncation would
        return 0, budget
    t0, t1 = _span_range(mask)
    first = plan_windows(n_tokens, t0, t1, budget)[0]
    return first.start, first.end


def describe_error(exc: BaseException) -> str:
    """The `error` of an item's rows: the exception, cut to 500 characters."""
    text = str(exc) if isinstance(exc, EmptySpan) else f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."
