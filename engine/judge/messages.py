"""Assembling a judge call's chat messages from a prompt pack.

Layout for prefix caching: the system message holds everything shared by the calls of one
(strategy, prompt language, reference mode) — instructions, the taxonomy with each code's
definition, inclusion and exclusion criteria, the label definitions, the evaluation
principles, the output format — and is byte-identical across files, so a server with prefix
caching computes it once. A hierarchical call shows only its cluster's codes, after the part
shared by all seven cluster calls. The user message holds the file: the original comment
(left out when `reference` is `without`), the source with the comment replaced by a
placeholder, and the candidates as JSON (`prime + prediction`, sorted by generator name).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from engine.judge.promptpack import REFERENCE_MODES, STRATEGIES, PromptPack
from engine.judge.schema import codes_for, example_output
from engine.records import LABELS
from engine.taxonomy import CLUSTERS, CODES, ancestors


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
    """One request of a strategy: `cluster` is set for the hierarchical strategy's calls."""

    strategy: str
    prompt_language: str
    cluster: str | None
    messages: tuple[dict[str, str], ...]
    reference: str = "with"  # with | without: whether the prompt shows the original comment


def _code_lines(pack: PromptPack, codes: list[str], tree: bool) -> str:
    """Each code with its definition, inclusion and exclusion criteria (`tree`: children indented under parents)."""
    return "\n".join(f"{'  ' * (len(ancestors(code)) - 1) if tree else ''}- {pack.code_line(code)}" for code in codes)


def _output_section(pack: PromptPack, strategy: str, cluster: str | None) -> str:
    example = json.dumps(example_output(pack, strategy, cluster), ensure_ascii=False)
    return f"## {pack.text('headings', 'output')}\n{pack.text('output', 'instruction')}\n{example}"


def shared_prefix(pack: PromptPack, strategy: str, reference: str = "with") -> str:
    """The part of the system message every call of (strategy, language, reference) starts with.

    The hierarchical strategy's calls share everything but their cluster's codes, so the
    taxonomy is left out here and each call lists only its cluster's codes after this prefix.
    """
    if reference not in REFERENCE_MODES:
        raise ValueError(f"unknown reference mode {reference!r}; allowed: {list(REFERENCE_MODES)}")
    intro = pack.text("system", "intro" if reference == "with" else "intro_without")
    labels_key = "rubric" if reference == "with" else "rubric_without"
    labels = "\n".join(f"- {pack.text(labels_key, label)}" for label in reversed(LABELS))
    principles = "\n".join(f"- {p}" for p in pack.data["principles"])
    taxonomy = ""
    if strategy != "hierarchical":
        taxonomy = f"## {pack.text('headings', 'taxonomy')}\n{_code_lines(pack, list(CODES), tree=True)}\n\n"
    return (
        f"{intro}\n{pack.text('system', strategy)}\n\n{taxonomy}"
        f"## {pack.text('headings', 'rubric')}\n{labels}\n\n"
        f"## {pack.text('headings', 'principles')}\n{principles}\n\n"
    )


def system_message(pack: PromptPack, strategy: str, cluster: str | None = None, reference: str = "with") -> str:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown judge strategy {strategy!r}; allowed: {list(STRATEGIES)}")
    text = shared_prefix(pack, strategy, reference)
    if cluster is not None:
        codes = codes_for(cluster)
        text += (
            f"## {pack.text('headings', 'cluster')}\n{pack.text('clusters', cluster)}\n{_code_lines(pack, codes, tree=False)}\n"
            f"{pack.text('output', 'cluster_codes')} {', '.join(codes)}\n\n"
        )
    return text + _output_section(pack, strategy, cluster)


def masked_source(item: JudgeItem, placeholder: str) -> str:
    return item.source[: item.comment_start] + placeholder + item.source[item.comment_end :]


def user_message(pack: PromptPack, item: JudgeItem, reference: str = "with") -> str:
    """The file's part of a call; `reference` `without` leaves the original comment out (the code stays)."""
    candidates = [
        {pack.field("model_name"): c.generator, pack.field("comment"): c.comment}
        for c in sorted(item.candidates, key=lambda c: c.generator)
    ]
    original = f"## {pack.text('headings', 'original')}\n{item.reference}\n\n" if reference == "with" else ""
    return (
        f"{pack.text('user', 'task')}\n\n{original}"
        f"## {pack.text('headings', 'source')}\n```\n{masked_source(item, pack.data['placeholder'])}\n```\n\n"
        f"## {pack.text('headings', 'candidates')}\n{json.dumps(candidates, ensure_ascii=False, indent=2)}\n"
    )


def build_calls(pack: PromptPack, item: JudgeItem, strategy: str, reference: str = "with") -> list[JudgeCall]:
    """The calls of one (file, strategy, prompt language, reference): one, or one per cluster (hierarchical)."""
    clusters: list[str | None] = list(CLUSTERS) if strategy == "hierarchical" else [None]
    user = user_message(pack, item, reference)
    return [
        JudgeCall(
            strategy, pack.language, cluster,
            ({"role": "system", "content": system_message(pack, strategy, cluster, reference)},
             {"role": "user", "content": user}),
            reference,
        )
        for cluster in clusters
    ]
