"""Console lines of `babelscore run` beyond the stages' own (`PartStage.console_lines`: the score
table, the round trip's pass@1) and the kappa table: what `--resume` kept and redid, a note on
small-sample kappa intervals, and the throughput block. Pure functions returning text; the CLI
prints them."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from engine import throughput

# Below this many samples per language a kappa's bootstrap interval is wide (the demo has 55).
SMALL_SAMPLE = 30


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


def small_sample_note(calibration: pa.Table, threshold: int = SMALL_SAMPLE) -> str | None:
    """A line on how wide kappa's interval is when a language has few labelled samples."""
    rows = [r for r in calibration.select(["task", "language", "n", "kappa_lo", "kappa_hi", "fitted"]).to_pylist()
            if r["task"] == "agreement" and r["fitted"]]
    small = sorted({(r["language"], r["n"]) for r in rows if r["n"] < threshold})
    if not small:
        return None
    widths = [r["kappa_hi"] - r["kappa_lo"] for r in rows if r["n"] < threshold
              and r["kappa_lo"] is not None and r["kappa_hi"] is not None]
    width = f"; the median 95% interval is {sorted(widths)[len(widths) // 2]:.2f} wide" if widths else ""
    langs = ", ".join(f"{lang} (n={n})" for lang, n in small)
    return (f"note: kappa from fewer than {threshold} samples per language ({langs}) is uncertain{width}: "
            "read it with its interval (kappa_lo / kappa_hi in calibration.parquet, the report's error bars)")


def throughput_lines(section: dict[str, Any], layout: Any = None) -> list[str]:
    """layout: the run's engine.io.layout.RunLayout (its stages' own rates)."""
    return throughput.console_lines(section, layout.rates if layout is not None else None)
