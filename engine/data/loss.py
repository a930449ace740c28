"""Loud data loss: how many input rows a run may quarantine before it exits non-zero.

A run never stops for bad rows (they go to RUN/rejected.parquet and every valid row is still
processed), but a run that lost rows must not look like a clean one: it ends with the count,
the share and where the reasons are, and exits with `EXIT_REJECTED` unless the loss is within
the limit the user allowed (`validation.max_rejected` or `--max-rejected`, a row count `N` or
a share `P%`). The default limit is 0: any quarantined row is reported as a failure.

The limit is a policy about the exit status, not about any number the run computes, so it is
kept out of the config hash: changing it never makes a run another run (`--resume` with a
higher `--max-rejected` accepts a finished run's loss without redoing anything).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from engine.errors import ConfigError
from engine.io.manifest import Manifest

# Documented in `babelscore --help` and the README's exit status table (engine/cli/exits.py EXIT_CODES).
EXIT_REJECTED = 8

_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


@dataclass(frozen=True)
class RejectionLimit:
    """At most `rows` rejected rows, or at most `percent` % of the input rows (exactly one is set)."""

    rows: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, value: Any, where: str = "validation.max_rejected") -> "RejectionLimit":
        """`0`, `12`, `"12"`, `"5%"`, `"2.5%"` -> a limit; anything else is a ConfigError naming `where`."""
        if isinstance(value, bool):
            value = None  # `true` is not a count; fall through to the error
        elif isinstance(value, int):
            if value >= 0:
                return cls(rows=value)
        elif isinstance(value, str):
            text = value.strip()
            if text.isdigit():
                return cls(rows=int(text))
            match = _SHARE.match(text)
            if match and float(match.group(1)) <= 100:
                return cls(percent=float(match.group(1)))
        raise ConfigError(
            f"{where}: got {value!r}; allowed: a row count (0, 12) or a share of the input rows ('5%', '2.5%')"
        )

    def allows(self, rejected: int, input_rows: int) -> bool:
        if self.rows is not None:
            return rejected <= self.rows
        return input_rows > 0 and 100.0 * rejected / input_rows <= (self.percent or 0.0) + 1e-12

    def __str__(self) -> str:
        if self.rows is not None:
            return str(self.rows)
        return f"{self.percent:g}%"


@dataclass(frozen=True)
class DataLoss:
    """The input rows a finished run quarantined, against the limit it ran under."""

    rejected: int
    input_rows: int
    limit: RejectionLimit
    reasons_path: str
    by_reason: tuple[tuple[str, int], ...] = ()

    @property
    def share(self) -> float:
        return self.rejected / self.input_rows if self.input_rows else 0.0

    @property
    def within_limit(self) -> bool:
        return self.limit.allows(self.rejected, self.input_rows)

    def manifest_record(self) -> dict[str, Any]:
        """What the manifest keeps under `data_loss`."""
        return {
            "rejected_rows": self.rejected,
            "input_rows": self.input_rows,
            "share": round(self.share, 6),
            "max_rejected": str(self.limit),
            "within_limit": self.within_limit,
            "reasons": self.reasons_path,
        }

    def _reasons_text(self) -> str:
        top = ", ".join(f"{n} {kind}" for kind, n in self.by_reason[:3])
        more = f", {len(self.by_reason) - 3} more kind(s)" if len(self.by_reason) > 3 else ""
        return f" ({top}{more})" if top else ""

    def closing_line(self) -> str | None:
        """The run's last line about lost rows (None when nothing was rejected)."""
        if not self.rejected:
            return None
        head = (
            f"{self.rejected} of {self.input_rows} input rows ({100 * self.share:.1f}%) were rejected and not "
            f"processed{self._reasons_text()}; reasons in {self.reasons_path}"
        )
        if self.within_limit:
            return f"data loss: {head} (allowed by max_rejected {self.limit})"
        return f"data loss: {head}; more than max_rejected {self.limit} allows: exit status {EXIT_REJECTED}"

    def suggestion(self, validate_command: str) -> str:
        """How to fix the input or accept the loss (for a run over the limit)."""
        # Rounded up to two decimals, so the share as printed allows this run's loss when copied.
        percent = f"{math.ceil(10_000 * self.share) / 100:g}%"
        return (
            f"list the {self.rejected} rejected rows with `{validate_command}` and fix the input, or accept the loss "
            f"with --max-rejected {self.rejected} (or {percent}, or `validation: {{max_rejected: {self.rejected}}}` in the config)"
        )


def assess(manifest: Manifest, limit: RejectionLimit, reasons_path: str) -> DataLoss:
    """The data loss of a run from its manifest counts (prepare wrote them)."""
    counts = manifest.counts
    by_reason = sorted((counts.get("rejected_by_reason") or {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return DataLoss(
        rejected=int(counts.get("rejected_rows") or 0),
        input_rows=int(counts.get("input_rows") or 0),
        limit=limit,
        reasons_path=reasons_path,
        by_reason=tuple(by_reason),
    )
