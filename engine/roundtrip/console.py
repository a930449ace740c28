"""The round trip's lines in `babelscore run`'s console: task counts and pass@1 per generator
and language, read from the stage's folder of the run directory."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


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
