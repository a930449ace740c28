"""A call's answer with the state its arguments were left in: what in-process code would see.

A function that sorts the list it was given changes the tests' list in one process, but only its
own copy across the split run. A server whose call changed its arguments replies `a l2 <returned
value> <argument list after the call>` instead of `o <returned value>` (Go, Java, Rust, C++); Java's
adds `l<2m> i<k> <state>...` (`a l3`) where an earlier call's array or collection changed (number k
over the run, in the order they crossed): a candidate may keep one and change it later. The engine
compares that state as part of the answer and the tests' proxy copies it back. Python's and
JavaScript's servers always reply `a l2 <returned value> <changed objects>`: containers cross as a
graph of numbered objects shared by proxy and server (references `g s1:r i<number>`), so identity
crosses too and the comparison here is of the sharing structure as well as of the values
(docs/sandbox.md, "The shared graph").
"""
from __future__ import annotations

from typing import Any

from engine.sandbox import compare, plain


def returned(outcome: tuple) -> tuple:
    """The outcome as the call's own answer (`a` as the `o` of its returned value)."""
    return ("o", outcome[1][1][0]) if outcome[0] == "a" else outcome


_NONE = ("l", [])


def _arguments_after(outcome: tuple, call: Any) -> tuple[Any, Any]:
    """The argument list after the call and the earlier arguments' changes (none for an `o` reply)."""
    if outcome[0] != "a":
        return call, _NONE
    parts = outcome[1][1]
    return parts[1], parts[2] if len(parts) > 2 else _NONE


def same_answer(call: bytes, reference: tuple, candidate: tuple) -> bool | None:
    """compare.same_outcome of the returned values (or exceptions), and the arguments' state
    after the call (and the earlier calls' arguments it changed) equal too; None when the
    reference gave no usable answer."""
    agrees = compare.same_outcome(returned(reference), returned(candidate))
    if not agrees or (reference[0] != "a" and candidate[0] != "a"):
        return agrees
    arguments = plain.parse(call)[0]
    theirs, ours = _arguments_after(reference, arguments), _arguments_after(candidate, arguments)
    return compare.same(theirs[0], ours[0]) and compare.same(theirs[1], ours[1])
