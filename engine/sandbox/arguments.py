"""A call's answer with the state its arguments were left in: what in-process code would see.

A function that sorts the list it was given changes the tests' list in one process, but only its
own copy across the split run. A server whose call changed its arguments replies `a l2 <returned
value> <argument list after the call>` instead of `o <returned value>` (Go, Java, Rust, C++), so the
engine compares that state as part of the answer and the tests' proxy copies it back. Python's and
JavaScript's servers always reply `a l2 <returned value> <changed objects>`: containers cross as a
graph of numbered objects shared by proxy and server (references `g s1:r i<number>`), so identity
crosses too (a returned argument, a row twice in a grid, a cached list the tests changed) and the
comparison here is of the sharing structure as well as of the values (docs/sandbox.md, "The
shared graph").
"""
from __future__ import annotations

from typing import Any

from engine.sandbox import compare, plain


def returned(outcome: tuple) -> tuple:
    """The outcome as the call's own answer (`a` as the `o` of its returned value)."""
    return ("o", outcome[1][1][0]) if outcome[0] == "a" else outcome


def _arguments_after(outcome: tuple, call: Any) -> Any:
    return outcome[1][1][1] if outcome[0] == "a" else call


def same_answer(call: bytes, reference: tuple, candidate: tuple) -> bool | None:
    """compare.same_outcome of the returned values (or exceptions), and the arguments' state
    after the call equal too; None when the reference gave no usable answer."""
    agrees = compare.same_outcome(returned(reference), returned(candidate))
    if not agrees or (reference[0] != "a" and candidate[0] != "a"):
        return agrees
    arguments = plain.parse(call)[0]
    return compare.same(_arguments_after(reference, arguments), _arguments_after(candidate, arguments))
