"""JSON schemas of a judge's answer, built from the taxonomy and a prompt pack's field names.

Used for structured outputs (vLLM with xgrammar, or an OpenAI-compatible server's
`response_format`); a prompt template may show it (slot `{output_schema}`), while the shipped
prompts show the pack's answer example with placeholders, as the study's do. Every free-text field has a
`maxLength` and every array a `maxItems`, and confidences come from a fixed grid, so that a
weak model constrained by the grammar always reaches the end of the object instead of
filling the token budget with text, items or digits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from engine.judge.promptpack import PromptPack
from engine.records import LABELS
from engine.taxonomy import CLUSTERS, leaf_codes

CONFIDENCE_GRID = tuple(round(i / 10, 1) for i in range(11))


@dataclass(frozen=True)
class SchemaLimits:
    max_text_chars: int = 500  # explanation, reasoning, justification
    max_errors: int = 10  # error codes per evaluation
    max_name_chars: int = 200  # model_name when the candidates' names are not given


def codes_for(cluster: str | None) -> list[str]:
    """The codes a call may assign: one cluster's, or every assignable code."""
    return list(CLUSTERS[cluster]) if cluster is not None else leaf_codes()


# Strategies whose answers reason first and give each error with a confidence and a justification.
REASONING = ("cot", "combined")


def text_field(strategy: str) -> str:
    """Internal name of the free-text field: chain-of-thought (and combined) reasons, the others explain."""
    return "reasoning" if strategy in REASONING else "explanation"


def property_order(pack: PromptPack, strategy: str) -> list[str]:
    """An evaluation's keys in the order the model writes them. Chain-of-thought reasons first,
    then lists the errors, then gives the label (a grammar-constrained decoder writes the
    properties in this order, so the reasoning comes before the verdict); the others give the
    errors, then their explanation, then the label."""
    order = ("model_name", "reasoning", "errors", "overall_quality") if strategy in REASONING else \
        ("model_name", "errors", "explanation", "overall_quality")
    return [pack.field(name) for name in order]


def output_schema(
    pack: PromptPack,
    strategy: str,
    cluster: str | None = None,
    model_names: Sequence[str] | None = None,
    limits: SchemaLimits = SchemaLimits(),
) -> dict[str, Any]:
    """The schema of one call's answer: `{evaluations: [{model_name, errors, text, overall_quality}]}`.

    With `model_names`, there is exactly one evaluation per candidate, in that order.
    """
    f = pack.field
    codes = codes_for(cluster)
    if strategy in REASONING:
        error_item: dict[str, Any] = {
            "type": "object",
            "properties": {
                f("code"): {"type": "string", "enum": codes},
                f("confidence"): {"type": "number", "enum": list(CONFIDENCE_GRID)},
                f("justification"): {"type": "string", "maxLength": limits.max_text_chars},
            },
            "required": [f("code"), f("confidence"), f("justification")],
            "additionalProperties": False,
        }
    else:
        error_item = {"type": "string", "enum": codes}
    text = f(text_field(strategy))

    def evaluation(name_schema: dict[str, Any]) -> dict[str, Any]:
        properties = {
            f("model_name"): name_schema,
            f("errors"): {"type": "array", "items": error_item, "maxItems": limits.max_errors},
            text: {"type": "string", "maxLength": limits.max_text_chars},
            f("overall_quality"): {"type": "string", "enum": [pack.label(label) for label in reversed(LABELS)]},
        }
        properties = {key: properties[key] for key in property_order(pack, strategy)}
        return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}

    if model_names:
        # One evaluation per candidate, in the prompt's order: with only an enum of names, a
        # constrained model can judge one candidate twice and another not at all.
        evaluations: dict[str, Any] = {
            "type": "array",
            "prefixItems": [evaluation({"type": "string", "const": name}) for name in model_names],
            "items": False, "minItems": len(model_names), "maxItems": len(model_names),
        }
    else:
        evaluations = {"type": "array", "items": evaluation({"type": "string", "maxLength": limits.max_name_chars}),
                       "minItems": 1, "maxItems": 64}
    return {
        "type": "object",
        "properties": {f("evaluations"): evaluations},
        "required": [f("evaluations")],
        "additionalProperties": False,
    }
