"""Lexical metrics: sentence BLEU (sacrebleu), ROUGE-L (Unicode-aware LCS) and METEOR.

Each metric splits preprocessing (tokenisation, cached per distinct text so that the 5
generators of a file share their reference's work), per-segment statistics, and the final
formula, and carries a signature built from declared fields (sacrebleu's idea).
"""
from __future__ import annotations

import logging
from functools import lru_cache
from typing import Sequence

from engine.errors import ConfigError
from engine.items import ScoreItem, ScoreRow
from engine.metrics.bleu import SentenceBleu
from engine.metrics.meteor import MeteorParams, meteor_from_tokens, wordnet_available
from engine.metrics.params import LexicalParams
from engine.metrics.text import UnicodeRougeTokenizer, meteor_tokens
from engine.signature import format_signature, package_version

logger = logging.getLogger(__name__)

# Caches hold the texts of one part (a file's references are shared by its neighbouring
# generators); they are cleared after every `score()` so memory does not grow with the run.
_CACHE_SIZE = 8192
STUDY_LANGUAGES = ("en", "nl", "zh", "el", "pl")


def bleu_tokenizer_for(language: str, choice: str) -> str:
    if choice != "auto":
        return choice
    return "zh" if language.lower().startswith("zh") else "13a"


def lcs_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common subsequence, bit-parallel (Hyyroe 2004).

    One big-integer update per element of `a` instead of an O(len(a) * len(b)) table.
    """
    if not a or not b:
        return 0
    match_masks: dict[int, int] = {}
    for position, symbol in enumerate(b):
        match_masks[symbol] = match_masks.get(symbol, 0) | (1 << position)
    full = (1 << len(b)) - 1
    row = full
    for symbol in a:
        matches = row & match_masks.get(symbol, 0)
        row = ((row + matches) | (row - matches)) & full
    return len(b) - bin(row).count("1")


class RougeL:
    """ROUGE-L P/R/F as rouge-score computes them, on Unicode-aware tokens."""

    signature_fields = {
        "metric": "rougeL",
        "tok": "unicode-words+cjk-chars",
        "case": "lc",
        "stem": "no",
        "rouge-score-compatible": "ascii",
    }

    def __init__(self) -> None:
        self._tokenizer = UnicodeRougeTokenizer()
        self._vocab: dict[str, int] = {}
        self._ids = lru_cache(maxsize=_CACHE_SIZE)(self._ids_uncached)

    def _ids_uncached(self, text: str) -> tuple[int, ...]:
        vocab = self._vocab
        return tuple(vocab.setdefault(token, len(vocab)) for token in self._tokenizer.tokenize(text))

    def score(self, prediction: str, target: str) -> tuple[float, float, float]:
        pred_ids, target_ids = self._ids(prediction), self._ids(target)
        if not pred_ids or not target_ids:
            return 0.0, 0.0, 0.0
        lcs = lcs_length(target_ids, pred_ids)
        precision = lcs / len(pred_ids)
        recall = lcs / len(target_ids)
        f = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        return precision, recall, f


class LexicalScorer:
    """The lexical metrics over items, as one scorer of kind `lexical` (no model)."""

    kind = "lexical"
    Params = LexicalParams

    def __init__(self, params: LexicalParams, *, stage: str = ""):
        self.params = params
        self.stage = stage  # it loads no model; taken like every scorer's
        self._bleu: dict[str, SentenceBleu] = {}
        self._rouge = RougeL()
        self._meteor_tokens = lru_cache(maxsize=_CACHE_SIZE)(meteor_tokens)
        # Loading WordNet takes seconds (tens on a busy machine): only when METEOR is asked for.
        wants_synonyms = "meteor" in params.metrics and params.meteor_synonyms == "auto"
        self._meteor = MeteorParams(synonyms=wants_synonyms and wordnet_available())

    @property
    def task_name(self) -> str:
        from engine.metrics.task_names import options_digest

        # Named from every option, so two lexical entries never share a part file.
        return f"lexical-{options_digest(self.params)}"

    @property
    def model_key(self) -> str:
        return ""

    def _bleu_for(self, language: str) -> SentenceBleu:
        tokenize = bleu_tokenizer_for(language, self.params.bleu_tokenize)
        if tokenize not in self._bleu:
            try:
                self._bleu[tokenize] = SentenceBleu(tokenize)
            except Exception as exc:  # sacrebleu raises for unknown/unavailable tokenizers
                raise ConfigError(f"score.scorers[lexical].bleu_tokenize: sacrebleu cannot use {tokenize!r}: {exc}") from exc
        return self._bleu[tokenize]

    def signature(self, metric: str, language: str) -> str:
        span = {"span": self.params.span}
        if metric == "bleu":
            return format_signature({**self._bleu_for(language).signature_fields, **span})
        if metric == "rougeL":
            return format_signature({**RougeL.signature_fields, **span, "babelscore": _version()})
        return format_signature({**self._meteor.signature_fields(language), **span, "nltk": package_version("nltk")})

    def signatures(self) -> dict[str, str]:
        return {
            f"{metric}/{language}": self.signature(metric, language)
            for metric in self.params.metrics
            for language in STUDY_LANGUAGES
        }

    def _texts(self, item: ScoreItem) -> tuple[str, str]:
        if self.params.span == "whole":
            return item.candidate_comment, item.reference
        return item.prediction, item.reference_tail

    def clear_caches(self) -> None:
        """Forget cached tokenisations (ours and sacrebleu's class-level tokenizer caches)."""
        self._meteor_tokens.cache_clear()
        self._rouge = RougeL()
        for bleu in self._bleu.values():
            bleu.clear_cache()

    def score(self, items: Sequence[ScoreItem]) -> list[ScoreRow]:
        try:
            return self._score(items)
        finally:
            self.clear_caches()

    def _score(self, items: Sequence[ScoreItem]) -> list[ScoreRow]:
        rows: list[ScoreRow] = []
        for item in items:
            candidate, reference = self._texts(item)
            for metric in self.params.metrics:
                signature = self.signature(metric, item.language)
                try:
                    values = self._score_one(metric, candidate, reference, item.language)
                except Exception as exc:  # one bad row must not end the run
                    logger.warning("%s failed on %s: %s", metric, item.sample_id, exc)
                    variants = ("P", "R", "F") if metric == "rougeL" else ("score",)
                    rows.extend(
                        ScoreRow(item.sample_id, item.noise, metric, "", "", v, float("nan"), signature, f"{type(exc).__name__}: {exc}")
                        for v in variants
                    )
                    continue
                rows.extend(
                    ScoreRow(item.sample_id, item.noise, metric, "", "", variant, value, signature) for variant, value in values
                )
        return rows

    def _score_one(self, metric: str, candidate: str, reference: str, language: str) -> list[tuple[str, float]]:
        if metric == "bleu":
            return [("score", self._bleu_for(language).score(candidate, reference))]
        if metric == "rougeL":
            p, r, f = self._rouge.score(candidate, reference)
            return [("P", p), ("R", r), ("F", f)]
        return [
            (
                "score",
                meteor_from_tokens(self._meteor_tokens(reference), self._meteor_tokens(candidate), language, self._meteor),
            )
        ]


def _version() -> str:
    from engine.version import __version__

    return __version__
