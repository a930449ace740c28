"""Failure isolation within a part: one bad item must not cost the others their results.

Every stage that sends a batch of items to a model (generation, the round trip's
generators, likelihood and embedding forwards, tokenisation) goes through `run_isolated`:
the whole batch; on out of memory, halves of it (`engine.runtime.halve_on_oom`) down to one
item, where it becomes a `TransientError`; on any other exception, each item alone, and an
item that still fails gets an `ItemFailure` (its row records the error, never dropped).

A `TransientError`, a `ModelLoadError`, a `ConfigError` and a `BudgetExhaustedError` are never
turned into row errors: they say nothing about the item and would fail every item alike, so
they are re-raised and the part fails (retried when transient, by the executor's policy).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from engine.errors import BudgetExhaustedError, ConfigError, ModelLoadError, TransientError

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

# Failures that belong to the part (or the run), never to one item.
PART_FAILURES = (TransientError, ModelLoadError, ConfigError, BudgetExhaustedError)


@dataclass(frozen=True)
class ItemFailure:
    """Stands in for the result of an item whose call raised; `error` is what its row records."""

    error: str
    exception: BaseException

    @classmethod
    def of(cls, exc: BaseException) -> "ItemFailure":
        return cls(f"{type(exc).__name__}: {exc}", exc)


def _halving(fn: Callable[[Sequence[T]], list[R]], items: Sequence[T], on_halve: Callable[[int], None] | None) -> list[R]:
    from engine.runtime import halve_on_oom

    results = halve_on_oom(fn, items, on_halve=on_halve)
    if len(results) != len(items):
        raise RuntimeError(f"a batch of {len(items)} item(s) gave {len(results)} result(s)")
    return results


def run_isolated(
    fn: Callable[[Sequence[T]], list[R]],
    items: Sequence[T],
    what: str = "batch",
    on_halve: Callable[[int], None] | None = None,
) -> list[R | ItemFailure]:
    """`fn(items)` (one result per item, in order), isolating failures as the module docstring says.

    what: names the batch in the warning logged when it falls back to item by item.
    on_halve: called with the size of every batch split after out of memory.
    """
    if not items:
        return []
    try:
        return list(_halving(fn, items, on_halve))
    except PART_FAILURES:
        raise
    except Exception as exc:  # noqa: BLE001 - find the item that fails, keep the others
        if len(items) == 1:
            return [ItemFailure.of(exc)]
        logger.warning("%s of %d failed (%s: %s); retrying item by item", what, len(items), type(exc).__name__, exc)
    out: list[R | ItemFailure] = []
    for item in items:
        try:
            out.extend(_halving(fn, [item], on_halve))
        except PART_FAILURES:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded on the item's row, the others go on
            out.append(ItemFailure.of(exc))
    return out
