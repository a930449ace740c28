"""Which rows of stage `perturb` the score stage scores.

A perturbation row carries `noise` (`perturb:<target>:<family>`) and `prediction` (the perturbed
scored span); the score stage turns each into a score item beside the sample's prediction and
noise, with the sample's own reference, prime and file, so each metric compares the perturbed
text with the same reference as the original. Rows that could not apply (prediction null, the
reason in `skip_reason`) are not scored.

S(original): for target `reference`, the row of family `original` (the unperturbed span, i.e.
the reference scored against itself); for target `prediction`, the sample's real row (noise
`none`), which is scored anyway.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def scored_perturbations(table: pa.Table) -> pa.Table:
    """(sample_id, noise, prediction) of the perturbation rows to score, in table order."""
    return table.filter(pc.is_valid(table["prediction"])).select(["sample_id", "noise", "prediction"])
