"""Console lines of `babelscore run` beyond the stages' own (`Stage.console_lines`: the score
table, the round trip's pass@1, the kappa table): what `--resume` kept and redid, and the
throughput block. Pure functions returning text; the CLI
prints them."""
from __future__ import annotations

from typing import Any

from engine import throughput


def reads_samples(plan: Any) -> bool:
    """Whether a run's stages read the sample table (a round-trip-only run reads its task table,
    so its sample counts would say nothing about the work). plan: the run's RunPlan."""
    stages = plan.part_stages()
    return not stages or any(bound.stage.input_columns for bound in stages)


def resume_lines(parts_by_stage: dict[str, dict[str, int]]) -> list[str]:
    """`resume: score kept 3 committed part(s), ran 2` per stage, when anything was kept."""
    if not any(v.get("kept") for v in parts_by_stage.values()):
        return []
    return [
        f"resume: {stage} kept {v.get('kept', 0)} committed part(s), ran {v.get('run', 0)}"
        for stage, v in parts_by_stage.items()
    ]


def throughput_lines(section: dict[str, Any], layout: Any = None) -> list[str]:
    """layout: the run's engine.io.layout.RunLayout (its stages' own rates)."""
    return throughput.console_lines(section, layout.rates if layout is not None else None)
