"""The `validation:` section: how the run's input rows are checked (engine.data.validate)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.data.loss import RejectionLimit
from engine.params import Params


@dataclass(frozen=True)
class ValidationParams(Params):
    """The `validation:` section: how input rows are checked."""

    unknown_error_codes: Literal["warn", "reject"] = "warn"
    """a row whose error_codes hold a code outside the study's taxonomy is
    kept with a console warning naming the codes (`warn`) or quarantined (`reject`)."""
    max_rejected: int | str = 0
    """how many input rows a run may reject (quarantine in RUN/rejected.parquet) and
    still exit 0: a row count (`0`, `12`) or a share of the input rows (`'5%'`). Over it the
    run still processes every valid row, then ends with the count and exits 8.
    `--max-rejected` overrides it. Not part of the config hash."""

    def __post_init__(self) -> None:
        self.rejection_limit  # refuses a malformed limit at config time

    @property
    def rejection_limit(self) -> RejectionLimit:
        return RejectionLimit.parse(self.max_rejected)
