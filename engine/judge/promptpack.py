"""Judge prompt packs: one YAML file per prompt language, shipped in engine/judge/prompts/ or
given by the user (`judge.prompt_pack: DIR`, the same layout).

A pack holds everything a judge prompt says in one language (system messages, task, principles,
label definitions, chain-of-thought steps, output instructions, cluster task) and the names the
prompt uses (label values, answer keys and the variants the parser also reads, the keys of the
file's JSON and of each taxonomy entry, group names, the comment marker, the separator line).
The shipped layouts (engine/judge/templates.py) put these together, or a pack gives its own
`templates:`; a `taxonomy:` section may replace engine/resources/taxonomy_<lang>.yaml's texts.
Error ids are never translated. The shipped English pack is the reference: every other pack
must define exactly its keys (checked on load, each missing or extra key named with the file).
docs/judge_prompts.md describes the packs for their users.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Mapping

import yaml

from engine.errors import ConfigError
from engine.judge.templates import BASE_SLOTS, TEMPLATE_SLOTS, TEXT_SLOTS, slot_problems
from engine.records import LABELS
from engine.taxonomy import CLUSTERS, GROUPS, CodeText, check_criteria, criteria

logger = logging.getLogger(__name__)

PROMPT_LANGUAGES = ("en", "nl", "zh", "el", "pl")
REFERENCE_LANGUAGE = "en"
# `combined`: the study's fifth strategy, every technique in one prompt (one call per cluster,
# the taxonomy as a rubric, chain-of-thought answers).
STRATEGIES = ("standard", "cot", "rubric", "hierarchical", "combined")
CLUSTERED = ("hierarchical", "combined")  # one call per cluster, verdicts combined over clusters
# `with`: the prompt shows the original comment (the study's setting); `without`: reference-free.
REFERENCE_MODES = ("with", "without")
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
# Output fields, by their internal name (what the parser maps translated keys back to).
FIELDS = ("evaluations", "model_name", "errors", "explanation", "reasoning", "overall_quality",
          "code", "confidence", "justification")
INPUT_KEYS = ("source", "original", "candidates", "model_name", "comment", "taxonomy")
TAXONOMY_KEYS = ("id", "name", "definition", "include", "exclude")
MARKS = ("present", "absent")
RUBRIC_LABELS = ("title", "instruction", "definition", "present", "absent")
# Top-level keys whose texts are rendered with slots; every other text is used verbatim. The parts
# of the list slots (principles, cot_steps, labels) are rendered before those slots exist, so
# they may use the call slots only; the texts may also use the list slots.
LIST_PARTS = ("principles", "labels_heading", "rubric", "rubric_without", "cot_steps_intro", "cot_steps")
RENDERED = (*LIST_PARTS, "system", "assignment", "assignment_without", "output", "cluster_assignment")
# Texts that may be empty: E and M sit in the study's group without a name.
MAY_BE_EMPTY = ("groups.",)
# `json_ascii`: true writes every JSON slot with non-ASCII characters as \u escapes
# (json.dumps ensure_ascii), as a study that wrote its JSON so would have sent it.
# `cluster_parents`: false shows a cluster call only its cluster's codes (the authors' code), not
# their parents with the criteria that apply to them (the shipped default).
OPTIONAL = ("taxonomy", "templates", "field_variants", "json_ascii", "cluster_parents")


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

    def label_values(self) -> dict[str, str]:
        return {"label_correct": self.label("correct"), "label_partial": self.label("partial"),
                "label_incorrect": self.label("incorrect")}

    def raw(self, *path: str) -> Any:
        node: Any = self.data
        for key in path:
            node = node[key]
        return node

    def text(self, *path: str, values: Mapping[str, str] | None = None) -> str:
        """A text of the pack with its slots filled from `values` (default: the labels only)."""
        return self.raw(*path).format_map(dict(values) if values is not None else self.label_values())

    @property
    def json_ascii(self) -> bool:
        return bool(self.data.get("json_ascii", False))

    @property
    def cluster_parents(self) -> bool:
        return bool(self.data.get("cluster_parents", True))

    def templates(self, strategy: str) -> tuple[tuple[str, str], ...] | None:
        """The pack's own (role, template) messages for `strategy`, or None (the shipped layout)."""
        own = (self.data.get("templates") or {}).get(strategy)
        return None if own is None else tuple((m["role"], m["content"]) for m in own)


