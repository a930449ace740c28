"""The run core's promises: identity of entries, recovery after a run-time failure, one
writer per run directory, expert labels for generated runs, error rows that stay errors."""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.errors import ConfigError, PartFailedError, RunDirectoryError
from engine.records import SCORE_KEY
from engine.runner import execute_run
from tests.support.paths import REPO
from tests.support.samples import make_sample, write_jsonl

TEXTS = {
    "en": ("// Returns the name of the user.", [" name of the user.", " id.", " user name."]),
    "nl": ("// Geeft de naam van de gebruiker terug.", [" naam terug.", " gebruiker.", " naam van de gebruiker terug."]),
}


def _rows(n_files: int = 6, labels: bool = True) -> list[dict]:
    rows = []
    for f in range(n_files):
        language = list(TEXTS)[f % len(TEXTS)]
        reference, predictions = TEXTS[language]
        source = f"class C{f} {{\n    {reference}\n    int f() {{ return {f}; }}\n}}\n"
        start = source.index(reference)
        for g, prediction in enumerate(predictions):
            rows.append(make_sample(
                f"f{f}/g{g}", prediction=prediction, language=language, source=source, comment_start=start,
                comment_end=start + len(reference), reference=reference, prime=reference[:6], generator=f"g{g}",
                file_id=f"f{f}", label=["correct", "partial", "incorrect"][(f + g) % 3] if labels else None,
            ))
    return rows


def _scores(run: Path) -> list[dict]:
    rows = pq.read_table(run / "scores").sort_by([(k, "ascending") for k in SCORE_KEY]).to_pylist()
    keys = [tuple(r[k] for k in SCORE_KEY) for r in rows]
    assert len(keys) == len(set(keys)), "duplicate score keys"
    return rows


