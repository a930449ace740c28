"""How the thread pools of this process wait: decided once, before torch or numba load.

Why: torch's intra-op pool (OpenMP) and numba's OpenMP layer by default keep a thread that
finished its share of a parallel region spinning until the next region starts. On a shared
machine the spinning threads take the time slices the working ones need, and a batch of short
sequences waits at every barrier for a thread that is not running (measured: docs/running.md;
bench/bench_bertscore.py prints the same comparison). Passive waiting changes no number: the
arithmetic is split by the thread count (engine.numerics), not by how idle threads wait.

`apply()` runs when `engine` is imported, so before any of its modules loads torch or numba; a
variable the user set is kept (OMP_WAIT_POLICY=ACTIVE restores spinning on a dedicated machine).
`plan()` is what a run records in its manifest.
"""
from __future__ import annotations

import os
import sys
from typing import Any

# libgomp and Intel's OpenMP read these when they load; PASSIVE also sets libgomp's spin count to 0.
WAIT_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}

_state: dict[str, Any] = {}


def apply() -> None:
    """Set the wait policy for the pools this process will start (once; later calls keep the first)."""
    if _state:
        return
    late = sorted(name for name in ("torch", "numba") if name in sys.modules)
    chosen = {}
    for key, value in WAIT_ENV.items():
        chosen[key] = os.environ.setdefault(key, value)
    _state.update({"wait": chosen, "loaded_before": late})


def plan() -> dict[str, Any]:
    """The thread plan of this process: pool sizes and how their threads wait.

    `loaded_before` names the libraries that were loaded before the plan was applied (their
    pools may wait as their defaults say); empty in a process that imported `engine` first."""
    apply()
    record: dict[str, Any] = {**_state["wait"], "loaded_before": list(_state["loaded_before"])}
    if "torch" in sys.modules:  # loaded already: importing it here costs nothing
        import torch

        record["torch_intra_op"] = torch.get_num_threads()
        record["torch_inter_op"] = torch.get_num_interop_threads()
    # numba's pool (the KDE kernels, on the driver) has one thread per usable CPU unless this says otherwise.
    record["numba_threads"] = os.environ.get("NUMBA_NUM_THREADS", "default")
    record["tokenizers_parallelism"] = os.environ.get("TOKENIZERS_PARALLELISM", "default")
    return record
