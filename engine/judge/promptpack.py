"""Judge prompt packs: one YAML file per prompt language in engine/judge/prompts/.

A pack holds everything a judge prompt says in one language: instructions per strategy,
the taxonomy's names with inclusion and exclusion criteria, the rubric, section headings,
the output's field names and label values. Error ids are never translated. English is the
reference: every other pack must define exactly its keys (checked on load, the missing or
extra key named), its taxonomy must list every assignable code and its clusters every
cluster of the hierarchical strategy.
"""
from __future__ import annotations

import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from engine.errors import ConfigError
from engine.records import LABELS
from engine.taxonomy import CLUSTERS, leaf_codes

PROMPT_LANGUAGES = ("en", "nl", "zh", "el", "pl")
REFERENCE_LANGUAGE = "en"
STRATEGIES = ("standard", "cot", "rubric", "hierarchical")
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
# Placeholders a text of a pack may use; any other `{...}` is a typo caught on load.
PLACEHOLDERS = ("label_correct", "label_partial", "label_incorrect", "placeholder")
# Output fields, by their internal name (what the parser maps translated keys back to).
FIELDS = ("evaluations", "model_name", "comment", "errors", "explanation", "reasoning", "overall_quality",
          "code", "confidence", "justification")


@dataclass(frozen=True)
class PromptPack:
    language: str
    data: dict[str, Any]

    def field(self, name: str) -> str:
        return self.data["fields"][name]

    def label(self, internal: str) -> str:
        """The label value the output uses for internal label `internal` (correct/partial/incorrect)."""
        return self.data["labels"][internal]

    def text(self, *path: str) -> str:
        """A text of the pack with its placeholders filled in."""
        node: Any = self.data
        for key in path:
            node = node[key]
        return node.format_map(self._values())

    def code_entry(self, code: str) -> dict[str, str]:
        return self.data["taxonomy"][code]

    def _values(self) -> dict[str, str]:
        return {
            "label_correct": self.label("correct"),
            "label_partial": self.label("partial"),
            "label_incorrect": self.label("incorrect"),
            "placeholder": self.data["placeholder"],
        }


def _shape(node: Any, path: str, problems: list[str]) -> Any:
    """The key structure of `node` (dicts of dicts; leaves 'str' or 'list'), noting bad leaves."""
    if isinstance(node, dict):
        return {k: _shape(v, f"{path}.{k}" if path else str(k), problems) for k, v in node.items()}
    if isinstance(node, list):
        if not node or not all(isinstance(x, str) and x.strip() for x in node):
            problems.append(f"{path}: must be a non-empty list of non-empty strings")
        return "list"
    if not isinstance(node, str) or not node.strip():
        problems.append(f"{path}: must be a non-empty string (got {node!r})")
        return "str"
    for _text, name, _spec, _conv in string.Formatter().parse(node):
        if name is not None and name not in PLACEHOLDERS:
            problems.append(f"{path}: unknown placeholder {{{name}}}; allowed: {list(PLACEHOLDERS)}")
    return "str"


def _compare(reference: Any, other: Any, path: str, problems: list[str]) -> None:
    if isinstance(reference, dict) and isinstance(other, dict):
        for key in reference:
            where = f"{path}.{key}" if path else str(key)
            if key not in other:
                problems.append(f"{where}: missing")
            else:
                _compare(reference[key], other[key], where, problems)
        for key in other:
            if key not in reference:
                problems.append(f"{path}.{key}" if path else f"{key}: not a key of the reference pack")
    elif reference != other:
        problems.append(f"{path}: must be a {'mapping' if isinstance(reference, dict) else reference}")


def check_pack(language: str, data: Any, reference: dict[str, Any] | None) -> None:
    """Raise ConfigError naming every problem of a pack (missing, extra or bad keys)."""
    problems: list[str] = []
    if not isinstance(data, dict):
        raise ConfigError(f"judge prompt pack {language!r}: the file must hold a mapping")
    shape = _shape(data, "", problems)
    if data.get("language") != language:
        problems.append(f"language: must be {language!r} (got {data.get('language')!r})")
    if reference is None:  # the reference pack defines the keys; check its content itself
        codes = set(leaf_codes())
        listed = set(data.get("taxonomy", {}))
        if listed != codes:
            problems.append(f"taxonomy: must list exactly the assignable codes; missing {sorted(codes - listed)}, "
                            f"unknown {sorted(listed - codes)}")
        if set(data.get("clusters", {})) != set(CLUSTERS):
            problems.append(f"clusters: must name exactly {sorted(CLUSTERS)}")
        for key in ("labels", "label_variants", "rubric"):
            if set(data.get(key, {})) != set(LABELS):
                problems.append(f"{key}: must have exactly the keys {list(LABELS)}")
        if set(data.get("fields", {})) != set(FIELDS):
            problems.append(f"fields: must have exactly the keys {list(FIELDS)}")
        for strategy in STRATEGIES:
            if strategy not in data.get("system", {}):
                problems.append(f"system.{strategy}: missing")
    else:
        _compare(_shape(reference, "", []), shape, "", problems)
    labels = list(data.get("labels", {}).values())
    if len(set(labels)) != len(labels):
        problems.append(f"labels: the three label values must differ (got {labels})")
    fields = list(data.get("fields", {}).values())
    if len(set(fields)) != len(fields):
        problems.append(f"fields: field names must differ (got {fields})")
    if problems:
        raise ConfigError(
            f"judge prompt pack {language!r} ({PROMPTS_DIR / (language + '.yaml')}) is invalid: "
            + "; ".join(problems) + ". Fix the file so it defines every key of the English pack."
        )


def _read(language: str) -> Any:
    path = PROMPTS_DIR / f"{language}.yaml"
    if not path.is_file():
        raise ConfigError(f"no judge prompts for language {language!r}; available: {list(PROMPT_LANGUAGES)}")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@cache
def load_pack(language: str) -> PromptPack:
    """The checked prompt pack of `language` (every pack is checked against the English one)."""
    reference = _read(REFERENCE_LANGUAGE)
    check_pack(REFERENCE_LANGUAGE, reference, None)
    data = reference if language == REFERENCE_LANGUAGE else _read(language)
    if language != REFERENCE_LANGUAGE:
        check_pack(language, data, reference)
    return PromptPack(language, data)


def resolve_prompt_language(setting: str, sample_language: str) -> str:
    """`sample` -> the sample's language when a pack exists for it, else English."""
    if setting != "sample":
        return setting
    return sample_language if sample_language in PROMPT_LANGUAGES else REFERENCE_LANGUAGE