def _same_values(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = dict(g), dict(w)
        gv, wv = g.pop("value"), w.pop("value")
        assert g == w
        assert (math.isnan(gv) and math.isnan(wv)) or abs(gv - wv) <= 1e-6


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support import tiny_encoders

    return Path(tiny_encoders.build("bert", tmp_path_factory.mktemp("bert") / "bert"))


# ----- identity ------------------------------------------------------------------------------
def test_two_lexical_entries_keep_all_their_rows(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", _rows(2))
    raw = {"input": str(data), "stages": ["score"], "score": {"scorers": [
        {"kind": "lexical", "metrics": ["bleu"]}, {"kind": "lexical", "metrics": ["rougeL"]},
    ]}}
    execute_run(config_from_mapping(raw, tmp_path), str(tmp_path / "run"))
    rows = _scores(tmp_path / "run")
    assert {r["metric"] for r in rows} == {"bleu", "rougeL"}
    assert len([r for r in rows if r["metric"] == "bleu"]) == 6


def test_two_embedding_entries_differing_in_idf_get_distinct_keys(tmp_path: Path, tiny_bert: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", _rows(2))
    entry = {"kind": "embedding", "model": str(tiny_bert), "layer": 2}
    raw = {"input": str(data), "stages": ["score"], "score": {"scorers": [entry, {**entry, "idf": True}]}}
    execute_run(config_from_mapping(raw, tmp_path), str(tmp_path / "run"))
    rows = _scores(tmp_path / "run")
    scorers = sorted({r["scorer"] for r in rows})
    assert scorers == [str(tiny_bert), f"{tiny_bert}[idf=true]"]
    assert len(rows) == 2 * 6 * 4  # two entries x 6 samples x P/R/F/mean-cos
    plain = {r["sample_id"]: r["value"] for r in rows if r["scorer"] == str(tiny_bert) and r["variant"] == "F"}
    weighted = {r["sample_id"]: r["value"] for r in rows if r["scorer"] != str(tiny_bert) and r["variant"] == "F"}
    assert plain.keys() == weighted.keys() and plain != weighted


def test_exact_duplicate_entry_is_refused_naming_both(tmp_path: Path) -> None:
    entry = {"kind": "lexical", "metrics": ["bleu"]}
    raw = {"input": "x.jsonl", "stages": ["score"], "score": {"scorers": [entry, {"kind": "lexical"}, entry]}}
    with pytest.raises(ConfigError, match=r"score\.scorers\[2\].*score\.scorers\[0\]"):
        config_from_mapping(raw, tmp_path)


def test_entries_that_would_share_score_keys_are_refused(tmp_path: Path) -> None:
    raw = {"input": "x.jsonl", "stages": ["score"], "score": {"scorers": [
        {"kind": "lexical", "metrics": ["bleu", "meteor"]}, {"kind": "lexical", "metrics": ["meteor"]},
    ]}}
    with pytest.raises(ConfigError, match=r"scorers\[1\] and score\.scorers\[0\] would both write meteor"):
        config_from_mapping(raw, tmp_path)


# ----- recovery --------------------------------------------------------------------------------
def _replace(path: Path, data: bytes) -> None:
    # A new file, not an in-place write: a model loaded earlier in this process may still map the old one.
    temp = path.with_name(path.name + ".new")
    temp.write_bytes(data)
    temp.replace(path)


def _damage(model_dir: Path) -> bytes:
    """Cut the weights file to a third (its config stays valid); returns the good bytes."""
    weights = next(p for p in model_dir.iterdir() if p.suffix in (".safetensors", ".bin"))
    good = weights.read_bytes()
    _replace(weights, good[: len(good) // 3])
    return good


def _damage_after_the_checks(monkeypatch: pytest.MonkeyPatch, model_dir: Path) -> bytes:
    """Damage the weights once the driver has checked the model files (preflight refuses a damage
    it can see; this one appears later, as on a shared disk another job writes to)."""
    from engine import runner

    good = next(p for p in model_dir.iterdir() if p.suffix in (".safetensors", ".bin")).read_bytes()
    planned = runner.log_model_plan

    def plan_then_damage(run, plan) -> None:
        planned(run, plan)
        _damage(model_dir)
        monkeypatch.setattr(runner, "log_model_plan", planned)

    monkeypatch.setattr(runner, "log_model_plan", plan_then_damage)
    return good


def _repair(model_dir: Path, good: bytes) -> None:
    weights = next(p for p in model_dir.iterdir() if p.suffix in (".safetensors", ".bin"))
    _replace(weights, good)


def test_noise_score_resume_after_a_damaged_model_is_repaired(tmp_path: Path, tiny_bert: Path, monkeypatch) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_bert, model)
    data = write_jsonl(tmp_path / "in.jsonl", _rows(4))
    raw = {"input": str(data), "part_size": 3, "stages": ["noise", "score"],
           "noise": {"tokenizer": str(tiny_bert)},
           "score": {"scorers": [{"kind": "lexical"}, {"kind": "embedding", "model": str(model), "layer": 2}]}}
    config = config_from_mapping(raw, tmp_path)
    execute_run(config, str(tmp_path / "clean"))
    good = _damage_after_the_checks(monkeypatch, model)
    with pytest.raises(PartFailedError, match="--resume"):
        execute_run(config, str(tmp_path / "run"))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and len(manifest["failed_parts"]) == 4
    assert all(key.startswith("score/bertscore-") for key in manifest["failed_parts"])
    _repair(model, good)
    summary = execute_run(config, str(tmp_path / "run"), resume=True)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert summary.status == "complete" and not manifest["failed_parts"] and manifest["resumed"] == 1
    assert len(manifest["failure_history"]) == 4
    _same_values(_scores(tmp_path / "run"), _scores(tmp_path / "clean"))


def test_generate_score_resume_and_labels_reach_calibration(tmp_path: Path, monkeypatch) -> None:
    from engine.testing.tiny_fim import build_tiny_fim_model

    model = Path(build_tiny_fim_model(tmp_path / "fim", "starcoder2", layers=1))
    rows = _rows(6, labels=False)
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    labels = [{"file_id": f"f{f}", "generator": "tiny", "label": ["Correct", "partial", "incorrect"][f % 3],
               "error_codes": "SE-MD" if f % 3 else None} for f in range(6)]
    labels_path = write_jsonl(tmp_path / "labels.jsonl", labels)
    raw = {"input": str(data), "labels": str(labels_path), "part_size": 2, "stages": ["generate", "score", "calibrate"],
           "generate": {"generators": [{"model": str(model), "card": "starcoder2", "name": "tiny", "backend": "transformers",
                                         "max_new_tokens": 8}]},
           "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu", "rougeL"]}]},
           "calibrate": {"bootstrap": 5}}
    config = config_from_mapping(raw, tmp_path)
    execute_run(config, str(tmp_path / "clean"))
    good = _damage_after_the_checks(monkeypatch, model)
    with pytest.raises(PartFailedError, match="wait for them"):
        execute_run(config, str(tmp_path / "run"))
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert set(manifest["failed_parts"]) == {f"generate/generate-tiny/{i:05d}" for i in range(3)}
    assert set(manifest["blocked_parts"]) == {k for k in manifest["blocked_parts"] if k.startswith("score/")}
    assert len(manifest["blocked_parts"]) == 3
    _repair(model, good)
    execute_run(config, str(tmp_path / "run"), resume=True)
    _same_values(_scores(tmp_path / "run"), _scores(tmp_path / "clean"))
    generations = pq.read_table(tmp_path / "run" / "generations").to_pylist()
    assert sorted(r["label"] for r in generations) == sorted(["correct", "partial", "incorrect"] * 2)
    assert {tuple(r["error_codes"] or []) for r in generations} == {(), ("SE-MD",)}
    calibration = pq.read_table(tmp_path / "run" / "calibration.parquet").to_pylist()
    agreement = [r for r in calibration if r["task"] == "agreement"]
    assert agreement and all(r["n"] == 3 for r in agreement)  # 3 labelled files per language


