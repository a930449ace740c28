"""Exactly-once output: SIGKILL in the middle of a run, then --resume."""
from __future__ import annotations

import json
import os
import subprocess

import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.errors import RunDirectoryError
from engine.records import SCORE_KEY
from engine.runner import execute_run
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

TEXTS = {
    "en": ("// Returns the name of the user.", [" user name.", " name of the user.", " id of the user.", " user"]),
    "nl": ("// Geeft de naam van de gebruiker terug.", [" naam terug.", " naam van de gebruiker terug.", " gebruiker.", ""]),
    "zh": ("// 返回用户的姓名。", ["姓名。", "用户名。", "用户的年龄。", "名"]),
    "el": ("// Επιστρέφει το όνομα του χρήστη.", [" όνομα.", " όνομα του χρήστη.", " χρήστη.", " το"]),
    "pl": ("// Zwraca nazwę użytkownika.", [" nazwę.", " użytkownika.", " imię.", " nazwę użytkownika."]),
}


def _rows(n_files: int = 12):
    rows = []
    for f in range(n_files):
        language = list(TEXTS)[f % len(TEXTS)]
        reference, predictions = TEXTS[language]
        source = f"class C{f} {{\n    {reference}\n    int f() {{ return {f}; }}\n}}\n"
        prime = reference[: reference.index(" ", 3)] if language != "zh" else reference[:4]
        for g, prediction in enumerate(predictions):
            rows.append(
                make_sample(
                    f"f{f}/g{g}", prediction=prediction, language=language, source=source,
                    comment_start=source.index(reference), comment_end=source.index(reference) + len(reference),
                    reference=reference, prime=prime, generator=f"g{g}", file_id=f"f{f}",
                )
            )
    return rows


def _config_file(tmp_path, input_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        f"name: resume\ninput: {input_path}\npart_size: 4\nstages: [score]\n"
        "score:\n  scorers:\n    - kind: lexical\n"
    )
    return path


def _run_cli(config, out, *extra, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run(
        [PYTHON, "-m", "engine.cli", "run", str(config), "--out", str(out), *extra],
        capture_output=True, text=True, cwd=REPO, env=env,
    )


def _sorted_scores(run_dir):
    rows = pq.read_table(run_dir / "scores").to_pylist()
    return sorted(rows, key=lambda r: tuple(r[k] for k in SCORE_KEY))


def test_sigkill_mid_run_then_resume_gives_each_key_once_and_the_same_values(tmp_path):
    input_path = write_jsonl(tmp_path / "in.jsonl", _rows())
    config = _config_file(tmp_path, input_path)
    reference_run = _run_cli(config, tmp_path / "clean")
    assert reference_run.returncode == 0, reference_run.stderr

    crashed = _run_cli(config, tmp_path / "run", env_extra={"BABELSCORE_TEST_CRASH_AFTER_COMMITS": "5"})
    assert crashed.returncode == -9  # killed by SIGKILL, not a clean exit
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "running" and len(manifest["parts"]) == 5

    # a rerun without --resume refuses to touch the directory
    refused = _run_cli(config, tmp_path / "run")
    assert refused.returncode != 0 and "--resume" in refused.stderr

    resumed = _run_cli(config, tmp_path / "run", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resumed"] == 1
    assert len(manifest["parts"]) == manifest["counts"]["parts"] == 12

    got, expected = _sorted_scores(tmp_path / "run"), _sorted_scores(tmp_path / "clean")
    keys = [tuple(r[k] for k in SCORE_KEY) for r in got]
    assert len(keys) == len(set(keys)), "duplicate keys after resume"
    assert got == expected


def test_part_renamed_but_not_recorded_is_redone_without_duplicates(tmp_path):
    input_path = write_jsonl(tmp_path / "in.jsonl", _rows(4))
    config = config_from_mapping(
        {"input": str(input_path), "part_size": 4, "stages": ["score"], "score": {"scorers": [{"kind": "lexical"}]}}, tmp_path
    )
    execute_run(config, str(tmp_path / "run"))
    expected = _sorted_scores(tmp_path / "run")
    manifest_path = tmp_path / "run" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    # simulate a crash after a part's rename but before its manifest record, plus a stray temp file
    from engine.stages.plan import build_plan

    manifest["parts"].pop(build_plan(config).bound("score").parts(2)[1].key)
    manifest["status"] = "running"
    manifest_path.write_text(json.dumps(manifest))
    (tmp_path / "run" / "scores" / ".tmp-deadbeef-lexical-x__part-00002.parquet").write_bytes(b"partial")
    execute_run(config, str(tmp_path / "run"), resume=True)
    assert _sorted_scores(tmp_path / "run") == expected
    assert not list((tmp_path / "run").rglob(".tmp-*"))


def test_a_changed_config_never_writes_into_an_old_run(tmp_path):
    input_path = write_jsonl(tmp_path / "in.jsonl", _rows(2))
    base = {"input": str(input_path), "part_size": 4, "stages": ["score"], "score": {"scorers": [{"kind": "lexical"}]}}
    execute_run(config_from_mapping(base, tmp_path), str(tmp_path / "run"))
    changed = dict(base, score={"scorers": [{"kind": "lexical", "span": "whole"}]})
    with pytest.raises(RunDirectoryError, match="another config"):
        execute_run(config_from_mapping(changed, tmp_path), str(tmp_path / "run"), resume=True)
    # a changed input file is a changed run too
    write_jsonl(input_path, _rows(3))
    with pytest.raises(RunDirectoryError, match="another config"):
        execute_run(config_from_mapping(base, tmp_path), str(tmp_path / "run"), resume=True)