def _shape(node: Any, path: str, problems: list[str]) -> Any:
    """The key structure of `node` (dicts of dicts; leaves 'str' or 'list'), noting bad leaves."""
    if isinstance(node, dict):
        return {k: _shape(v, f"{path}.{k}" if path else str(k), problems) for k, v in node.items()}
    top = path.split(".", 1)[0]
    rendered = top in RENDERED
    allowed = BASE_SLOTS if top in LIST_PARTS else TEXT_SLOTS
    if isinstance(node, list):
        if not node or not all(isinstance(x, str) and x.strip() for x in node):
            problems.append(f"{path}: must be a non-empty list of non-empty strings")
        elif rendered:
            for i, item in enumerate(node):
                problems += slot_problems(item, allowed, f"{path}[{i}]")
        return "list"
    if not isinstance(node, str) or (not node.strip() and not path.startswith(MAY_BE_EMPTY)):
        problems.append(f"{path}: must be a non-empty string (got {node!r})")
        return "str"
    if rendered:
        problems += slot_problems(node, allowed, path)
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
    exact = {"clusters": CLUSTERS, "labels": LABELS, "label_variants": LABELS, "rubric": LABELS, "rubric_without": LABELS,
             "marks": MARKS, "fields": FIELDS, "input_keys": INPUT_KEYS, "taxonomy_keys": TAXONOMY_KEYS,
             "groups": GROUPS, "rubric_labels": RUBRIC_LABELS, "system": ("basic", "enhanced"),
             "output": ("basic", "reasoning")}
    for key, names in exact.items():
        if set(data.get(key, {})) != set(names):
            problems.append(f"{key}: must have exactly the keys {list(names)}")
    for key in ("principles", "cot_steps"):
        if not isinstance(data.get(key), list):
            problems.append(f"{key}: must be a list of texts")


def _check_templates(templates: Any, problems: list[str]) -> None:
    from engine.judge.templates import CANDIDATE_SLOTS, LAYOUTS, slot_names

    if not isinstance(templates, dict):
        problems.append(f"templates: must map strategies ({list(LAYOUTS)}) to lists of messages {{role, content}}")
        return
    for strategy, messages in templates.items():
        where = f"templates.{strategy}"
        if strategy not in STRATEGIES:
            problems.append(f"{where}: not a strategy; allowed: {list(STRATEGIES)}")
            continue
        if not isinstance(messages, list) or not messages:
            problems.append(f"{where}: must be a non-empty list of messages, each {{role: ..., content: ...}}")
            continue
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or set(message) != {"role", "content"}:
                problems.append(f"{where}[{i}]: must be a mapping with exactly the keys role and content")
                continue
            if not isinstance(message["role"], str) or not message["role"].strip():
                problems.append(f"{where}[{i}].role: must be a role name such as system or user")
            if not isinstance(message["content"], str):
                problems.append(f"{where}[{i}].content: must be a string (use a YAML block scalar |- for long texts)")
            else:
                problems += slot_problems(message["content"], TEMPLATE_SLOTS, f"{where}[{i}].content")
        # a prompt without the predictions would be judged on nothing (the answers still parse)
        used = {name for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str)
                for name in slot_names(m["content"])}
        if not used & set(CANDIDATE_SLOTS):
            problems.append(f"{where}: no message shows the predictions; use one of the slots "
                            + ", ".join("{" + s + "}" for s in CANDIDATE_SLOTS))