# ----- one writer -------------------------------------------------------------------------------
HOLDER = """
import sys
from engine.config import config_from_mapping
from engine.runner import open_run
from engine.stages.plan import build_plan
import json, pathlib
raw = json.loads(sys.argv[1])
run = open_run(build_plan(config_from_mapping(raw, pathlib.Path(sys.argv[2]))), sys.argv[3], resume=True)
print("locked", flush=True)
sys.stdin.read()
"""


def test_second_process_is_refused_and_a_killed_holder_is_taken_over(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", _rows(2))
    raw = {"input": str(data), "stages": ["score"], "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}}
    config = config_from_mapping(raw, tmp_path)
    with pytest.raises(RunDirectoryError, match="holds no run"):
        execute_run(config, str(tmp_path / "run"), resume=True)
    child = subprocess.run(
        [sys.executable, "-c", "import sys, json, pathlib\nfrom engine.config import config_from_mapping\n"
         "from engine.runner import execute_run\nexecute_run(config_from_mapping(json.loads(sys.argv[1]), "
         "pathlib.Path(sys.argv[2])), sys.argv[3])", json.dumps(raw), str(tmp_path), str(tmp_path / "run")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, BABELSCORE_TEST_CRASH_AFTER_COMMITS="1"),
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, json.dumps(raw), str(tmp_path), str(tmp_path / "run")],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirectoryError, match=rf"another babelscore process \(pid {holder.pid} on host"):
            execute_run(config, str(tmp_path / "run"), resume=True)
    finally:
        holder.kill()
        holder.wait()
    summary = execute_run(config, str(tmp_path / "run"), resume=True)
    assert summary.status == "complete"
    assert len(_scores(tmp_path / "run")) == 6


def test_transient_errors_are_retried_and_data_errors_fail_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.executors.local as local
    from engine.errors import TransientError
    from engine.stages.base import PartTask

    calls: dict[str, int] = {}

    def flaky(run_root, plan, part, prepass):
        calls[part.key] = calls.get(part.key, 0) + 1
        if part.index == 0 and calls[part.key] == 1:
            raise TransientError("out of memory at batch size 1")
        if part.index == 1:
            raise ValueError("a broken input")
        return part.key

    monkeypatch.setattr(local, "execute_part", flaky)
    committed, failed = [], []
    parts = [PartTask("score", "t", i, directory="scores") for i in range(3)]
    local.LocalExecutor().run_parts(
        str(tmp_path), None, parts, {}, lambda p, t: committed.append(t), lambda p, e, a: failed.append((p.key, e, a)), [1, 1, 1]
    )
    assert committed == ["score/t/00000", "score/t/00002"]
    assert failed == [("score/t/00001", "ValueError: a broken input", 1)]
    assert calls == {"score/t/00000": 2, "score/t/00001": 1, "score/t/00002": 1}
