"""Natural-language identification of comment text (build stage), with lingua.

The detector is restricted to the configured languages (default: the study's en, nl, zh, el,
pl): it answers which of them a text is written in, so a text in another language is pushed
towards the closest one (German towards Dutch). Two guards: `other_languages`, which the
detector may also answer but which are never accepted (a German comment is then recognised
and dropped), and `min_confidence` (lingua's confidence of the winner, 0-1). Codes are ISO
639-1.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

from engine.errors import ConfigError

DEFAULT_LANGUAGES = ("en", "nl", "zh", "el", "pl")


def _language(code: str):
    from lingua import IsoCode639_1, Language

    iso = getattr(IsoCode639_1, code.upper(), None)
    if iso is None or len(code) != 2:
        raise ConfigError(f"languages: got {code!r}; allowed: ISO 639-1 codes lingua supports, e.g. {list(DEFAULT_LANGUAGES)}")
    return Language.from_iso_code_639_1(iso)


@functools.lru_cache(maxsize=4)
def _detector(codes: tuple[str, ...]):
    from lingua import LanguageDetectorBuilder

    languages = [_language(c) for c in codes]
    if len(languages) == 1:
        # lingua needs two candidates; with one configured language, English is the foil
        # (or Dutch when English is the one), and only wins for the configured language count.
        languages.append(_language("nl" if codes[0] == "en" else "en"))
    return LanguageDetectorBuilder.from_languages(*languages).build()


class LanguageIdentifier:
    """Which configured natural language a comment text is in."""

    def __init__(self, languages: Sequence[str] = DEFAULT_LANGUAGES, min_confidence: float = 0.0,
                 other_languages: Sequence[str] = ()):
        codes = tuple(dict.fromkeys(c.lower() for c in languages))
        if not codes:
            raise ConfigError("languages: got []; allowed: at least one ISO 639-1 code")
        others = tuple(c.lower() for c in dict.fromkeys(other_languages) if c.lower() not in codes)
        for code in codes + others:
            _language(code)
        if not 0.0 <= min_confidence <= 1.0:
            raise ConfigError(f"min_language_confidence: got {min_confidence!r}; allowed: a number in [0, 1]")
        self.languages = codes
        self.other_languages = others
        self.min_confidence = min_confidence

    def identify(self, text: str) -> str | None:
        """The ISO 639-1 code of `text`'s language, or None (no letters, or not confident)."""
        if not any(ch.isalpha() for ch in text):
            return None
        values = _detector(self.languages + self.other_languages).compute_language_confidence_values(text)
        if not values:
            return None
        best = values[0]
        code = best.language.iso_code_639_1.name.lower()
        if code not in self.languages or best.value < self.min_confidence or best.value == 0.0:
            return None
        return code