def _check_distinct(data: dict[str, Any], problems: list[str]) -> None:
    for key, what in (("labels", "the three label values"), ("fields", "the answer keys"), ("input_keys", "the input keys"),
                      ("groups", "the group names"), ("taxonomy_keys", "the taxonomy keys")):
        values = list(data.get(key, {}).values()) if isinstance(data.get(key), dict) else []
        if len(set(values)) != len(values):
            problems.append(f"{key}: {what} must differ (got {values})")
    variants = data.get("field_variants")
    if variants is not None:
        if not isinstance(variants, dict) or not all(k in FIELDS and isinstance(v, list) and all(isinstance(x, str) for x in v)
                                                     for k, v in variants.items()):
            problems.append(f"field_variants: must map answer fields ({list(FIELDS)}) to lists of other key names")
    marks = data.get("marks", {})
    if isinstance(marks, dict) and isinstance(marks.get("present"), list) and isinstance(marks.get("absent"), list):
        both = {m.casefold() for m in marks["present"]} & {m.casefold() for m in marks["absent"]}
        if both:
            problems.append(f"marks: {sorted(both)} both present and absent")


def check_pack(language: str, data: Any, reference: dict[str, Any] | None, where: str | None = None) -> dict[str, CodeText]:
    """Raise ConfigError naming every problem of a pack (missing, extra or bad keys); return its code texts.

    `reference` None: `data` is the reference pack itself. `where`: the file named in the message.
    """
    where = where or str(PROMPTS_DIR / f"{language}.yaml")
    problems: list[str] = []
    if not isinstance(data, dict):
        raise ConfigError(f"judge prompt pack {language!r} ({where}): the file must hold a mapping")
    data = dict(data)
    optional = {key: data.pop(key) for key in OPTIONAL if key in data}
    shape = _shape(data, "", problems)
    if data.get("language") != language:
        problems.append(f"language: must be {language!r} (got {data.get('language')!r})")
    if reference is None:
        _check_reference_content(data, problems)
    else:
        reference = {k: v for k, v in reference.items() if k not in OPTIONAL}
        _compare(_shape(reference, "", []), shape, "", problems)
    _check_distinct({**data, **optional}, problems)
    if "templates" in optional:
        _check_templates(optional["templates"], problems)
    for flag in ("json_ascii", "cluster_parents"):
        if flag in optional and not isinstance(optional[flag], bool):
            problems.append(f"{flag}: must be true or false (got {optional[flag]!r})")
    codes: dict[str, CodeText] = {}
    if "taxonomy" in optional:
        try:
            codes = check_criteria(optional["taxonomy"], "taxonomy")
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        # the closing advice only where a key is missing or extra; slot and criteria problems carry their own fix
        keys_wrong = any(p.endswith((": missing", ": not a key of the reference pack")) for p in problems)
        raise ConfigError(
            f"judge prompt pack {language!r} ({where}) is invalid: " + "; ".join(problems).rstrip(".")
            + (". Fix the file so it defines every key of the shipped English pack (engine/judge/prompts/en.yaml)."
               if keys_wrong else ".")
        )
    return codes


def read_pack_file(language: str, folder: Path = PROMPTS_DIR) -> Any:
    """The parsed YAML of a language's prompt pack in `folder`, unchecked."""
    path = folder / f"{language}.yaml"
    if not path.is_file():
        raise ConfigError(f"no judge prompts for language {language!r} in {folder}; available: {list(PROMPT_LANGUAGES)}")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"judge prompt pack {path} is not valid YAML: {exc}") from exc


@cache
def _reference() -> dict[str, Any]:
    reference = read_pack_file(REFERENCE_LANGUAGE)
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
            data = read_pack_file(language, Path(pack_dir))
            codes = check_pack(language, data, reference, str(files[language]))
            return PromptPack(language, data, codes or criteria(language), str(files[language]))
        logger.info("judge prompt pack %s has no %s.yaml; using the shipped %s pack", pack_dir, language, language)
    data = reference if language == REFERENCE_LANGUAGE else read_pack_file(language)
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
