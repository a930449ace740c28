"""The judge stage on a scripted backend: calls per file, rows, hierarchical rules, failures."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import engine.judge.chat_backend as chat_backend
from engine.errors import ConfigError
from engine.judge.stage import JudgeStage
from engine.records import JUDGMENT_SCHEMA
from engine.stages.base import PartContext, PartTask, RunSettings
from engine.stages.registry import STAGES, get_stage
from engine.taxonomy import CLUSTERS
from tests.support.judge_answers import Scripted, judge_samples


def _run(tmp_path: Path, monkeypatch, judges: list[dict], table: pa.Table, entry: int = 0):
    section = JudgeStage().parse_section({"judges": judges}, tmp_path, "judge")
    stage = JudgeStage(section)
    scripted = Scripted()
    monkeypatch.setattr(chat_backend, "get_chat_backend", lambda params, budget=None: scripted)
    task = stage.tasks()[entry]
    ctx = PartContext(tmp_path, RunSettings(), PartTask.of(task, 0, stage.directory), _input_reader=lambda i: table)
    return stage.run_part(ctx), scripted, task


def test_registered_after_score() -> None:
    names = [n for n in STAGES if get_stage(n).kind == "part"]
    assert names.index("judge") == names.index("score") + 1
    assert isinstance(get_stage("judge"), JudgeStage)


def test_rows_calls_and_hierarchical_rules(tmp_path, monkeypatch) -> None:
    judges = [dict(model="served", backend="http", base_url="http://x/v1", name="j", strategies=["standard", "hierarchical"],
                   prompt_languages=["sample", "en"], structured=["standard"])]
    out, scripted, task = _run(tmp_path, monkeypatch, judges, judge_samples())
    assert out.schema.equals(JUDGMENT_SCHEMA)
    # 3 files x (standard: 1 call + hierarchical: 7 calls) x 2 prompt languages (nl, en).
    assert len(scripted.requests) == 3 * (1 + len(CLUSTERS)) * 2
    for request in scripted.requests:
        assert (request.schema is not None) == ("|standard|" in request.request_id)
        assert request.temperature == 0.0 and request.seed == 42 and request.max_tokens == 10_000
    rows = out.to_pylist()
    assert len(rows) == 3 * 2 * 2 * 2  # files x generators x strategies x prompt languages
    assert {r["task"] for r in rows} == {task.task} and task.task.startswith("judge-j-")
    by = {(r["sample_id"], r["strategy"], r["prompt_language"]): r for r in rows}
    standard = by[("f1/codegemma-7b", "standard", "nl")]
    assert (standard["label"], standard["error_codes"], standard["hallucinated_codes"]) == ("correct", ["SE-HA3"], ["BOGUS-1"])
    assert (standard["parse_status"], standard["parse_method"], standard["structured"]) == ("ok", "fenced", True)
    # f2: every call failed at the API -> no label, counted as api_error, error kept.
    failed = by[("f2/starcoder2-7b", "hierarchical", "en")]
    assert (failed["label"], failed["parse_status"], failed["error"]) == (None, "api_error", "HTTP 503 after 7 attempt(s)")
    # Hierarchical: worst label over the clusters that parsed, union of their codes, per-cluster status kept.
    h1 = by[("f1/starcoder2-7b", "hierarchical", "nl")]
    assert h1["label"] == "partial" and h1["calls"] == len(CLUSTERS)
    assert h1["error_codes"] == [codes[0] for name, codes in CLUSTERS.items() if name != "semantic_code"]
    assert "semantic_code=malformed" in h1["cluster_status"] and "meta=ok" in h1["cluster_status"]
    assert json.loads(h1["raw_response"])["semantic_code"] == "no json here"
    assert by[("f3/starcoder2-7b", "hierarchical", "nl")]["label"] == "incorrect"
    assert h1["prompt_tokens"] == 100 * len(CLUSTERS)
    # The file's calls as a whole: one of seven hierarchical calls failed for both candidates.
    assert standard["response_status"] == "ok" and h1["response_status"] == f"partial {2 * 6}/{2 * 7}"
    assert failed["response_status"] == "api_error"
    assert {r["reference"] for r in rows} == {"with"}


def test_reference_free_judging_is_its_own_judgment(tmp_path, monkeypatch) -> None:
    judges = [dict(model="served", backend="http", base_url="http://x/v1", name="j", strategies=["cot", "hierarchical"],
                   reference=["with", "without"])]
    out, scripted, task = _run(tmp_path, monkeypatch, judges, judge_samples())
    rows = out.to_pylist()
    assert len(rows) == 3 * 2 * 2 * 2  # files x generators x strategies x reference modes
    keys = {(r["sample_id"], r["task"], r["strategy"], r["prompt_language"], r["reference"]) for r in rows}
    assert len(keys) == len(rows)  # `reference` is part of the judgment key
    for request in scripted.requests:
        text = "\n".join(m["content"] for m in request.messages)
        file_id = request.request_id.split("|")[0]
        assert (f"Geeft {file_id} terug" in text) == ("|with|" in request.request_id)
        assert "int x()" in text  # the code context stays in both modes
    # and a judge that only runs `without` is another task
    other = dict(judges[0], reference=["without"])
    section = JudgeStage().parse_section({"judges": [judges[0], other]}, tmp_path, "judge")
    names = [t.task for t in JudgeStage(section).tasks()]
    assert len(set(names)) == 2 and task.task in names
    with pytest.raises(ConfigError, match="reference"):
        JudgeStage().parse_section({"judges": [dict(judges[0], reference=["sometimes"])]}, tmp_path, "judge")


def test_part_invariance(tmp_path, monkeypatch) -> None:
    judges = [dict(model="served", backend="http", base_url="http://x/v1", strategies=["cot"])]
    whole, _, _ = _run(tmp_path, monkeypatch, judges, judge_samples())
    first, _, _ = _run(tmp_path, monkeypatch, judges, judge_samples(("f1",)))
    rest, _, _ = _run(tmp_path, monkeypatch, judges, judge_samples(("f2", "f3")))
    drop = ["latency_s"]
    assert whole.drop(drop).to_pylist() == pa.concat_tables([first, rest]).drop(drop).to_pylist()


def test_identity_and_duplicates(tmp_path) -> None:
    stage = JudgeStage()
    entry = dict(model="served", backend="http", base_url="http://x/v1")
    section = stage.parse_section({"judges": [entry, dict(entry, strategies=["cot"])]}, tmp_path, "judge")
    tasks = JudgeStage(section).tasks()
    assert len({t.task for t in tasks}) == 2
    with pytest.raises(ConfigError, match=r"judge.judges\[1\]: duplicates judge.judges\[0\]"):
        stage.parse_section({"judges": [entry, dict(entry)]}, tmp_path, "judge")
    with pytest.raises(ConfigError, match="strategies"):
        stage.parse_section({"judges": [dict(entry, strategies=["vibes"])]}, tmp_path, "judge")
    with pytest.raises(ConfigError, match="structured"):
        stage.parse_section({"judges": [dict(model="m", backend="transformers", structured=True)]}, tmp_path, "judge")
    with pytest.raises(ConfigError, match="api_key_env"):
        stage.parse_section({"judges": [dict(entry, api_key_env="sk-abc def")]}, tmp_path, "judge")


def test_max_tokens_per_strategy(tmp_path, monkeypatch) -> None:
    """A mapping gives each strategy's calls its own limit; it is in the signature and the task name;
    a mapping that misses a listed strategy (or names another) is refused before any work."""
    base = dict(model="served", backend="http", base_url="http://x/v1", name="j", strategies=["standard", "cot"])
    judges = [dict(base, max_tokens={"standard": 700, "cot": 90})]
    _, scripted, task = _run(tmp_path, monkeypatch, judges, judge_samples())
    limits = {(r.request_id.split("|")[1], r.max_tokens) for r in scripted.requests}
    assert limits == {("standard", 700), ("cot", 90)}
    stage = JudgeStage(JudgeStage().parse_section({"judges": judges}, tmp_path, "judge"))
    assert "|max_tokens:standard=700,cot=90|" in stage.signatures(task, {})["judgment"]
    one_number = JudgeStage(stage.parse_section({"judges": [dict(base, max_tokens=700)]}, tmp_path, "judge"))
    assert "|max_tokens:700|" in one_number.signatures(one_number.tasks()[0], {})["judgment"]
    assert one_number.tasks()[0].task != task.task
    for bad in ({"standard": 700}, {"standard": 700, "cot": 90, "rubric": 5}, {"standard": 700, "cot": 0}):
        with pytest.raises(ConfigError, match="max_tokens"):
            stage.parse_section({"judges": [dict(base, max_tokens=bad)]}, tmp_path, "judge")


def test_failed_answers_are_one_log_line_per_strategy_and_class(tmp_path, monkeypatch, caplog) -> None:
    import logging

    judges = [dict(model="served", backend="http", base_url="http://x/v1", name="j", strategies=["standard", "cot"])]
    with caplog.at_level(logging.INFO, logger="engine.judge.judging"):
        _run(tmp_path, monkeypatch, judges, judge_samples())
    lines = [r.getMessage() for r in caplog.records if "answer(s)" in r.getMessage()]
    # f2 fails at the API for both strategies: one line each, not one per file
    assert sorted(lines) == ["judge j, cot: 1 of 3 answer(s) api_error; per file with -v, per row in RUN/judgments",
                             "judge j, standard: 1 of 3 answer(s) api_error; per file with -v, per row in RUN/judgments"]
