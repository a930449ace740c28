"""Judge prompt packs: one YAML file per prompt language, shipped in engine/judge/prompts/ or
given by the user (`judge.prompt_pack: DIR`, the same layout).

A pack holds everything a judge prompt says in one language: instructions per strategy (with
and without the reference comment), the three label definitions, the evaluation principles,
section headings, the output's field names, label values and rubric marks. The taxonomy's
texts (each code's name, definition, inclusion and exclusion criteria, parents included) come
from the taxonomy the project ships (engine/resources/taxonomy_<lang>.yaml); a pack may
replace them with a `taxonomy:` section of the same layout. Error ids are never translated.
The shipped English pack is the reference: every other pack, shipped or the user's, must
define exactly its keys (checked on load, each missing or extra key named with the file).
"""
from __future__ import annotations

import hashlib
import logging
import string
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from engine.errors import ConfigError
from engine.records import LABELS
from engine.taxonomy import CLUSTERS, CodeText, check_criteria, criteria

logger = logging.getLogger(__name__)

PROMPT_LANGUAGES = ("en", "nl", "zh", "el", "pl")
REFERENCE_LANGUAGE = "en"
STRATEGIES = ("standard", "cot", "rubric", "hierarchical")
# `with`: the prompt shows the original comment (the study's setting); `without`: reference-free.
REFERENCE_MODES = ("with", "without")
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
# Placeholders a text of a pack may use; any other `{...}` is a typo caught on load.
PLACEHOLDERS = ("label_correct", "label_partial", "label_incorrect", "placeholder")
CODE_LINE_PLACEHOLDERS = ("code", "name", "definition", "include", "exclude")
# Output fields, by their internal name (what the parser maps translated keys back to).
FIELDS = ("evaluations", "model_name", "comment", "errors", "explanation", "reasoning", "overall_quality",
          "code", "confidence", "justification")
MARKS = ("present", "absent")


@dataclass(frozen=True)
class PromptPack:
    language: str
    data: dict[str, Any]
    codes: dict[str, CodeText] = field(default_factory=dict)  # every code and parent, table order
    source: str = "shipped"  # `shipped`, or the user pack's file

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

    def code_line(self, code: str) -> str:
        """One code with its definition, inclusion and exclusion criteria, in the pack's wording."""
        entry = self.codes[code]
        return self.data["code_line"].format(code=code, name=entry.name, definition=entry.definition,
                                             include=entry.include, exclude=entry.exclude)

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
    allowed = CODE_LINE_PLACEHOLDERS if path == "code_line" else PLACEHOLDERS
    try:
        names = [name for _text, name, _spec, _conv in string.Formatter().parse(node)]
    except ValueError as exc:
        problems.append(f"{path}: unbalanced braces ({exc})")
        return "str"
    for name in names:
        if name is not None and name not in allowed:
            problems.append(f"{path}: unknown placeholder {{{name}}}; allowed: {list(allowed)}")
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
                problems.append(f"{path}.{key}: not a key of the reference pack" if path
                                else f"{key}: not a key of the reference pack")
    elif reference != other:
        problems.append(f"{path}: must be a {'mapping' if isinstance(reference, dict) else reference}")


def _check_reference_content(data: dict[str, Any], problems: list[str]) -> None:
    """What the reference pack must contain (the other packs must then have the same keys)."""
    if set(data.get("clusters", {})) != set(CLUSTERS):
        problems.append(f"clusters: must name exactly {sorted(CLUSTERS)}")
    for key in ("labels", "label_variants", "rubric", "rubric_without"):
        if set(data.get(key, {})) != set(LABELS):
            problems.append(f"{key}: must have exactly the keys {list(LABELS)}")
    if set(data.get("marks", {})) != set(MARKS):
        problems.append(f"marks: must have exactly the keys {list(MARKS)}")
    if set(data.get("fields", {})) != set(FIELDS):
        problems.append(f"fields: must have exactly the keys {list(FIELDS)}")
    for key in ("intro", "intro_without", *STRATEGIES):
        if key not in data.get("system", {}):
            problems.append(f"system.{key}: missing")
    if not isinstance(data.get("principles"), list):
        problems.append("principles: must be a list of texts")


