"""Every bench/ script runs at a tiny size and prints its figures (one smoke test each).

The values are not checked (speed is a measurement, never a test); the labels of the figures
are, so a script that stops before its table, or prints it without a figure, fails here instead
of rotting until someone runs it by hand. Scripts that load real models or engines are `slow`.
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.support.paths import PYTHON, REPO

NUMBER = r"[-+]?\d[\d,.]*(?:e[-+]?\d+)?"


def _run(tmp_path, script: str, *args: str, timeout: int = 900) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "BABELSCORE_NO_PROGRESS": "1"}
    proc = subprocess.run([PYTHON, str(REPO / "bench" / script), *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def _has(out: str, *patterns: str) -> None:
    """Each pattern (a regex, NUMBER for a figure) matches a line of the output."""
    for pattern in patterns:
        assert re.search(pattern.replace("NUMBER", NUMBER), out, re.MULTILINE), f"no line matches {pattern!r} in:\n{out}"


def test_make_synthetic_writes_the_rows_it_says(tmp_path):
    out = _run(tmp_path, "make_synthetic.py", str(tmp_path / "s.jsonl"), "--samples", "10")
    _has(out, r"wrote 10 samples \(5 generators per file\)")
    assert len((tmp_path / "s.jsonl").read_text().splitlines()) == 10


def test_bench_kde_prints_the_ratio_and_the_agreement(tmp_path):
    out = _run(tmp_path, "bench_kde.py", "--groups", "3", "--n", "150", "--grid", "64")
    _has(out, r"^ours \(numba.*NUMBER s", r"^reference \(scipy.*NUMBER s", r"^ratio reference / ours\s+NUMBERx", r"^ratio by CPU seconds\s+NUMBERx",
         r"agreement: \d+/3 groups with identical regions", r"scipy evaluate\(\) only.*ratio NUMBERx", r"load average NUMBER")


def test_bench_lexical_prints_each_metric_against_its_anchor(tmp_path):
    out = _run(tmp_path, "bench_lexical.py", "--pairs", "20")
    for metric in ("bleu", "rougeL", "meteor"):
        _has(out, rf"^{metric}\s+.*\s+NUMBER\s+NUMBER\s+NUMBER\s+NUMBER$")


def test_gpu_check_dry_run_lists_its_steps(tmp_path):
    out = _run(tmp_path, "gpu_check.py", "--dry-run")
    _has(out, r"1\. tests:", r"2\. encoder:", r"3\. bertscore:", r"4\. generate:", r"5\. mini-run:")


def test_bench_roundtrip_prints_both_ways_and_the_ratio(tmp_path):
    out = _run(tmp_path, "bench_roundtrip.py", "--limit", "1", "--isolation", "hook")
    _has(out, r"^sandbox : passed 1/1\s+NUMBER runs/s", r"^plain   : passed 1/1\s+NUMBER runs/s",
         r"^ratio \(sandbox runs/s / plain runs/s\): NUMBER")


def test_bench_run_memory_prints_the_peaks_against_the_bounds(tmp_path):
    out = _run(tmp_path, "bench_run_memory.py", "--language", "python", "--limit", "1")
    if out.startswith("skipped:"):
        pytest.skip(out.strip())
    _has(out, r"^limits: run_memory_mb NUMBER, compile_memory_mb NUMBER$",
         r"^python\s+largest run group\s+NUMBER MB, largest program group\s+NUMBER MB$")


def test_bench_scale_prints_memory_at_scale(tmp_path):
    # The local executor only: the worker table (Ray) is the same code path as these children.
    out = _run(tmp_path, "bench_scale.py", "--samples", "10", "--scale", "2", "--workers", "1", "--executor", "local",
               "--scorers", "lexical", "--no-throughput", "--work", str(tmp_path))
    _has(out, r"driver, whole run\s+NUMBER MiB\s+NUMBER MiB\s+NUMBERx", r"driver, score\s+NUMBER MiB",
         r"time at 20 samples: score NUMBER s", r"worst driver/worker ratio NUMBERx",
         r"load average NUMBER NUMBER NUMBER \(1, 5, 15 min\) at the start")


@pytest.mark.slow
def test_bench_bertscore_prints_both_modes_against_bert_score(tmp_path):
    out = _run(tmp_path, "bench_bertscore.py", "--pairs", "10", "--full-pairs", "1", "--efficiency-pairs", "3", "--efficiency-rounds", "1",
               "--rounds", "1", "--device", "cpu", "--phases", "idle", "background")
    _has(out, r"^bert_score .*\s+NUMBER\s+NUMBER\s+1\.00x", r"^ours compat float32\s+NUMBER\s+NUMBER\s+NUMBERx\s+NUMBERx",
         r"^ours fast \w+\s+NUMBER\s+NUMBER\s+NUMBERx\s+NUMBERx", r"load average NUMBER",
         r"compat float32 vs bert_score: max \|P/R/F diff\| NUMBER", r"model NUMBER GFLOP/s executed = NUMBER% of its kernel peak",
         r"none setting, beside 1 CPU-bound background process: load average NUMBER",
         r"^\s+bert_score: NUMBER batches, NUMBER tokens \(NUMBER executed\), encoder NUMBER s = NUMBER% of its time",
         r"^\s+compat float32: executes NUMBERx fewer tokens than bert_score, NUMBER s outside the encoder; .* "
         r"its lead would be NUMBERx \(measured NUMBERx\)",
         r"^\s+kernel peaks: fast \w+ NUMBERx compat float32's",
         r"model NUMBER GFLOP/s executed = NUMBER% of its kernel peak .*; NUMBER% by CPU seconds \(NUMBER of NUMBER GFLOP",
         *(rf"^\s+{context}\s+{run}\s+encoder NUMBER s of NUMBER s, .* = NUMBER% of its kernel peak .*NUMBER% by CPU seconds "
           r".*load average NUMBER"
           for context in ("none", "minimal", "full") for run in (r"compat float32 unpacked", r"fast \w+ unpacked", r"fast \w+ packed")),
         r"^\s+none\s+fast \w+ packed vs unpacked, encoder time: NUMBERx \(median of 1 rounds\)")


@pytest.mark.slow
def test_bench_determinism_prints_both_modes(tmp_path):
    out = _run(tmp_path, "bench_determinism.py", "--files", "1", "--contexts", "none", "--out", str(tmp_path / "runs"))
    _has(out, r"^default mode:\s+NUMBER s", r"^batch_invariant mode:\s+NUMBER s", r"ratio batch_invariant / default: NUMBERx",
         r"part size 55 vs 7, batch_invariant: \d+ row")


@pytest.mark.slow
def test_bench_reuse_prints_the_ratios(tmp_path):
    out = _run(tmp_path, "bench_reuse.py", "--n", "1", "--files", "1", "--out", str(tmp_path / "runs"))
    _has(out, r"added scorer alone:\s+NUMBER s", r"ratio reuse / added scorer alone:\s+NUMBERx", r"ratio reuse / fresh:\s+NUMBERx",
         r"rows identical to the fresh run:\s+(yes|no)")


@pytest.mark.slow
def test_bench_generate_prints_both_backends(tmp_path):
    out = _run(tmp_path, "bench_generate.py", "--prompts", "2", "--max-new-tokens", "2")
    _has(out, r"^transformers\s+NUMBER\s+NUMBER\s+NUMBER\s+NUMBER", r"ratio vllm/transformers \(output tokens/s\): NUMBERx")


@pytest.mark.slow
def test_bench_judge_prints_caching_on_and_off(tmp_path):
    out = _run(tmp_path, "bench_judge.py", "--files", "2", "--max-tokens", "4", "--repeats", "1")
    _has(out, r"^on\s+structured\s+NUMBER", r"^off\s+free\s+NUMBER", r"prefix caching on/off \(structured\): NUMBERx")
