"""The round trip's own input: its task table cut into parts under RUN/roundtrip_tasks/.

`cut_task_parts` writes RUN/roundtrip_tasks/part-NNNNN.parquet once (each part file
atomically, then an index that marks the set complete) and returns the rows of each part; on
resume the index is reused, so part i always holds the same tasks.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from engine.io.atomic import write_json_atomic, write_parquet_atomic
from engine.roundtrip.tasks import TASK_SCHEMA, load_tasks
from engine.stages.base import OwnTable

log = logging.getLogger(__name__)

TASKS_DIR = "roundtrip_tasks"
INDEX_FILE = "index.json"


def task_part_path(run_root: str | Path, index: int) -> Path:
    return Path(run_root) / TASKS_DIR / f"part-{index:05d}.parquet"


def task_rows(params: Any) -> int:
    """Rows of the section's task table after its `limit`."""
    n = load_tasks(params.tasks, programming_languages=params.programming_languages).num_rows
    return min(n, params.limit) if params.limit else n


def task_table_description(params: Any) -> OwnTable:
    """The task table as the stage describes it to the bench: its rows and the options that cap it."""
    return OwnTable(rows=task_rows(params), limit_option="limit", per_part_option="tasks_per_part")


def read_task_part(run_root: str | Path, index: int) -> list[dict[str, Any]]:
    """The tasks of part `index` (TASK_SCHEMA rows), as `cut_task_parts` wrote them."""
    return pq.read_table(task_part_path(run_root, index), schema=TASK_SCHEMA).to_pylist()


def cut_task_parts(params: Any, run_root: str | Path) -> list[int]:
    """Cut the task table into parts once per run directory; rows of each part, by index."""
    index_path = Path(run_root) / TASKS_DIR / INDEX_FILE
    if index_path.exists():
        return list(json.loads(index_path.read_text(encoding="utf-8"))["rows_per_part"])
    table = load_tasks(params.tasks, programming_languages=params.programming_languages)
    if params.limit:
        table = table.slice(0, params.limit)
    size = params.tasks_per_part
    rows = []
    for index, start in enumerate(range(0, table.num_rows, size)):
        part = table.slice(start, size)
        write_parquet_atomic(task_part_path(run_root, index), part, TASK_SCHEMA)
        rows.append(part.num_rows)
    # Written last: its presence says every part file above is complete.
    write_json_atomic(index_path, {"tasks": params.tasks, "n_tasks": table.num_rows, "rows_per_part": rows})
    log.info("roundtrip: %d task(s) in %d part(s)", table.num_rows, len(rows))
    return rows
