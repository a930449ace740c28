"""The `perturb:` section (its Stage is engine/perturb/stage.py): the perturbation families'
options and those of the sensitivity and significance analyses."""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.params import Params, require
from engine.perturb.families import FAMILIES, FamilyOptions


@dataclass(frozen=True)
class SettingRef(Params):
    """One metric setting, as in the score rows."""

    metric: str
    """the score rows' `metric` (bleu, rougeL, meteor, bertscore, bartscore, ...)."""
    variant: str
    """the score rows' `variant` (score for BLEU and METEOR, P / R / F, forward / reverse / avg, ...)."""
    scorer: str = ""
    """the score rows' `scorer` (the model as configured; '' for lexical metrics)."""
    context: str = ""
    """the score rows' `context` (none / minimal / full; '' for lexical metrics)."""

    def key(self) -> tuple[str, str, str, str]:
        return (self.metric, self.scorer, self.variant, self.context)


@dataclass(frozen=True)
class SettingPair(Params):
    """A one-sided comparison: does `x` agree with the experts better than `y`?"""

    x: SettingRef
    """the setting claimed to agree better with the expert labels."""
    y: SettingRef
    """the setting it is compared with, on the same items."""


@dataclass(frozen=True)
class SignificanceParams(Params):
    """Options of the significance analysis (RUN/significance.parquet)."""

    correlation: str = "spearman"  # the r of Williams' test: spearman or pearson
    """the correlation Williams' test compares: `spearman` or `pearson`."""
    alpha: float = 0.05
    """significance level of the one-sided Williams' test (a finding gets a sentence below it)."""
    adjust: str = "holm"
    """multiple-comparison adjustment of p over a language's comparisons: `holm` or `none`."""
    context_pairs: bool = True  # each neural setting's full / minimal context against its none
    """test each neural setting's `full` and `minimal` context against its `none`."""
    pairs: tuple[SettingPair, ...] = ()
    """more comparisons, each `{x: setting, y: setting}` (H1: x agrees better than y)."""

    def __post_init__(self) -> None:
        require(self.correlation in ("spearman", "pearson"), "significance.correlation", self.correlation,
                "spearman or pearson")
        require(0.0 < self.alpha < 1.0, "significance.alpha", self.alpha, "a number strictly between 0 and 1")
        require(self.adjust in ("holm", "none"), "significance.adjust", self.adjust, "holm or none")


@dataclass(frozen=True)
class PerturbParams(Params):
    """Options of stage `perturb` and of the sensitivity and significance analyses."""

    families: tuple[str, ...] = tuple(FAMILIES)
    """perturbation families to apply (negation, identifier_swap, deletion, truncation,
    verbatim_repetition, pattern_repetition, code_copy, foreign_comment)."""
    seed: int = 0
    """perturbation seed; a perturbation depends only on (seed, sample_id, target, family)."""
    perturb_predictions: bool = False
    """also perturb the predictions of samples labelled correct."""
    truncate_min: float = 0.3
    """truncation keeps at least this share of the words (drawn uniformly up to truncate_max)."""
    truncate_max: float = 0.7
    """truncation keeps at most this share of the words."""
    repeat_copies: int = 2
    """verbatim repetition: extra copies of the repeated sentence."""
    pattern_repeats: int = 4
    """pattern repetition: times the 1-3 word pattern is appended."""
    foreign_pool_size: int = 64
    """per language, comments kept by the pre-pass for foreign_comment."""
    bootstrap: int = 1000
    """bootstrap replicates of the dS intervals (0: no intervals)."""
    confidence: float = 0.95
    """level of the dS intervals."""
    significance: SignificanceParams = field(default_factory=SignificanceParams)
    """options of the significance analysis (correlations and Williams' test)."""

    def __post_init__(self) -> None:
        require(len(self.families) > 0, "families", list(self.families), f"a non-empty list of {list(FAMILIES)}")
        require(len(set(self.families)) == len(self.families), "families", list(self.families), "each family at most once")
        for family in self.families:
            require(family in FAMILIES, "families", family, f"one of {list(FAMILIES)}")
        require(0.0 < self.truncate_min <= self.truncate_max < 1.0, "truncate_min", [self.truncate_min, self.truncate_max],
                "0 < truncate_min <= truncate_max < 1")
        require(self.repeat_copies >= 1, "repeat_copies", self.repeat_copies, "an integer >= 1")
        require(self.pattern_repeats >= 2, "pattern_repeats", self.pattern_repeats, "an integer >= 2")
        require(self.foreign_pool_size >= 1, "foreign_pool_size", self.foreign_pool_size, "an integer >= 1")
        require(self.bootstrap >= 0, "bootstrap", self.bootstrap, "an integer >= 0 (0: no intervals)")
        require(0.0 < self.confidence < 1.0, "confidence", self.confidence, "a number strictly between 0 and 1")

    def family_options(self) -> FamilyOptions:
        return FamilyOptions(self.truncate_min, self.truncate_max, self.repeat_copies, self.pattern_repeats)
