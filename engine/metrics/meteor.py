"""METEOR following nltk 3.10's algorithm (exact -> stem -> WordNet synonyms), per language.

Same alignment order and tie-breaking as `nltk.translate.meteor_score` so that English with
synonyms off equals nltk exactly; stems are cached per word (nltk re-stems every call).
Stemming is language-aware: Porter for English, Snowball for Dutch, none where nltk has no
stemmer (Greek, Polish, Chinese). WordNet synonyms run only for English and only when the
WordNet data is installed (nltk's own, or Debian's WordNet 3.0 packages through
engine.metrics.wordnet_data); the signature says `syn:wordnet-<version>` or `syn:no`.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Callable, Sequence

logger = logging.getLogger(__name__)

ALPHA, BETA, GAMMA = 0.9, 3.0, 0.5


def wordnet_version() -> str | None:
    """The WordNet version nltk loads ('3.0'), or None when there is none (see wordnet_data)."""
    from engine.metrics.wordnet_data import ensure_wordnet

    return ensure_wordnet()


def wordnet_available() -> bool:
    """A WordNet is there to load (folders checked, nltk not imported: config checks stay fast);
    the signature names the version actually loaded, or `syn:no` when loading fails."""
    from engine.metrics.wordnet_data import wordnet_findable

    return wordnet_findable()


@lru_cache(maxsize=None)
def _stemmer(language: str) -> tuple[str, Callable[[str], str] | None]:
    lang = language.lower().split("-")[0].split("_")[0]
    if lang == "en":
        from nltk.stem.porter import PorterStemmer

        return "porter", lru_cache(maxsize=200_000)(PorterStemmer().stem)
    if lang == "nl":
        from nltk.stem.snowball import SnowballStemmer

        return "snowball-dutch", lru_cache(maxsize=200_000)(SnowballStemmer("dutch").stem)
    return "none", None


@dataclass(frozen=True)
class MeteorParams:
    synonyms: bool = False
    alpha: float = ALPHA
    beta: float = BETA
    gamma: float = GAMMA
    _synonym_cache: dict = field(default_factory=dict, compare=False, repr=False)

    def signature_fields(self, language: str) -> dict[str, object]:
        stem_name, _ = _stemmer(language)
        return {
            "metric": "meteor",
            "alpha": self.alpha,
            "beta": self.beta,
            "gamma": self.gamma,
            "stem": stem_name,
            "syn": f"wordnet-{version}" if (self.synonyms and stem_name == "porter" and (version := wordnet_version())) else "no",
            "tok": "unicode-words+punct",
        }


Enum = list[tuple[int, str]]


def _match(hyp: Enum, ref: Enum) -> tuple[list[tuple[int, int]], Enum, Enum]:
    """nltk's `_match_enums`: from the last hypothesis word back, take the last free ref position."""
    ref_positions: dict[str, list[int]] = defaultdict(list)
    for j, (_, word) in enumerate(ref):
        ref_positions[word].append(j)
    matches, hyp_used, ref_used = [], set(), set()
    for i in range(len(hyp) - 1, -1, -1):
        positions = ref_positions.get(hyp[i][1])
        if positions:
            j = positions.pop()
            hyp_used.add(i)
            ref_used.add(j)
            matches.append((hyp[i][0], ref[j][0]))
    return (
        matches,
        [p for i, p in enumerate(hyp) if i not in hyp_used],
        [p for j, p in enumerate(ref) if j not in ref_used],
    )


def _synonyms(word: str, cache: dict) -> set[str]:
    if word not in cache:
        from nltk.corpus import wordnet

        cache[word] = set(
            chain.from_iterable(
                (lemma.name() for lemma in synset.lemmas() if "_" not in lemma.name()) for synset in wordnet.synsets(word)
            )
        ) | {word}
    return cache[word]


def _synonym_match(hyp: Enum, ref: Enum, cache: dict) -> tuple[list[tuple[int, int]], Enum, Enum]:
    """nltk's `_enum_wordnetsyn_match`, synonyms cached per word."""
    ref_positions: dict[str, list[int]] = defaultdict(list)
    for j, (_, word) in enumerate(ref):
        ref_positions[word].append(j)
    matches, hyp_used, ref_used = [], set(), set()
    for i in range(len(hyp) - 1, -1, -1):
        best_j, best_word = -1, None
        for synonym in _synonyms(hyp[i][1], cache):
            positions = ref_positions.get(synonym)
            if positions and positions[-1] > best_j:
                best_j, best_word = positions[-1], synonym
        if best_word is not None:
            ref_positions[best_word].pop()
            hyp_used.add(i)
            ref_used.add(best_j)
            matches.append((hyp[i][0], ref[best_j][0]))
    return (
        matches,
        [p for i, p in enumerate(hyp) if i not in hyp_used],
        [p for j, p in enumerate(ref) if j not in ref_used],
    )


def _count_chunks(matches: list[tuple[int, int]]) -> int:
    chunks = 1
    for (h0, r0), (h1, r1) in zip(matches, matches[1:]):
        if not (h1 == h0 + 1 and r1 == r0 + 1):
            chunks += 1
    return chunks


def meteor_from_tokens(reference: Sequence[str], hypothesis: Sequence[str], language: str, params: MeteorParams) -> float:
    """METEOR of one tokenised hypothesis against one tokenised reference."""
    hyp: Enum = list(enumerate(w.lower() for w in hypothesis))
    ref: Enum = list(enumerate(w.lower() for w in reference))
    if not hyp or not ref:
        return 0.0
    matches, hyp_left, ref_left = _match(hyp, ref)
    stem_name, stem = _stemmer(language)
    if stem is not None:
        stem_matches, hyp_left, ref_left = _match(
            [(i, stem(w)) for i, w in hyp_left], [(j, stem(w)) for j, w in ref_left]
        )
        matches += stem_matches
        if params.synonyms and stem_name == "porter":
            syn_matches, _, _ = _synonym_match(hyp_left, ref_left, params._synonym_cache)
            matches += syn_matches
    if not matches:
        return 0.0
    matches.sort(key=lambda pair: pair[0])
    precision = len(matches) / len(hyp)
    recall = len(matches) / len(ref)
    fmean = precision * recall / (params.alpha * precision + (1 - params.alpha) * recall)
    fragmentation = _count_chunks(matches) / len(matches)
    return (1 - params.gamma * fragmentation**params.beta) * fmean
