"""Assembling a judge call's chat messages from a prompt pack.

Layout for prefix caching: the system message holds everything shared by the calls of one
(strategy, prompt language) — instructions, taxonomy, rubric, output format — and is
byte-identical across files, so a server with prefix caching computes it once. For the
hierarchical strategy the cluster-specific part comes last in the system message, after
the part shared by all seven cluster calls. The user message holds the file: the original
comment, the source with the comment replaced by a placeholder, and the candidates as JSON
(`prime + prediction`, sorted by generator name).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from engine.judge.promptpack import STRATEGIES, PromptPack
from engine.judge.schema import codes_for, example_output
from engine.records import LABELS
from engine.taxonomy import CLUSTERS


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


def _taxonomy(pack: PromptPack, with_criteria: bool) -> str:
    lines = []
    for code, entry in pack.data["taxonomy"].items():
        line = f"- {code}: {entry['name']}"
        if with_criteria:
            line += f" ({pack.text('headings', 'include')}: {entry['include']}; {pack.text('headings', 'exclude')}: {entry['exclude']})"
        lines.append(line)
    return "\n".join(lines)


def _output_section(pack: PromptPack, strategy: str, cluster: str | None) -> str:
    example = json.dumps(example_output(pack, strategy, cluster), ensure_ascii=False)
    return f"## {pack.text('headings', 'output')}\n{pack.text('output', 'instruction')}\n{example}"


def shared_prefix(pack: PromptPack, strategy: str) -> str:
    """The part of the system message every call of (strategy, language) starts with."""
    rubric = "\n".join(f"- {pack.text('rubric', label)}" for label in reversed(LABELS))
    return (
        f"{pack.text('system', 'intro')}\n{pack.text('system', strategy)}\n\n"
        f"## {pack.text('headings', 'taxonomy')}\n{_taxonomy(pack, with_criteria=strategy in ('rubric', 'hierarchical'))}\n\n"
        f"## {pack.text('headings', 'rubric')}\n{rubric}\n\n"
    )


def system_message(pack: PromptPack, strategy: str, cluster: str | None = None) -> str:
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown judge strategy {strategy!r}; allowed: {list(STRATEGIES)}")
    text = shared_prefix(pack, strategy)
    if cluster is not None:
        text += (
            f"## {pack.text('headings', 'cluster')}\n{pack.text('clusters', cluster)}\n"
            f"{pack.text('output', 'cluster_codes')} {', '.join(codes_for(cluster))}\n\n"
        )
    return text + _output_section(pack, strategy, cluster)


def masked_source(item: JudgeItem, placeholder: str) -> str:
    return item.source[: item.comment_start] + placeholder + item.source[item.comment_end :]


def user_message(pack: PromptPack, item: JudgeItem) -> str:
    candidates = [
        {pack.field("model_name"): c.generator, pack.field("comment"): c.comment}
        for c in sorted(item.candidates, key=lambda c: c.generator)
    ]
    return (
        f"{pack.text('user', 'task')}\n\n"
        f"## {pack.text('headings', 'original')}\n{item.reference}\n\n"
        f"## {pack.text('headings', 'source')}\n```\n{masked_source(item, pack.data['placeholder'])}\n```\n\n"
        f"## {pack.text('headings', 'candidates')}\n{json.dumps(candidates, ensure_ascii=False, indent=2)}\n"
    )


def build_calls(pack: PromptPack, item: JudgeItem, strategy: str) -> list[JudgeCall]:
    """The calls of one (file, strategy, prompt language): one, or one per cluster (hierarchical)."""
    clusters: list[str | None] = list(CLUSTERS) if strategy == "hierarchical" else [None]
    user = user_message(pack, item)
    return [
        JudgeCall(
            strategy, pack.language, cluster,
            ({"role": "system", "content": system_message(pack, strategy, cluster)}, {"role": "user", "content": user}),
        )
        for cluster in clusters
    ]
