"""Message templates of judge prompts: named slots, the shipped layout of each strategy, checks.

A template is text with named slots in braces, `{input_json}`; a literal brace is written
twice (Python's str.format rules; a slot value is inserted as it is and never read as a
template itself). The text between slots is copied byte for byte, so a template written from a
given prompt renders exactly that prompt.

Slots come in three layers, each rendered from the ones before it: per call (BASE_SLOTS: the
file's parts, the candidates, the taxonomy, the schema, the labels, the cluster), the pack's
lists (LIST_SLOTS) and the pack's texts (BLOCK_SLOTS). A pack text may use the first two layers
(the parts of a list, the first only); a message template may use all three.
docs/judge_prompts.md ("Slots") lists every slot.
"""
from __future__ import annotations

import string
from typing import Iterable, Mapping

# slot -> what it holds (also the documentation of docs/judge_prompts.md)
BASE_SLOTS: dict[str, str] = {
    "language": "the prompt language (en, nl, zh, el, pl)",
    "label_correct": "the pack's value of the label correct",
    "label_partial": "the pack's value of the label partially correct",
    "label_incorrect": "the pack's value of the label incorrect",
    "placeholder": "the marker that stands in the source where the comment was",
    "separator": "the pack's separator line between the instructions and the file's JSON",
    "source": "the whole source file with the comment replaced by the marker",
    "original_comment": "the original comment (empty when the prompt is reference-free)",
    "source_json": "the source with the marker as a JSON string literal, quotes included (escaped: safe inside a JSON "
                   "template)",
    "original_comment_json": "the original comment as a JSON string literal, quotes included (\"\" when "
                             "reference-free)",
    "candidates_json": "the candidates as a JSON list of {model name key: generator, comment key: prime + prediction}, "
                       "sorted by generator name, indented by 2",
    "candidates_json_compact": "the same list on one line",
    "input_json": "one JSON object: {source key: source, original key: original comment, candidates key: candidates} "
                  "(no original without the reference), indented by 2",
    "input_json_compact": "the same object on one line",
    "model_predictions_json": "the candidates as a JSON object {generator: prime + prediction}, sorted by generator "
                              "name, indented by 2",
    "model_predictions_json_compact": "the same object on one line",
    "components_json": "the study's components object: {taxonomy key: the call's taxonomy (as taxonomy_json), source "
                       "key: source, original key: original comment, candidates key: {generator: prime + "
                       "prediction}} (no original without the reference), indented by 2",
    "components_json_compact": "the same object on one line",
    "taxonomy_json": "the call's codes as JSON: {group name: [{id, name, definition, include, exclude}]} with the "
                     "pack's `taxonomy_keys`, groups in the order of the pack's `groups:` keys, indented by 2",
    "taxonomy_json_compact": "the same on one line",
    "taxonomy_lines": "one line per code: `- ID (name): include` (+ definition and exclusion where given)",
    "taxonomy_rubric": "the call's codes as a rubric: each code with its PRESENT-if and ABSENT-if criteria",
    "taxonomy_rubric_authors": "the call's codes as the authors' code writes its rubric: lines joined by the two "
                               "characters backslash-n, the group without a name left out",
    "output_schema": "the JSON schema of the answer, indented by 2",
    "cluster": "the cluster's internal name (hierarchical and combined calls; else empty)",
    "cluster_description": "the pack's description of the cluster (else empty)",
    "cluster_codes": "the codes the call may assign, comma-separated",
}
LIST_SLOTS: dict[str, str] = {
    "principles": "the pack's `principles`, one `- ` line each",
    "cot_steps": "the pack's `cot_steps_intro` and its `cot_steps`, numbered 1., 2., ...",
    "labels": "the pack's `labels_heading` and one `- ` line per label definition (`rubric`, or "
              "`rubric_without` when reference-free), correct first",
}
BLOCK_SLOTS: dict[str, str] = {
    "system_basic": "the pack's `system.basic`",
    "system_enhanced": "the pack's `system.enhanced`",
    "assignment": "the pack's `assignment` (or `assignment_without` when reference-free)",
    "output_basic": "the pack's `output.basic`",
    "output_reasoning": "the pack's `output.reasoning`",
    "cluster_assignment": "the pack's `cluster_assignment`",
}
# The slots that show the predictions: a message template must use one of them.
CANDIDATE_SLOTS = ("candidates_json", "candidates_json_compact", "input_json", "input_json_compact",
                   "model_predictions_json", "model_predictions_json_compact", "components_json",
                   "components_json_compact")
TEXT_SLOTS = (*BASE_SLOTS, *LIST_SLOTS)  # what a pack text may use
TEMPLATE_SLOTS = (*BASE_SLOTS, *LIST_SLOTS, *BLOCK_SLOTS)  # what a message template may use

_SEP = "\n\n{separator}\n{input_json}"
# The shipped layout (the study's): a short system message; the task, the taxonomy, the
# instructions and the answer format in the user message, then the separator and the file as
# JSON. The file comes last so every call of one strategy and language shares a long prefix
# (what a server with prefix caching computes once).
LAYOUTS: dict[str, tuple[tuple[str, str], ...]] = {
    "standard": (("system", "{system_basic}"), ("user", "{assignment}\n\n{labels}\n\n{output_basic}" + _SEP)),
    "cot": (("system", "{system_enhanced}"),
            ("user", "{assignment}\n\n{cot_steps}\n\n{labels}\n\n{output_reasoning}" + _SEP)),
    "rubric": (("system", "{system_enhanced}"),
               ("user", "{assignment}\n\n{taxonomy_rubric}\n\n{labels}\n\n{output_basic}" + _SEP)),
    "hierarchical": (("system", "{system_basic}"), ("user", "{cluster_assignment}\n\n{labels}\n\n{output_basic}" + _SEP)),
    "combined": (("system", "{system_enhanced}"),
                 ("user", "{cluster_assignment}\n\n{taxonomy_rubric}\n\n{cot_steps}\n\n{labels}\n\n{output_reasoning}" + _SEP)),
}


def slot_problems(text: str, allowed: Iterable[str], where: str) -> list[str]:
    """What is wrong with the slots of `text` (unknown names, bad braces), each with the fix."""
    allowed = tuple(allowed)
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        return [f"{where}: unbalanced braces ({exc}); write a literal brace twice: {{{{ and }}}}"]
    problems = []
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in allowed:
            hint = (" (a slot that is not filled yet where this text is rendered; use it in a message template)"
                    if name in TEMPLATE_SLOTS
                    else "; if the braces are meant literally (a JSON example), write them twice: {{ and }}")
            problems.append(f"{where}: unknown placeholder {{{name}}}{hint}; allowed: {list(allowed)}")
        elif spec or conversion:
            problems.append(f"{where}: {{{name}}} takes no format spec or conversion; write the slot name alone")
    return problems


def slot_names(text: str) -> set[str]:
    """The slot names `text` uses (none when its braces are unbalanced)."""
    try:
        return {name for _literal, name, _spec, _conv in string.Formatter().parse(text) if name}
    except ValueError:
        return set()


def render(text: str, values: Mapping[str, str]) -> str:
    """`text` with its slots filled (checked on load, so every name is known)."""
    return text.format_map(values)
