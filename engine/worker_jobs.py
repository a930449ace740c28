"""Jobs run in a fresh Python process: the way to load a model in a process of its own.

vLLM cannot free a model in-process, so a second vLLM model (a generator or a judge) runs in a
child process that loads it, does one job and exits. A job is a JSON file; the child is
`python -m <module> JOB.json`, whose `main` is `job_main(run_job)`.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from engine.errors import StageError

_REPO_ROOT = Path(__file__).resolve().parent.parent


def run_in_subprocess(module: str, job: dict, stage: str, *, timeout: float | None = None,
                      env: dict[str, str] | None = None) -> None:
    """Run `python -m module JOB.json` with `job`; StageError naming `stage` if the child fails."""
    with tempfile.TemporaryDirectory(prefix=f"babelscore-{stage}-") as tmp:
        job_file = Path(tmp) / "job.json"
        job_file.write_text(json.dumps(job), encoding="utf-8")
        child_env = dict(os.environ if env is None else env)
        # The child imports this tree's `engine`, even when it is not installed.
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), child_env.get("PYTHONPATH", "")) if p)
        proc = subprocess.run([sys.executable, "-m", module, str(job_file)],
                              env=child_env, timeout=timeout, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise StageError(stage, f"{stage} worker exited with {proc.returncode}:\n{proc.stderr[-4000:]}")


def job_main(module: str, run_job: Callable[[dict], None], argv: Sequence[str] | None = None) -> int:
    """The child's entry point: read the job file named on the command line and run it."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m {module} JOB.json", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run_job(json.loads(Path(args[0]).read_text(encoding="utf-8")))
    return 0
