"""Assembling a judge call's chat messages from a prompt pack.

Each call's messages come from a template per strategy: the pack's own (`templates:`) or the
shipped layout (engine/judge/templates.py LAYOUTS, which also says how slots are filled). The file (source with the comment marker, original comment,
candidates `prime + prediction` sorted by generator name, case-sensitively) comes last, so the
calls of one (strategy, prompt language, reference mode) share everything before it. The
taxonomy lists its groups in the order of the pack's `groups:` keys. A clustered call
(hierarchical, combined) shows only its cluster's codes, with their parents: a parent's criteria
(LG-GR's and SE-CS's exclusions, MS-RE's inclusion) apply to its children, so a cluster call
without them would judge by less than the study's criteria (a pack with `cluster_parents: false`
leaves them out, as the authors' code does).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.judge.promptpack import CLUSTERED, REFERENCE_MODES, STRATEGIES, PromptPack
from engine.judge.schema import codes_for, output_schema
from engine.judge.templates import LAYOUTS, render
from engine.records import LABELS
from engine.taxonomy import CLUSTERS, CODES, GROUPS, ancestors


@dataclass(frozen=True)
class Candidate:
    generator: str
    comment: str  # prime + prediction


@dataclass(frozen=True)
class JudgeItem:
    """One file to judge: its context, the original comment and every generator's candidate."""

    file_id: str
    language: str
    source: str
    comment_start: int
    comment_end: int
    reference: str
    candidates: tuple[Candidate, ...]  # sorted by generator name


@dataclass(frozen=True)
class JudgeCall:
    """One request of a strategy: `cluster` is set for the calls of a clustered strategy."""

    strategy: str
    prompt_language: str
    cluster: str | None
    messages: tuple[dict[str, str], ...]
    reference: str = "with"  # with | without: whether the prompt shows the original comment


def masked_source(item: JudgeItem, placeholder: str) -> str:
    return item.source[: item.comment_start] + placeholder + item.source[item.comment_end :]


def _shown_codes(cluster: str | None, parents: bool = True) -> list[str]:
    """The codes a call's taxonomy shows, in table order: every code and parent, or one cluster's
    codes with all their parents (whose criteria apply to them; `parents` False: the cluster's
    codes alone, as the authors' code sends them)."""
    if cluster is None:
        return list(CODES)
    shown = {a for code in CLUSTERS[cluster] for a in (ancestors(code) if parents else (code,))}
    return [code for code in CODES if code in shown]


def _dump(pack: PromptPack, value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, ensure_ascii=pack.json_ascii, indent=indent)


def _taxonomy_entries(pack: PromptPack, cluster: str | None) -> list[tuple[str, list[str]]]:
    """(group name, codes) in the order of the pack's `groups:` keys, only groups with a shown code
    (within a group, the study's order of its codes)."""
    shown = set(_shown_codes(cluster, pack.cluster_parents))
    out = []
    for group in pack.raw("groups"):
        kept = [c for c in GROUPS[group] if c in shown]
        if kept:
            out.append((pack.raw("groups", group), kept))
    return out


def taxonomy_value(pack: PromptPack, cluster: str | None) -> dict[str, Any]:
    keys = pack.data["taxonomy_keys"]
    value: dict[str, Any] = {}
    for group, codes in _taxonomy_entries(pack, cluster):
        value[group] = [{keys["id"]: code, keys["name"]: pack.codes[code].name, keys["definition"]: pack.codes[code].definition,
                         keys["include"]: pack.codes[code].include, keys["exclude"]: pack.codes[code].exclude}
                        for code in codes]
    return value


def taxonomy_json(pack: PromptPack, cluster: str | None, indent: int | None = 2) -> str:
    return _dump(pack, taxonomy_value(pack, cluster), indent)


def taxonomy_lines(pack: PromptPack, cluster: str | None) -> str:
    words = pack.data["rubric_labels"]
    lines = []
    for code in _shown_codes(cluster, pack.cluster_parents):
        text = pack.codes[code]
        line = f"- {code} ({text.name}): {text.include}"
        if text.definition:
            line += f" {words['definition']}: {text.definition}"
        if text.exclude:
            line += f" {words['absent']}: {text.exclude}"
        lines.append(line)
    return "\n".join(lines)