def check_pack(language: str, data: Any, reference: dict[str, Any] | None, where: str | None = None) -> dict[str, CodeText]:
    """Raise ConfigError naming every problem of a pack (missing, extra or bad keys); return its code texts.

    `reference` None: `data` is the reference pack itself. `where`: the file named in the message.
    """
    where = where or str(PROMPTS_DIR / f"{language}.yaml")
    problems: list[str] = []
    if not isinstance(data, dict):
        raise ConfigError(f"judge prompt pack {language!r} ({where}): the file must hold a mapping")
    data = dict(data)
    taxonomy = data.pop("taxonomy", None)  # optional: replaces the shipped taxonomy texts
    shape = _shape(data, "", problems)
    if data.get("language") != language:
        problems.append(f"language: must be {language!r} (got {data.get('language')!r})")
    if reference is None:
        _check_reference_content(data, problems)
    else:
        reference = {k: v for k, v in reference.items() if k != "taxonomy"}
        _compare(_shape(reference, "", []), shape, "", problems)
    for key in ("labels", "fields"):
        values = list(data.get(key, {}).values()) if isinstance(data.get(key), dict) else []
        if len(set(values)) != len(values):
            problems.append(f"{key}: the values must differ (got {values})" if key == "fields"
                            else f"labels: the three label values must differ (got {values})")
    marks = data.get("marks", {})
    if isinstance(marks, dict) and isinstance(marks.get("present"), list) and isinstance(marks.get("absent"), list):
        both = {m.casefold() for m in marks["present"]} & {m.casefold() for m in marks["absent"]}
        if both:
            problems.append(f"marks: {sorted(both)} both present and absent")
    codes: dict[str, CodeText] = {}
    if taxonomy is not None:
        try:
            codes = check_criteria(taxonomy, "taxonomy")
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError(
            f"judge prompt pack {language!r} ({where}) is invalid: " + "; ".join(problems)
            + ". Fix the file so it defines every key of the shipped English pack (engine/judge/prompts/en.yaml)."
        )
    return codes


def _read(language: str, folder: Path = PROMPTS_DIR) -> Any:
    path = folder / f"{language}.yaml"
    if not path.is_file():
        raise ConfigError(f"no judge prompts for language {language!r} in {folder}; available: {list(PROMPT_LANGUAGES)}")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"judge prompt pack {path} is not valid YAML: {exc}") from exc


@cache
def _reference() -> dict[str, Any]:
    reference = _read(REFERENCE_LANGUAGE)
    check_pack(REFERENCE_LANGUAGE, reference, None)
    return reference


def _user_files(folder: Path) -> dict[str, Path]:
    if not folder.is_dir():
        raise ConfigError(f"judge.prompt_pack: {folder} is not a folder; give a folder of <language>.yaml files "
                          f"laid out like engine/judge/prompts/")
    files = sorted(folder.glob("*.yaml"))
    unknown = [f.name for f in files if f.stem not in PROMPT_LANGUAGES]
    if unknown or not files:
        raise ConfigError(f"judge.prompt_pack: {folder} must hold files named <language>.yaml for languages "
                          f"{list(PROMPT_LANGUAGES)}; " + (f"unknown: {unknown}" if unknown else "it holds none"))
    return {f.stem: f for f in files}


@cache
def load_pack(language: str, pack_dir: str | None = None) -> PromptPack:
    """The checked prompt pack of `language`: the user's from `pack_dir` when it has that
    language's file, else the shipped one (every pack is checked against the shipped English one)."""
    reference = _reference()
    if pack_dir is not None:
        files = _user_files(Path(pack_dir))
        if language in files:
            data = _read(language, Path(pack_dir))
            codes = check_pack(language, data, reference, str(files[language]))
            return PromptPack(language, data, codes or criteria(language), str(files[language]))
        logger.info("judge prompt pack %s has no %s.yaml; using the shipped %s pack", pack_dir, language, language)
    data = reference if language == REFERENCE_LANGUAGE else _read(language)
    codes = check_pack(language, data, None if language == REFERENCE_LANGUAGE else reference)
    return PromptPack(language, data, codes or criteria(language))


def check_pack_dir(pack_dir: str) -> str:
    """Check every file of a user prompt pack now (config check); return a digest of their content."""
    files = _user_files(Path(pack_dir))
    digest = hashlib.sha256()
    for language, path in files.items():
        try:
            load_pack(language, pack_dir)
        except ConfigError as exc:
            raise ConfigError(f"judge.prompt_pack ({pack_dir}): {exc}") from exc
        digest.update(language.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def resolve_prompt_language(setting: str, sample_language: str) -> str:
    """`sample` -> the sample's language when a pack exists for it, else English."""
    if setting != "sample":
        return setting
    return sample_language if sample_language in PROMPT_LANGUAGES else REFERENCE_LANGUAGE
