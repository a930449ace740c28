"""A process that loads one generator and runs generation jobs with it (one model per process).

    python -m engine.generate.worker JOB.json

JOB.json: {"params": {GenerateParams mapping},
           "stage": {"samples": "in.parquet", "out": "out.parquet", "max_new_tokens": N},   optional
           "requests": {"prompts": [[ids...], ...], "max_new_tokens": N, "out": "out.json"}}  optional
`stage` runs `generate_samples`; `requests` sends raw token-id prompts to the backend with the
family's stop ids and writes {"token_ids", "finish_reasons", "load_s", "generate_s"} (tests
and benches compare backends token by token with it). Both share one loaded model.

`generate_in_subprocess` runs the stage this way from any process (benchmarks time the load in
a fresh process with it); within a run the model registry already keeps every vLLM engine in
a worker process of its own.
"""
from __future__ import annotations

import json
import logging
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from engine.generate.backend import GenerationRequest, get_backend
from engine.generate.cards import get_card
from engine.generate.prompts import FimPromptBuilder
from engine.generate.stage import GenerateParams, generate_samples, load_tokenizer
from engine.worker_jobs import job_main, run_in_subprocess

logger = logging.getLogger(__name__)


def run_job(job: dict) -> None:
    params = GenerateParams.from_mapping(job["params"], where="params")
    if "requests" in job:
        spec = job["requests"]
        builder = FimPromptBuilder(get_card(params.card, params.cards_file), load_tokenizer(params.tokenizer_name))
        started = time.perf_counter()
        backend = get_backend(params.backend_spec())
        loaded = time.perf_counter()
        requests = [GenerationRequest(str(i), tuple(p), int(spec["max_new_tokens"]), params.seed)
                    for i, p in enumerate(spec["prompts"])]
        outputs = backend.generate(requests, builder.stop_ids)
        done = time.perf_counter()
        Path(spec["out"]).write_text(json.dumps({
            "token_ids": [list(o.token_ids) for o in outputs],
            "finish_reasons": [o.finish_reason for o in outputs],
            "load_s": loaded - started,
            "generate_s": done - loaded,
        }), encoding="utf-8")
    if "stage" in job:
        spec = job["stage"]
        table = generate_samples(pq.read_table(spec["samples"]), params, spec.get("max_new_tokens"))
        pq.write_table(table, spec["out"])


def run_worker(job: dict, *, timeout: float | None = None, env: dict[str, str] | None = None) -> None:
    """Run `job` (see the module docstring) in a fresh Python process; raise StageError if it fails."""
    run_in_subprocess("engine.generate.worker", job, "generate", timeout=timeout, env=env)


def generate_in_subprocess(samples: pa.Table, params: GenerateParams, max_new_tokens: int | None = None, *,
                           timeout: float | None = None, env: dict[str, str] | None = None) -> pa.Table:
    """`generate_samples` run in a child process that loads the model and exits afterwards."""
    with tempfile.TemporaryDirectory(prefix="babelscore-gen-") as tmp:
        samples_path, out_path = Path(tmp) / "samples.parquet", Path(tmp) / "out.parquet"
        pq.write_table(samples, samples_path)
        run_worker({"params": params.to_dict(),
                    "stage": {"samples": str(samples_path), "out": str(out_path), "max_new_tokens": max_new_tokens}},
                   timeout=timeout, env=env)
        return pq.read_table(out_path)


def main(argv: Sequence[str] | None = None) -> int:
    return job_main("engine.generate.worker", run_job, argv)


if __name__ == "__main__":
    sys.exit(main())
