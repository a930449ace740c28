"""Sentence BLEU exactly as sacrebleu computes it, with the repeated work done once.

sacrebleu's `sentence_bleu` builds a metric object per call and tokenises both sides every
time. Here one `BLEU` object per tokenizer is reused, a reference shared by a file's
generators is tokenised and counted once, and the `13a`/`zh` tokenizers run word by word with
a cache: their regular expressions only look at a character and its neighbours, and the line
is padded with spaces (`13a`) or word positions at the line's ends are kept (`zh`), so the
tokens of a line are the tokens of its words. Lines with the few constructs that act on the
whole line (`<skipped>`, line breaks, HTML entities) go through sacrebleu's tokenizer as is.
The final formula is sacrebleu's own `BLEU.compute_bleu`.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Callable

from sacrebleu.metrics.bleu import BLEU

from engine.signature import package_version

MAX_ORDER = 4
CACHE_SIZE = 8192  # texts of one part; cleared after each scored part
_WHOLE_LINE_MARKERS = ("<skipped>", "\n", "&")


class WordCachedTokenizer:
    """Equal to sacrebleu's `13a` or `zh` tokenizer on every line, faster on repeated words."""

    def __init__(self, name: str, tokenizer: Callable[[str], str]):
        self.name = name
        self._whole = tokenizer
        self._post = getattr(tokenizer, "_post_tokenizer", None)
        self._word_cache: dict[tuple[str, bool, bool], str] = {}
        self._is_chinese = getattr(tokenizer, "_is_chinese_char", None)

    def clear(self) -> None:
        self._word_cache.clear()

    def _word(self, word: str, first: bool, last: bool) -> str:
        key = (word, first, last)
        tokens = self._word_cache.get(key)
        if tokens is None:
            if self.name == "13a":
                tokens = self._post(f" {word} ")
            else:  # zh: Chinese characters spaced out, then the 13a regexes on the unpadded line
                spaced = "".join(f" {c} " if self._is_chinese(c) else c for c in word)
                tokens = self._post(("" if first else " ") + spaced + ("" if last else " "))
            if len(self._word_cache) < 4 * CACHE_SIZE:
                self._word_cache[key] = tokens
        return tokens

    def __call__(self, line: str) -> str:
        if self.name not in ("13a", "zh") or any(marker in line for marker in _WHOLE_LINE_MARKERS):
            return self._whole(line)
        words = line.split()
        if self.name == "13a":
            return " ".join(filter(None, (self._word(w, False, False) for w in words)))
        last = len(words) - 1
        return " ".join(filter(None, (self._word(w, i == 0, i == last) for i, w in enumerate(words))))


class SentenceBleu:
    """sacrebleu's sentence BLEU (exp smoothing, effective order), reference work shared."""

    def __init__(self, tokenize: str):
        self._bleu = BLEU(tokenize=tokenize, effective_order=True, smooth_method="exp")
        self.tokenizer = WordCachedTokenizer(tokenize, self._bleu.tokenizer)
        self.signature_fields = {"metric": "bleu", **_sacrebleu_signature_fields(self._bleu)}
        self._ngrams = lru_cache(maxsize=CACHE_SIZE)(self._ngrams_uncached)

    def _ngrams_uncached(self, text: str) -> tuple[Counter[tuple[str, ...]], int]:
        text = text.lower() if self._bleu.lowercase else text
        tokens = self.tokenizer(text.rstrip()).split()
        counts: Counter[tuple[str, ...]] = Counter()
        for n in range(1, MAX_ORDER + 1):
            counts.update(zip(*(tokens[i:] for i in range(n))))
        return counts, len(tokens)

    def clear_cache(self) -> None:
        self._ngrams.cache_clear()
        self.tokenizer.clear()

    def score(self, hypothesis: str, reference: str) -> float:
        ref_ngrams, ref_len = self._ngrams(reference)
        hyp_ngrams, hyp_len = self._ngrams(hypothesis)
        correct = [0] * MAX_ORDER
        total = [0] * MAX_ORDER
        for gram, count in hyp_ngrams.items():
            order = len(gram) - 1
            total[order] += count
            matched = ref_ngrams.get(gram)
            if matched:
                correct[order] += min(count, matched)
        return BLEU.compute_bleu(
            correct, total, hyp_len, ref_len, smooth_method="exp", effective_order=True, max_ngram_order=MAX_ORDER
        ).score


def _sacrebleu_signature_fields(bleu: BLEU) -> dict[str, str]:
    """The fields of sacrebleu's own sentence-BLEU signature (nrefs|case|eff|tok|smooth|version)."""
    return {
        "nrefs": "1",
        "case": "lc" if bleu.lowercase else "mixed",
        "eff": "yes",
        "tok": bleu.tokenizer_signature,
        "smooth": "exp",
        "version": package_version("sacrebleu"),
    }
