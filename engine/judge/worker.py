"""Judging a part in a child process: the way to run a vLLM judge in a process that already
holds another vLLM model (vLLM cannot free a model in-process).

    python -m engine.judge.worker JOB.json

JOB.json: {"params": {JudgeParams mapping}, "task": name, "samples": "in.parquet", "out": "out.parquet"}
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import StageError
from engine.judge.config import JudgeParams

_REPO_ROOT = Path(__file__).resolve().parents[2]


def run_job(job: dict) -> None:
    from engine.judge.backends import get_chat_backend
    from engine.judge.run import judge_table

    params = JudgeParams.from_mapping(job["params"], where="params")
    table = judge_table(pq.read_table(job["samples"]), params, job["task"], get_chat_backend(params))
    pq.write_table(table, job["out"])


def judge_in_subprocess(samples: pa.Table, params: JudgeParams, task: str, *, timeout: float | None = None) -> pa.Table:
    """`judge_table` run in a fresh process that loads the judge and exits afterwards."""
    with tempfile.TemporaryDirectory(prefix="babelscore-judge-") as tmp:
        samples_path, out_path, job_path = Path(tmp) / "samples.parquet", Path(tmp) / "out.parquet", Path(tmp) / "job.json"
        pq.write_table(samples, samples_path)
        job_path.write_text(json.dumps({"params": params.to_dict(), "task": task, "samples": str(samples_path),
                                        "out": str(out_path)}), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        proc = subprocess.run([sys.executable, "-m", "engine.judge.worker", str(job_path)], env=env, timeout=timeout,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise StageError("judge", f"judge worker exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
        return pq.read_table(out_path)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m engine.judge.worker JOB.json", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run_job(json.loads(Path(args[0]).read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
