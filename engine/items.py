"""The unit every scorer consumes: one candidate comment against its reference, in its file."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class ScoreItem:
    """A prediction (or a noise prediction) of one sample, with everything needed to score it.

    The candidate comment is `prime + prediction`; in context it replaces
    `source[comment_start:comment_end]`. The scored spans are the parts after the prime:
    `prediction` on the candidate side and `reference[len(prime):]` on the reference side.
    """

    sample_id: str
    file_id: str
    language: str
    generator: str | None
    noise: str  # none | uniform | targeted | perturb:<target>:<family> (engine.records.PERTURB_PREFIX)
    source: str
    comment_start: int
    comment_end: int
    reference: str
    prime: str
    prediction: str

    @property
    def candidate_comment(self) -> str:
        return self.prime + self.prediction

    @property
    def reference_tail(self) -> str:
        """The scored part of the reference: what follows the prime."""
        return self.reference[len(self.prime):]

    def candidate_in_context(self) -> str:
        return self.source[: self.comment_start] + self.candidate_comment + self.source[self.comment_end:]


class ScoreRow(NamedTuple):
    """One value a scorer produced for an item; the pipeline adds the sample columns."""

    sample_id: str
    noise: str
    metric: str
    scorer: str
    context: str
    variant: str
    value: float
    signature: str
    error: str | None = None
