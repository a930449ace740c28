"""Round-trip scores: McEval's pass@1 and SONAR's correctness, abstraction, conciseness, fluency.

Each is defined in docs/roundtrip.md ("Scores"): pass@1 from the verdicts, correctness from
differential testing (engine.roundtrip.difftest), abstraction from AST-edge and token Jaccard
over the U x V regenerations (Java through engine.roundtrip.java_ast), conciseness from the
comment's compressions, fluency from a causal LM's perplexity.
"""
from __future__ import annotations

import ast
import io
import itertools
import keyword
import math
import tokenize
from typing import Any, Iterable, Sequence

from engine.signature import format_signature, package_version

METRICS = ("pass@1", "correctness", "abstraction", "conciseness", "fluency")


def pass_at_1(status: str) -> float:
    return 1.0 if status == "passed" else 0.0


def correctness(agree: Sequence[bool | None] | None) -> float:
    """Share of agreeing inputs among the usable ones (None entries are left out).

    0 when the comparison could not run at all (the regenerated code broke the harness, e.g. an
    endless loop at import); NaN when no input was usable (the original never finishes).
    """
    if agree is None:
        return 0.0
    usable = [a for a in agree if a is not None]
    return sum(usable) / len(usable) if usable else math.nan


# ----- abstraction --------------------------------------------------------------------------
_CONTEXT_NODES = (ast.expr_context,)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def ast_edges(code: str) -> set[tuple[str, str]]:
    """(parent node type, child node type) pairs; Load/Store contexts are left out; empty if unparsable."""
    try:
        tree = _strip_docstrings(ast.parse(code))
    except (SyntaxError, ValueError, RecursionError):
        return set()
    edges = set()
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, _CONTEXT_NODES):
                edges.add((type(node).__name__, type(child).__name__))
    return edges


def code_tokens(code: str) -> list[str]:
    """Names, numbers, strings and operators of `code` (docstrings dropped when it parses)."""
    try:
        code = ast.unparse(_strip_docstrings(ast.parse(code)))
    except (SyntaxError, ValueError, RecursionError):
        pass
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING, tokenize.OP):
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out.extend(code.split())
    return out


def implementation_tokens(code: str, given: str) -> set[str]:
    """Token set of `code` without keywords and without the tokens of what the model was given."""
    excluded = set(code_tokens(given)) | set(keyword.kwlist) | set(keyword.softkwlist)
    return {t for t in code_tokens(code) if t not in excluded}


def jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


# Languages with a parser the project uses for abstraction (the others get NaN).
ABSTRACTION_LANGUAGES = ("python", "java")


def similarity(code_a: str, code_b: str, given: str, language: str = "python") -> float:
    if language == "java":
        from engine.roundtrip import java_ast

        edges = jaccard(java_ast.ast_edges(code_a), java_ast.ast_edges(code_b))
        tokens = jaccard(java_ast.implementation_tokens(code_a, given), java_ast.implementation_tokens(code_b, given))
        return (edges + tokens) / 2.0
    edges = jaccard(ast_edges(code_a), ast_edges(code_b))
    tokens = jaccard(implementation_tokens(code_a, given), implementation_tokens(code_b, given))
    return (edges + tokens) / 2.0


def abstraction(codes: Sequence[str], given: str, language: str = "python") -> float:
    """1 - mean pairwise similarity; NaN with fewer than two regenerations (no pair) or without a parser."""
    pairs = list(itertools.combinations(range(len(codes)), 2))
    if not pairs or language not in ABSTRACTION_LANGUAGES:
        return math.nan
    return 1.0 - sum(similarity(codes[i], codes[j], given, language) for i, j in pairs) / len(pairs)


# ----- conciseness --------------------------------------------------------------------------
def conciseness(original: str, compressions: Iterable[tuple[str, bool]]) -> float:
    """`compressions`: (compressed comment, keeps correctness). 0 when none keeps it."""
    if not original:
        return 0.0
    shortenings = [1.0 - len(text) / len(original) for text, keeps in compressions if keeps and len(text) < len(original)]
    return 1.0 - max(shortenings) if shortenings else 0.0


# ----- fluency ------------------------------------------------------------------------------
def fluency(texts: Sequence[str], model: Any, tokenizer: Any, batch_size: int = 8) -> list[float]:
    """1 / perplexity of each text under a causal LM (NaN for a text with no token)."""
    import torch

    device = next(model.parameters()).device
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    out: list[float] = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start:start + batch_size]
        encoded = [bos + [t for t in tokenizer(text, add_special_tokens=False)["input_ids"]] for text in batch]
        width = max(len(e) for e in encoded)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(batch), width), pad, dtype=torch.long)  # (B, T)
        mask = torch.zeros((len(batch), width), dtype=torch.long)  # (B, T)
        for row, e in enumerate(encoded):
            ids[row, : len(e)] = torch.tensor(e, dtype=torch.long)
            mask[row, : len(e)] = 1
        with torch.inference_mode():
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()  # (B, T, V)
        logp = torch.log_softmax(logits[:, :-1], dim=-1)  # (B, T-1, V)
        target = ids[:, 1:].to(device)  # (B, T-1)
        token_logp = logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (B, T-1)
        # Without a BOS the first token has no prediction and is not scored.
        scored = mask[:, 1:].to(device).bool()  # (B, T-1)
        for row in range(len(batch)):
            n = int(scored[row].sum())
            if n == 0:
                out.append(math.nan)
                continue
            nll = -float(token_logp[row][scored[row]].sum()) / n
            out.append(math.exp(-nll))
    return out


# ----- signatures ---------------------------------------------------------------------------
def signature(metric: str, **fields: Any) -> str:
    """Signature string of one round-trip metric, from the fields that change its numbers."""
    declared: dict[str, Any] = {"metric": f"roundtrip-{metric}"}
    declared.update(fields)
    declared["babelscore"] = package_version("babelscore")
    return format_signature(declared)
