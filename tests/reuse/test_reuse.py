"""Reuse of earlier runs (engine.reuse): a run that names earlier runs writes exactly the rows
a fresh run writes, part file by part file, and computes only what the earlier runs lack.

Earlier runs are cut differently on purpose (shuffled input, other part size, Ray executor),
so equality proves that reuse does not depend on how the earlier work was cut.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.errors import PartFailedError, RunDirectoryError
from engine.runner import execute_run
from tests.support import tiny_encoders
from tests.support.samples import write_demo_subset, write_jsonl

NEURAL_TOLERANCE = 1e-6
LEXICAL = {"kind": "lexical", "metrics": ["bleu", "rougeL"]}


def _embedding(model: str, **options) -> dict:
    return {"kind": "embedding", "model": model, "layer": 2, "contexts": ["none"], **options}


def _config(world: dict, scorers: list[dict], input_path: Path, part_size: int, reuse=()) -> object:
    raw = {
        "name": "reuse", "input": str(input_path), "part_size": part_size, "stages": ["noise", "score"],
        "noise": {"kinds": ["uniform", "targeted"], "tokenizer": world["bert"]},
        "score": {"scorers": scorers},
    }
    config = config_from_mapping(raw, world["tmp"])
    return replace(config, reuse=tuple(str(r) for r in reuse))


def _run(config, out: Path, executor: str = "local") -> Path:
    options = {"num_cpus": 2, "actors_per_model": 1} if executor == "ray" else None
    execute_run(config, str(out), executor_name=executor, ray_options=options)
    return out


def _part_tables(run: Path) -> dict[str, list[dict]]:
    """Every score part file's rows, in file order (the bytes a reader sees)."""
    return {p.name: pq.read_table(p).to_pylist() for p in sorted((run / "scores").glob("*.parquet"))}


def _same_rows(got: dict, want: dict) -> None:
    """Same part files, same rows in the same order, same keys, signatures and errors; lexical
    values bitwise equal. fp32 neural values of runs cut differently may differ in the last bits
    (batch shapes; see tests/runner/test_part_invariance.py), so those are equal within NEURAL_TOLERANCE."""
    assert got.keys() == want.keys()
    for name in want:
        a, b = got[name], want[name]
        assert len(a) == len(b), name
        for x, y in zip(a, b):
            assert {**x, "value": None} == {**y, "value": None}, name
            if x["metric"] in ("bleu", "rougeL") or x["error"] is not None:
                assert repr(x["value"]) == repr(y["value"]), (name, x)
            else:
                assert abs(x["value"] - y["value"]) <= NEURAL_TOLERANCE, (name, x, y)


