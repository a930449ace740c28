"""Judging a part in a child process: the way to run a vLLM judge in a process that already
holds another vLLM model (vLLM cannot free a model in-process).

    python -m engine.judge.worker JOB.json

JOB.json: {"params": {JudgeParams mapping}, "task": name, "samples": "in.parquet", "out": "out.parquet"}
"""
from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from engine.judge.config import JudgeParams
from engine.worker_jobs import job_main, run_in_subprocess


def run_job(job: dict) -> None:
    from engine.judge.backends import get_chat_backend
    from engine.judge.run import judge_table

    params = JudgeParams.from_mapping(job["params"], where="params")
    table = judge_table(pq.read_table(job["samples"]), params, job["task"], get_chat_backend(params))
    pq.write_table(table, job["out"])


def judge_in_subprocess(samples: pa.Table, params: JudgeParams, task: str, *, timeout: float | None = None) -> pa.Table:
    """`judge_table` run in a fresh process that loads the judge and exits afterwards."""
    with tempfile.TemporaryDirectory(prefix="babelscore-judge-") as tmp:
        samples_path, out_path = Path(tmp) / "samples.parquet", Path(tmp) / "out.parquet"
        pq.write_table(samples, samples_path)
        job = {"params": params.to_dict(), "task": task, "samples": str(samples_path), "out": str(out_path)}
        run_in_subprocess("engine.judge.worker", job, "judge", timeout=timeout)
        return pq.read_table(out_path)


def main(argv: Sequence[str] | None = None) -> int:
    return job_main("engine.judge.worker", run_job, argv)


if __name__ == "__main__":
    sys.exit(main())
