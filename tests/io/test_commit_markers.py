"""Completion markers (engine.io.rundir): a commit writes O(1) bytes, the manifest summarises
the markers, and resume trusts the markers over a stale summary, redoing only parts without one."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.io import rundir
from engine.records import SCORE_KEY
from engine.runner import execute_run
from tests.support.samples import make_sample, write_jsonl


def _config(tmp_path: Path, n_files: int):
    rows = [make_sample(f"f{i}/g", prediction=f" the name {i}") for i in range(n_files)]
    data = write_jsonl(tmp_path / f"in-{n_files}.jsonl", rows)
    raw = {"input": str(data), "part_size": 1, "stages": ["score"], "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}}
    return config_from_mapping(raw, tmp_path)


def _writes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(file name, bytes) of every JSON file the run directory writes."""
    written: list[tuple[str, int]] = []
    real = rundir.write_json_atomic

    def counting(path, payload):
        written.append((Path(path).name, len(json.dumps(payload, indent=2, sort_keys=True))))
        real(path, payload)

    monkeypatch.setattr(rundir, "write_json_atomic", counting)
    return written


def test_a_commit_writes_a_small_marker_and_the_manifest_is_not_rewritten_per_part(tmp_path, monkeypatch) -> None:
    written = _writes(monkeypatch)
    saves = []
    for n in (4, 16):
        written.clear()
        execute_run(_config(tmp_path, n), str(tmp_path / f"run-{n}"))
        markers = [size for name, size in written if name != rundir.MANIFEST]
        assert len(markers) == n and max(markers) < 400
        saves.append(sum(name == rundir.MANIFEST for name, _ in written))
    assert saves[0] == saves[1], f"manifest writes grow with the number of parts: {saves}"
    manifest = json.loads((tmp_path / "run-16" / "manifest.json").read_text())
    assert len(manifest["parts"]) == 16 and manifest["status"] == "complete"


def _scores(run: Path) -> list[dict]:
    return sorted(pq.read_table(run / "scores").to_pylist(), key=lambda r: tuple(r[k] for k in SCORE_KEY))


def test_resume_trusts_the_markers_over_a_stale_summary_and_redoes_a_part_without_one(tmp_path) -> None:
    config = _config(tmp_path, 6)
    run = tmp_path / "run"
    execute_run(config, str(run))
    expected = _scores(run)
    files = {p: p.stat().st_mtime_ns for p in (run / "scores").iterdir()}
    # a crash before the summary was written: the manifest knows no part, the markers all of them but one
    manifest = json.loads((run / "manifest.json").read_text())
    key = sorted(manifest["parts"])[2]
    manifest.update(parts={}, status="running")
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / rundir.COMMITS / f"{key}.json").unlink()
    execute_run(config, str(run), resume=True)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["parts"]) == 6
    redone = [p for p, mtime in files.items() if p.stat().st_mtime_ns != mtime]
    assert [p.name for p in redone] == [Path(manifest["parts"][key]["file"]).name]
    assert _scores(run) == expected