def _reuse(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())["reuse"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("reuse")
    bert = tiny_encoders.build("bert", tmp / "models" / "bert")
    roberta = tiny_encoders.build("roberta", tmp / "models" / "roberta")
    ordered = write_demo_subset(tmp / "ordered.jsonl", 1)
    shuffled = write_demo_subset(tmp / "shuffled.jsonl", 1, shuffle_seed=3)
    return {"tmp": tmp, "bert": bert, "roberta": roberta, "ordered": ordered, "shuffled": shuffled}


@pytest.fixture(scope="module")
def run_a(world: dict) -> Path:
    """Config A on the shuffled input, 7 rows per part, on Ray."""
    pytest.importorskip("ray")
    return _run(_config(world, [LEXICAL, _embedding(world["bert"])], world["shuffled"], 7), world["tmp"] / "a", "ray")


def _config_b(world: dict, reuse=()) -> object:
    scorers = [LEXICAL, _embedding(world["bert"]), _embedding(world["roberta"], idf=True, contexts=["none", "minimal"])]
    return _config(world, scorers, world["ordered"], 100, reuse)


@pytest.fixture(scope="module")
def fresh_b(world: dict) -> Path:
    return _run(_config_b(world), world["tmp"] / "b-fresh")


def test_b_reusing_a_equals_a_fresh_b_and_never_loads_the_reused_model(world, run_a, fresh_b, monkeypatch):
    from engine.metrics import encoder_runtime

    loaded: list[str] = []
    original = encoder_runtime.EncoderRuntime.__init__

    def counting(self, model_name, *args, **kwargs):  # the one place an embedding scorer loads its model
        loaded.append(model_name)
        original(self, model_name, *args, **kwargs)

    monkeypatch.setattr(encoder_runtime.EncoderRuntime, "__init__", counting)
    reused = _run(_config_b(world, [run_a]), world["tmp"] / "b-reuse")
    _same_rows(_part_tables(reused), _part_tables(fresh_b))
    assert world["bert"] not in loaded and world["roberta"] in loaded
    tasks = _reuse(reused)["tasks"]
    assert _reuse(reused)["from"] == [str(run_a)]
    by_kind = {("lexical" if t.startswith("lexical") else "roberta" if "roberta" in t else "bert"): v for t, v in tasks.items()}
    total = {k: sum(pq.read_table(p).num_rows for p in (reused / "scores").glob(f"{t}__*")) for k, t in
             zip(by_kind, tasks)}
    assert by_kind["lexical"]["reused"] == {str(run_a): total["lexical"]} and by_kind["lexical"]["computed"] == 0
    assert by_kind["bert"]["reused"] == {str(run_a): total["bert"]} and by_kind["bert"]["computed"] == 0
    assert by_kind["roberta"]["reused"] == {} and by_kind["roberta"]["computed"] == total["roberta"] > 0
    # The reused numbers are A's numbers, bit for bit.
    def keyed(run: Path) -> dict:
        return {(r["sample_id"], r["noise"], r["metric"], r["context"], r["variant"]): (repr(r["value"]), r["signature"])
                for t in _part_tables(run).values() for r in t if "roberta" not in r["scorer"]}

    assert keyed(reused) == keyed(run_a)


def test_an_added_context_computes_only_its_rows(world, run_a):
    scorers = [LEXICAL, _embedding(world["bert"], contexts=["none", "minimal"])]
    fresh = _run(_config(world, scorers, world["ordered"], 100), world["tmp"] / "c-fresh")
    reused = _run(_config(world, scorers, world["ordered"], 100, [run_a]), world["tmp"] / "c-reuse")
    _same_rows(_part_tables(reused), _part_tables(fresh))
    rows = [r for t in _part_tables(fresh).values() for r in t if r["metric"] == "bertscore"]
    info = next(v for t, v in _reuse(reused)["tasks"].items() if t.startswith("bertscore"))
    assert info["computed"] == sum(r["context"] == "minimal" for r in rows)
    assert info["reused"] == {str(run_a): sum(r["context"] == "none" for r in rows)}


def test_a_changed_prediction_recomputes_that_sample_only(world, run_a):
    rows = [json.loads(line) for line in world["ordered"].read_text().splitlines()]
    edited = rows[3]["sample_id"]
    rows[3]["prediction"] = "an edited prediction of the user"
    path = write_jsonl(world["tmp"] / "edited.jsonl", rows)
    scorers = [LEXICAL, _embedding(world["bert"])]
    fresh = _run(_config(world, scorers, path, 100), world["tmp"] / "d-fresh")
    reused = _run(_config(world, scorers, path, 100, [run_a]), world["tmp"] / "d-reuse")
    _same_rows(_part_tables(reused), _part_tables(fresh))
    tables = _part_tables(fresh)
    for task, info in _reuse(reused)["tasks"].items():
        task_rows = [r for name, t in tables.items() if name.startswith(task + "__") for r in t]
        changed = sum(r["sample_id"] == edited and r["noise"] == "none" for r in task_rows)
        assert changed > 0 and info["computed"] == changed, task
        assert info["reused"] == {str(run_a): len(task_rows) - changed}, task


def test_a_replaced_model_file_recomputes_that_models_rows(world):
    model = Path(world["tmp"] / "models" / "bert-copy")
    shutil.copytree(world["bert"], model)
    scorers = [LEXICAL, _embedding(str(model))]
    earlier = _run(_config(world, scorers, world["ordered"], 9), world["tmp"] / "e-a")
    tiny_encoders.build("bert", world["tmp"] / "models" / "bert-seed1", seed=1)
    shutil.copy(world["tmp"] / "models" / "bert-seed1" / "model.safetensors", model / "model.safetensors")
    reused = _run(_config(world, scorers, world["ordered"], 9, [earlier]), world["tmp"] / "e-b")
    for task, info in _reuse(reused)["tasks"].items():
        if task.startswith("bertscore"):
            assert info["reused"] == {} and info["computed"] > 0
        else:
            assert info["computed"] == 0 and info["reused"]


def test_error_rows_and_failed_parts_of_the_earlier_run_are_recomputed(world, monkeypatch):
    import pyarrow as pa

    from engine.score.stage import ScoreStage

    scorers = [LEXICAL, _embedding(world["bert"])]
    original = ScoreStage.run_part

    def failing(self, ctx):
        if ctx.part.index == 1 and ctx.part.task.startswith("bertscore"):
            raise RuntimeError("injected failure")
        return original(self, ctx)

    monkeypatch.setattr(ScoreStage, "run_part", failing)
    earlier = world["tmp"] / "f-a"
    with pytest.raises(PartFailedError):
        execute_run(_config(world, scorers, world["ordered"], 10), str(earlier))
    monkeypatch.setattr(ScoreStage, "run_part", original)
    # An error row in a committed part: its value is NaN and its cause is recorded.
    lexical_part = sorted((earlier / "scores").glob("lexical-*__part-00000.parquet"))[0]
    table = pq.read_table(lexical_part).to_pylist()
    table[0].update(value=float("nan"), error="RuntimeError: injected")
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(lexical_part)), lexical_part)

    fresh = _run(_config(world, scorers, world["ordered"], 10), world["tmp"] / "f-fresh")
    reused = _run(_config(world, scorers, world["ordered"], 10, [earlier]), world["tmp"] / "f-b")
    _same_rows(_part_tables(reused), _part_tables(fresh))
    tables = _part_tables(fresh)
    for task, info in _reuse(reused)["tasks"].items():
        if task.startswith("bertscore"):
            assert info["computed"] == len(tables[f"{task}__part-00001.parquet"])
        else:
            assert info["computed"] == 1


