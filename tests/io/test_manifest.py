"""The typed manifest (engine/io/manifest.py): what each method records, and that a run
directory writes and reads it back as JSON unchanged."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pyarrow as pa

from engine.io.manifest import Manifest
from engine.io.rundir import MANIFEST, RunDirectory

SCHEMA = pa.schema([("x", pa.int64())])


def _run(tmp_path: Path) -> RunDirectory:
    return RunDirectory.open_for_run(tmp_path / "run", {"stages": ["score"], "name": "t"}, "hash-1", {}, resume=False)


def test_a_new_run_writes_its_identity_and_status(tmp_path: Path) -> None:
    run = _run(tmp_path)
    try:
        on_disk = json.loads((run.root / MANIFEST).read_text(encoding="utf-8"))
        assert on_disk["config_hash"] == "hash-1" and on_disk["status"] == "running" and on_disk["parts"] == {}
        assert run.manifest.config_stages == ("score",) and run.manifest.config_hash == "hash-1"
    finally:
        run.close()


def test_a_commit_clears_the_parts_failure_and_is_read_back_in_key_order(tmp_path: Path) -> None:
    run = _run(tmp_path)
    try:
        run.record_failed_part("score/t/00001", "TransientError: x", attempts=2)
        assert run.manifest.failed_parts["score/t/00001"]["attempts"] == 2
        for index in (1, 0):
            run.commit_part(f"score/t/{index:05d}", f"scores/t-{index}.parquet", pa.table({"x": [index] * (index + 1)}), SCHEMA)
        run.commit_part("other/t/00000", "other/t-0.parquet", pa.table({"x": [7]}), SCHEMA)
        assert run.manifest.failed_parts == {}
        assert [key for key, _ in run.manifest.committed("score/")] == ["score/t/00000", "score/t/00001"]
        assert run.manifest.committed_rows("score/") == 3
        assert run.manifest.committed_files() == {"scores/t-0.parquet", "scores/t-1.parquet", "other/t-0.parquet"}
        run.finish("complete")
    finally:
        run.close()
    reopened = RunDirectory.open_existing(tmp_path / "run")
    assert isinstance(reopened.manifest, Manifest) and reopened.manifest.status == "complete"
    assert reopened.is_done("score/t/00001") and not reopened.is_done("score/t/00002")


def test_resume_moves_failures_to_history_and_retries_blocked_parts(tmp_path: Path) -> None:
    manifest = Manifest.new({"stages": []}, "h")
    manifest.record_failure("a/t/00000", "boom", 3)
    manifest.record_blocked("b/t/00000", ["a/t/00000"])
    assert manifest.start_resume() == 2
    assert manifest.failed_parts == {} and manifest.blocked_parts == {} and manifest.status == "running"
    assert manifest.resumed == 1 and [h["part"] for h in manifest.failure_history] == ["a/t/00000"]


def test_a_task_with_rows_and_no_signature_is_named() -> None:
    manifest = Manifest.new({}, "h")
    manifest.record_part("score/lexical/00000", {"file": "f", "rows": 2})
    manifest.record_part("score/empty/00000", {"file": "g", "rows": 0})
    assert manifest.unsigned_tasks() == ["score/lexical"]
    manifest.record_signatures("lexical", {"bleu": "sig"})
    assert manifest.unsigned_tasks() == []


def test_reading_makes_no_section_and_adding_makes_it_once() -> None:
    manifest = Manifest()
    assert manifest.throughput == {} and manifest.models == [] and manifest.data_loss == {}
    assert "throughput" not in manifest.as_dict()
    section = manifest.throughput_section()
    section["stages"]["score"] = {"parts": 1}
    manifest.record_throughput(section)
    assert manifest.throughput_section()["stages"] == {"score": {"parts": 1}}
    manifest.record_models([{"model": "m"}])
    manifest.record_models([{"model": "n"}])
    assert [m["model"] for m in manifest.models] == ["m", "n"]


def test_what_a_caller_reads_or_gave_cannot_change_the_manifest() -> None:
    manifest = Manifest.new({"stages": ["score"]}, "h")
    counts = {"parts": 2}
    manifest.record_counts(counts)
    counts["parts"] = 99
    manifest.counts["parts"] = 98
    manifest.config["stages"].append("judge")
    manifest.record_part("score/t/00000", {"file": "f", "rows": 1})
    for _key, info in manifest.committed():
        info["rows"] = 7
    section = manifest.stage_record("finetune", {"adapters": {}})
    section["adapters"]["en"] = {}
    assert manifest.counts == {"parts": 2} and manifest.config_stages == ("score",)
    assert manifest.committed_rows("score/") == 1 and manifest.recorded_by("finetune") == {"adapters": {}}
    manifest.record_counts({"score_rows": 3})
    assert manifest.counts == {"parts": 2, "score_rows": 3}
    manifest.record_stage_section("finetune", section)
    assert manifest.recorded_by("finetune") == {"adapters": {"en": {}}}


def test_a_written_file_reopens_and_writes_back_byte_identical(tmp_path: Path) -> None:
    run = _run(tmp_path)
    try:
        run.commit_part("score/t/00000", "scores/t-0.parquet", pa.table({"x": [1]}), SCHEMA)
        run.manifest.record_counts({"parts": 1, "rejected_by_reason": {"empty": 2}})
        run.manifest.record_models([{"model": "m", "peak": 1}])
        run.finish("complete")
    finally:
        run.close()
    path = tmp_path / "run" / MANIFEST
    before = path.read_bytes()
    payload = json.loads(before)
    assert Manifest.load(path).as_dict() == payload
    again = tmp_path / "again.json"
    again.write_text(json.dumps(Manifest.load(path).as_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                     encoding="utf-8")
    assert again.read_bytes() == before


def test_it_travels_as_json_and_by_pickle() -> None:
    manifest = Manifest.new({"stages": ["score"]}, "h", {"extra": 1})
    assert Manifest(json.loads(json.dumps(manifest.as_dict()))) == manifest
    again = pickle.loads(pickle.dumps(manifest))
    assert isinstance(again, Manifest) and again == manifest and not isinstance(manifest, dict)