def taxonomy_rubric(pack: PromptPack, cluster: str | None) -> str:
    """The codes as a rubric: per named group, each code with when to mark it PRESENT or ABSENT."""
    words = pack.data["rubric_labels"]
    parts = [f"# {words['title']}", words["instruction"]]
    for group, codes in _taxonomy_entries(pack, cluster):
        if group:
            parts.append(f"## {group}")
        for code in codes:
            text = pack.codes[code]
            lines = [f"### [{code}] {text.name}"]
            if text.definition:
                lines.append(f"**{words['definition']}:** {text.definition}")
            lines.append(f"**{words['present']}:**\n  - {text.include}")
            if text.exclude:
                lines.append(f"**{words['absent']}:**\n  - {text.exclude}")
            parts.append("\n".join(lines))
    return "\n\n".join(parts)


def taxonomy_rubric_authors(pack: PromptPack, cluster: str | None) -> str:
    """The rubric as the authors' code lays it out: every line ends in the two characters
    backslash-n instead of a line break, the group without a name (E, M) is left out, each code's
    inclusion and exclusion one `  - ` item per part between the two characters backslash-n (real
    line breaks stay inside the item), an empty item after each code. Like the authors' code, it
    reads each entry of {taxonomy_json} by the English key names (id, name, description, inclusion,
    exclusion): a pack whose `taxonomy_keys` are other names gets the ids alone, without names or
    criteria, as the study's translated prompts got them."""
    words = pack.data["rubric_labels"]
    lines = [f"# {words['title']}\\n"]
    for group, entries in taxonomy_value(pack, cluster).items():
        if not group or not entries:
            continue
        lines.append(f"\\n## {group}\\n")
        for entry in entries:
            definition, include, exclude = (str(entry.get(k, "")).strip() for k in ("description", "inclusion", "exclusion"))
            lines.append(f"### [{entry.get('id', '')}] {entry.get('name', '')}\\n")
            if definition:
                lines.append(f"**{words['definition']}:** {definition}\\n")
            lines.append(f"**{words['present']}:**")
            lines += [f"  - {part.strip()}" for part in include.split("\\n") if part.strip()]
            if exclude:
                lines.append(f"\\n**{words['absent']}:**")
                lines += [f"  - {part.strip()}" for part in exclude.split("\\n") if part.strip()]
            lines.append("")
    return "\\n".join(lines)


def _candidates(pack: PromptPack, item: JudgeItem) -> list[dict[str, str]]:
    keys = pack.data["input_keys"]
    return [{keys["model_name"]: c.generator, keys["comment"]: c.comment} for c in sorted(item.candidates, key=lambda c: c.generator)]


def _predictions(item: JudgeItem) -> dict[str, str]:
    """The study's `model_predictions`: model name -> predicted comment, sorted by model name."""
    return {c.generator: c.comment for c in sorted(item.candidates, key=lambda c: c.generator)}


def _components(pack: PromptPack, item: JudgeItem, cluster: str | None, reference: str) -> dict[str, Any]:
    """The study's JSON block after the separator: taxonomy, source with the marker, original comment,
    model_predictions as a mapping."""
    keys = pack.data["input_keys"]
    value: dict[str, Any] = {keys["taxonomy"]: taxonomy_value(pack, cluster),
                             keys["source"]: masked_source(item, pack.data["placeholder"])}
    if reference == "with":
        value[keys["original"]] = item.reference
    value[keys["candidates"]] = _predictions(item)
    return value


def _input(pack: PromptPack, item: JudgeItem, reference: str) -> dict[str, Any]:
    keys = pack.data["input_keys"]
    value: dict[str, Any] = {keys["source"]: masked_source(item, pack.data["placeholder"])}
    if reference == "with":
        value[keys["original"]] = item.reference
    value[keys["candidates"]] = _candidates(pack, item)
    return value