def test_resume_with_reuse_under_ray_completes_and_equals_a_fresh_run(world, run_a, fresh_b, monkeypatch):
    from engine.score.stage import ScoreStage

    original = ScoreStage.run_part

    def failing(self, ctx):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(ScoreStage, "run_part", failing)  # parts that compute anything fail this time
    out = world["tmp"] / "g"
    with pytest.raises(PartFailedError):
        execute_run(_config_b(world, [run_a]), str(out))
    monkeypatch.setattr(ScoreStage, "run_part", original)
    # Resumed under Ray: its workers read the earlier run themselves.
    execute_run(_config_b(world, [run_a]), str(out), resume=True, executor_name="ray",
                ray_options={"num_cpus": 2, "actors_per_model": 1})
    _same_rows(_part_tables(out), _part_tables(fresh_b))
    tasks = _reuse(out)["tasks"]
    assert sum(v["computed"] for v in tasks.values()) == sum(
        len(t) for name, t in _part_tables(out).items() if "roberta" in name)


def test_an_earlier_run_still_being_written_is_refused(world, run_a):
    from engine.io.lock import RunLock

    lock = RunLock(run_a)
    lock.acquire()
    try:
        with pytest.raises(RunDirectoryError, match="still being written"):
            execute_run(_config_b(world, [run_a]), str(world["tmp"] / "h"))
    finally:
        lock.release()
    with pytest.raises(RunDirectoryError, match="not a babelscore run"):
        execute_run(_config_b(world, [world["tmp"]]), str(world["tmp"] / "h2"))


def test_cli_reuse_prints_one_line_per_task_and_the_config_key_works(world, tmp_path, capsys, monkeypatch):
    import yaml

    from engine.cli import main
    from engine.io.lock import ReaderLock, RunLock

    config = {"name": "cli", "input": str(world["ordered"]), "part_size": 9, "stages": ["score"],
              "score": {"scorers": [LEXICAL]}}
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["run", str(path), "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tmp_path)  # `--reuse a`, relative to the working directory, as the console shows it
    assert main(["run", str(path), "--out", str(tmp_path / "b"), "--reuse", "a"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "reused" in line]
    rows = sum(pq.read_table(p).num_rows for p in (tmp_path / "b" / "scores").glob("*.parquet"))
    assert len(lines) == 1 and lines[0].endswith(f": {rows:,} rows reused from a, 0 computed"), lines
    assert _reuse(tmp_path / "b")["from"] == [str(tmp_path / "a")]
    # The config key, relative to the config's folder; a run being read cannot be resumed meanwhile.
    path.write_text(yaml.safe_dump({**config, "reuse": ["a"]}))
    assert main(["run", str(path), "--out", str(tmp_path / "c")]) == 0
    assert _reuse(tmp_path / "c")["tasks"] and all(v["computed"] == 0 for v in _reuse(tmp_path / "c")["tasks"].values())
    reader = ReaderLock(tmp_path / "a", "test")
    reader.acquire()
    try:
        with pytest.raises(RunDirectoryError, match="reuses its rows"):
            RunLock(tmp_path / "a").acquire()
    finally:
        reader.release()


def test_a_changed_reference_recomputes_every_row_of_an_idf_task(world, fresh_b):
    rows = [json.loads(line) for line in world["ordered"].read_text().splitlines()]
    file_id = rows[0]["file_id"]
    for row in rows:
        if row["file_id"] == file_id:  # one letter of the comment, in the reference and in the source alike
            start, end = row["comment_start"], row["comment_end"]
            i = next(k for k in range(len(row["reference"]) - 1, 0, -1) if row["reference"][k].isalpha())
            reference = row["reference"][:i] + ("q" if row["reference"][i] != "q" else "z") + row["reference"][i + 1:]
            row["reference"], row["source"] = reference, row["source"][:start] + reference + row["source"][end:]
    path = write_jsonl(world["tmp"] / "edited-reference.jsonl", rows)
    reused = _run(replace(_config_b(world, [fresh_b]), input=str(path)), world["tmp"] / "i-reuse")
    fresh = _run(replace(_config_b(world), input=str(path)), world["tmp"] / "i-fresh")
    _same_rows(_part_tables(reused), _part_tables(fresh))
    tables = _part_tables(fresh)
    edited = {r["sample_id"] for r in rows if r["file_id"] == file_id}
    for task, info in _reuse(reused)["tasks"].items():
        task_rows = [r for name, t in tables.items() if name.startswith(task + "__") for r in t]
        if "roberta" in task:  # idf over the run's references: another corpus, every row computed again
            assert info["reused"] == {} and info["computed"] == len(task_rows)
        else:  # the edited file's rows (its noise predictions follow from the reference too) and nothing else
            assert info["computed"] == sum(r["sample_id"] in edited for r in task_rows) > 0, task
