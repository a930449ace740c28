"""The numeric settings every process of a run shares (`deterministic:` in the config).

A neural value's last bits depend on how the arithmetic is split: by torch's intra-op thread
count on a CPU and by the batch a sequence is padded and multiplied with. The first is fixed
here for every process; the second by canonical batching (ordered by a stable key of content,
never input order) and, in `batch_invariant` mode, removed.

- `threads`: torch's intra-op threads in every process that computes a part; by default resolved
  once by the driver (OMP_NUM_THREADS, else the usable CPUs) and sent to every worker; signatures say `threads:N`.
- `mode: batch_invariant`: every sequence in a batch of its own, so values do not depend on the
  part size either; slower (docs/running.md, docs/throughput.md); signatures say `batching:invariant`.

The default mode and thread count stay out of `to_dict` and so out of the config hash.
"""
from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from typing import Any, Literal

from engine.errors import ConfigError
from engine.params import Params, require

MODES = ("default", "batch_invariant")


@dataclass(frozen=True)
class DeterministicParams(Params):
    """The `deterministic:` key: a mode (`default` | `batch_invariant`) or `{mode, threads}`."""

    mode: Literal["default", "batch_invariant"] = "default"
    threads: int | None = None  # None: resolved by the driver at run start (see the module docstring)

    def __post_init__(self) -> None:
        require(self.threads is None or (isinstance(self.threads, int) and self.threads >= 1),
                "deterministic.threads", self.threads, "null or an integer >= 1")

    @property
    def batch_invariant(self) -> bool:
        return self.mode == "batch_invariant"

    @property
    def is_default(self) -> bool:
        return self.mode == "default" and self.threads is None

    def resolved(self) -> "DeterministicParams":
        return self if self.threads is not None else dataclasses.replace(self, threads=default_threads())


def parse_deterministic(raw: Any) -> DeterministicParams:
    if raw is None:
        return DeterministicParams()
    if isinstance(raw, str):
        if raw not in MODES:
            raise ConfigError(f"deterministic: got {raw!r}; allowed: {list(MODES)} or a mapping {{mode, threads}}")
        return DeterministicParams(mode=raw)  # type: ignore[arg-type]
    if isinstance(raw, dict):
        return DeterministicParams.from_mapping(raw, where="deterministic")  # type: ignore[return-value]
    raise ConfigError(f"deterministic: got {raw!r}; allowed: {list(MODES)} or a mapping {{mode, threads}}")


def default_threads() -> int:
    """What `threads` means when not given: OMP_NUM_THREADS if set, else the usable CPUs."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) >= 1:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


_current = DeterministicParams()


def apply(params: DeterministicParams, needs_torch: bool = False) -> None:
    """Make this process compute as `params` says (threads resolved first). torch is set when
    it is loaded already or `needs_torch` (a part of a model); a lexical part never imports it."""
    global _current
    params = params.resolved()
    _current = params
    if needs_torch or "torch" in sys.modules:
        import torch

        if torch.get_num_threads() != params.threads:
            torch.set_num_threads(params.threads)


def current() -> DeterministicParams:
    """The settings of this process (`apply`'s last; threads resolved)."""
    return _current.resolved()


def signature_fields() -> dict[str, Any]:
    """What a neural scorer's signature records of these settings."""
    params = current()
    return {"threads": params.threads, "batching": "invariant" if params.batch_invariant else "canonical"}