def slot_values(pack: PromptPack, item: JudgeItem, strategy: str, cluster: str | None = None,
                reference: str = "with") -> dict[str, str]:
    """Every slot of one call (engine/judge/templates.py), filled layer by layer."""
    def dump(value: Any, indent: int | None = 2) -> str:
        return _dump(pack, value, indent)

    names = [c.generator for c in sorted(item.candidates, key=lambda c: c.generator)]
    values = {
        "language": pack.language, **pack.label_values(), "placeholder": pack.data["placeholder"],
        "separator": pack.data["separator"], "source": masked_source(item, pack.data["placeholder"]),
        "original_comment": item.reference if reference == "with" else "",
        "source_json": dump(masked_source(item, pack.data["placeholder"])),
        "original_comment_json": dump(item.reference if reference == "with" else ""),
        "model_predictions_json": dump(_predictions(item)), "model_predictions_json_compact": dump(_predictions(item), None),
        "components_json": dump(_components(pack, item, cluster, reference)),
        "components_json_compact": dump(_components(pack, item, cluster, reference), None),
        "candidates_json": dump(_candidates(pack, item)), "candidates_json_compact": dump(_candidates(pack, item), None),
        "input_json": dump(_input(pack, item, reference)), "input_json_compact": dump(_input(pack, item, reference), None),
        "taxonomy_json": taxonomy_json(pack, cluster), "taxonomy_json_compact": taxonomy_json(pack, cluster, None),
        "taxonomy_lines": taxonomy_lines(pack, cluster), "taxonomy_rubric": taxonomy_rubric(pack, cluster),
        "taxonomy_rubric_authors": taxonomy_rubric_authors(pack, cluster),
        "output_schema": dump(output_schema(pack, strategy, cluster, names)),
        "cluster": cluster or "", "cluster_description": pack.raw("clusters", cluster) if cluster else "",
        "cluster_codes": ", ".join(codes_for(cluster)),
    }
    labels_key = "rubric" if reference == "with" else "rubric_without"
    values["principles"] = "\n".join(f"- {render(p, values)}" for p in pack.raw("principles"))
    values["cot_steps"] = "\n".join([render(pack.raw("cot_steps_intro"), values),
                                     *(f"{i}. {render(s, values)}" for i, s in enumerate(pack.raw("cot_steps"), 1))])
    values["labels"] = "\n".join([render(pack.raw("labels_heading"), values),
                                  *(f"- {render(pack.raw(labels_key, label), values)}" for label in reversed(LABELS))])
    values.update({
        "system_basic": render(pack.raw("system", "basic"), values),
        "system_enhanced": render(pack.raw("system", "enhanced"), values),
        "assignment": render(pack.raw("assignment" if reference == "with" else "assignment_without"), values),
        "output_basic": render(pack.raw("output", "basic"), values),
        "output_reasoning": render(pack.raw("output", "reasoning"), values),
        "cluster_assignment": render(pack.raw("cluster_assignment"), values),
    })
    return values


def render_messages(pack: PromptPack, item: JudgeItem, strategy: str, cluster: str | None = None,
                    reference: str = "with") -> tuple[dict[str, str], ...]:
    """The messages of one call: the pack's own templates for the strategy, else the shipped layout."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown judge strategy {strategy!r}; allowed: {list(STRATEGIES)}")
    if reference not in REFERENCE_MODES:
        raise ValueError(f"unknown reference mode {reference!r}; allowed: {list(REFERENCE_MODES)}")
    values = slot_values(pack, item, strategy, cluster, reference)
    layout = pack.templates(strategy) or LAYOUTS[strategy]
    return tuple({"role": role, "content": render(template, values)} for role, template in layout)


def build_calls(pack: PromptPack, item: JudgeItem, strategy: str, reference: str = "with") -> list[JudgeCall]:
    """The calls of one (file, strategy, prompt language, reference): one, or one per cluster."""
    clusters: list[str | None] = list(CLUSTERS) if strategy in CLUSTERED else [None]
    return [JudgeCall(strategy, pack.language, cluster, render_messages(pack, item, strategy, cluster, reference), reference)
            for cluster in clusters]
