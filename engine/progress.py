"""Progress bars for long work: rows, rows/s and ETA on stderr (tqdm), silent when not a TTY."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from tqdm import tqdm


@contextmanager
def progress_bar(stage: str, total_rows: int) -> Iterator[tqdm]:
    disable = os.environ.get("BABELSCORE_NO_PROGRESS") == "1" or not sys.stderr.isatty()
    bar = tqdm(
        total=total_rows,
        desc=f"{stage:>9}",
        unit="rows",
        dynamic_ncols=True,
        disable=disable,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} rows [{elapsed}<{remaining}, {rate_fmt}]",
    )
    try:
        yield bar
    finally:
        bar.close()
