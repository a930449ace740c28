"""Language resources of the perturbation families, read from `resources/<language>.json`.

A resource file holds, for one natural language:
- `negation`: rules `{pattern, replace}`; `pattern` is a regular expression matched on the
  lower-cased text, `replace` a template for `re.Match.expand` (so `\\1` refers to a group);
  when the matched text starts with an upper-case letter the replacement does too;
- `sentence_end`: a regular expression matching the punctuation that ends a sentence;
- `clause_boundary`: one matching the start of a clause after the first (a comma, a conjunction);
- `unit`: one matching a word (or, in Chinese, a character or a run of Latin text);
- `joiner`: what separates units ("" in Chinese).
A language without a file uses `default.json` (no negation rules: negation is then skipped).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

RESOURCE_DIR = Path(__file__).parent / "resources"


@dataclass(frozen=True)
class NegationRule:
    pattern: re.Pattern
    replace: str


@dataclass(frozen=True)
class LanguageResources:
    language: str
    negation: tuple[NegationRule, ...]
    sentence_end: re.Pattern
    clause_boundary: re.Pattern
    unit: re.Pattern
    joiner: str
    has_own_file: bool


@functools.cache
def resources_for(language: str) -> LanguageResources:
    """The resources of `language` (an ISO code such as en, nl, zh, el, pl)."""
    path = RESOURCE_DIR / f"{language}.json"
    own = path.is_file() and language != "default"
    data = json.loads((path if own else RESOURCE_DIR / "default.json").read_text(encoding="utf-8"))
    return LanguageResources(
        language=language,
        negation=tuple(NegationRule(re.compile(r["pattern"]), r["replace"]) for r in data["negation"]),
        sentence_end=re.compile(data["sentence_end"]),
        clause_boundary=re.compile(data["clause_boundary"]),
        unit=re.compile(data["unit"]),
        joiner=data["joiner"],
        has_own_file=own,
    )


@functools.cache
def code_keywords() -> frozenset[str]:
    """Keywords and built-in type names of the source languages: never file identifiers."""
    data = json.loads((RESOURCE_DIR / "code_keywords.json").read_text(encoding="utf-8"))
    return frozenset(data["keywords"])
