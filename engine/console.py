"""Console lines of `babelscore run` beyond the score and kappa tables: what `--resume` kept and
redid, the round trip's pass@1 per language and generator, a note on small-sample kappa
intervals, and the throughput block. Pure functions returning text; the CLI prints them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

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


def roundtrip_table(directory: str | Path) -> pa.Table | None:
    """Every round-trip row under `directory` (the stage's folder in the run directory)."""
    files = sorted(Path(directory).glob("*.parquet"))
    if not files:
        return None
    return pa.concat_tables([pq.read_table(f, columns=["task_id", "language", "generator", "pass_at_1"]) for f in files])


def roundtrip_lines(directory: str | Path) -> list[str]:
    """Task counts and a pass@1 table (generator x language) of a run's round trip (its folder)."""
    table = roundtrip_table(directory)
    if table is None or table.num_rows == 0:
        return []
    rows = table.to_pylist()
    tasks = sorted({r["task_id"] for r in rows})
    langs = list(dict.fromkeys(r["language"] for r in rows))
    gens = list(dict.fromkeys(r["generator"] for r in rows))
    lines = [
        f"round trip: {len(tasks)} task(s) x {len(langs)} language(s) x {len(gens)} generator(s), {len(rows)} sandboxed run(s)",
        "pass@1 (share of runs whose tests all pass; mean over tasks and samples):",
    ]
    cells: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if r["pass_at_1"] is not None:
            cells.setdefault((r["generator"], r["language"]), []).append(r["pass_at_1"])
    width = max(len("generator"), *(len(g) for g in gens))
    lines.append("  " + "generator".ljust(width) + "".join(f"{lang:>7}" for lang in langs))
    for g in gens:
        values = [cells.get((g, lang)) for lang in langs]
        lines.append("  " + g.ljust(width) + "".join(f"{sum(v) / len(v):7.2f}" if v else f"{'-':>7}" for v in values))
    return lines


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
