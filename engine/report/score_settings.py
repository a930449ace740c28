"""Score settings and the orders the report shows them in: the config key of a score column,
language names and order, context order. Below both the loader and the tables, which use them."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from engine.records import LABELS

LANGUAGE_NAMES = {"en": "English", "nl": "Dutch", "zh": "Chinese", "el": "Greek", "pl": "Polish"}
STUDY_LANGUAGE_ORDER = ("en", "nl", "pl", "el", "zh")  # the order of languages in the study's tables
CONTEXT_ORDER = ("", "none", "minimal", "full")
# The variant that stands for a (metric, scorer) in figures; the tables keep every variant.
HEADLINE_ORDER = ("F", "score", "avg")
UNLABELLED = -1
BASE_LANGUAGE = "en"  # Table 1's ratios are to English, as in the study


class ConfigKey(NamedTuple):
    """One score setting: a column of the long score table."""

    metric: str
    scorer: str
    context: str
    variant: str

    def label(self, with_context: bool = True, with_variant: bool = True) -> str:
        parts = [self.metric]
        if self.scorer:
            parts.append(short_scorer(self.scorer))
        if with_context and self.context:
            parts.append(self.context)
        if with_variant and self.variant and self.variant != "score":
            parts.append(self.variant)
        return " · ".join(parts)


def short_scorer(scorer: str) -> str:
    return scorer.replace("pypi:", "").rstrip("/").rsplit("/", 1)[-1]


@lru_cache(maxsize=1)
def _iso_names() -> dict[str, str]:
    """ISO 639-1 code -> English name (engine/resources/languages.tsv)."""
    text = (Path(__file__).resolve().parent.parent / "resources" / "languages.tsv").read_text(encoding="utf-8")
    pairs = (line.split("\t", 1) for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {code.strip(): name.strip() for code, name in pairs}


def language_name(code: str) -> str:
    """The English name of a language code: any ISO 639-1 code ('de' -> German), a tag with a
    region or script ('pt-BR' -> Portuguese (BR)); a code the table lacks is shown as written."""
    if code in LANGUAGE_NAMES:
        return LANGUAGE_NAMES[code]
    text = str(code)
    base, _, rest = text.replace("_", "-").partition("-")
    name = _iso_names().get(base.lower())
    if name is None:
        return text
    return f"{name} ({rest})" if rest else name


def regions_out_of_order(region_labels: Any) -> bool:
    """True when the KDE classifier's regions, from low to high score, go down the label order
    (incorrect < partial < correct) somewhere: e.g. partial below incorrect. Such a classifier
    can still agree (its kappa is real) but a higher score does not mean a better label."""
    ranks = [LABELS.index(label) for label in (region_labels or []) if label in LABELS]
    return any(b < a for a, b in zip(ranks, ranks[1:]))


def order_languages(languages: Any) -> list[str]:
    """Study order first (en, nl, pl, el, zh), others alphabetically after."""
    present = set(languages)
    known = [code for code in STUDY_LANGUAGE_ORDER if code in present]
    return known + sorted(present - set(known))


def context_rank(context: str) -> int:
    return CONTEXT_ORDER.index(context) if context in CONTEXT_ORDER else len(CONTEXT_ORDER)
