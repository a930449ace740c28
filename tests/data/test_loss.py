"""Loud data loss: a run that quarantined input rows says so at its end and exits 8,
unless `--max-rejected` / `validation.max_rejected` allows the loss; the manifest records it."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from engine.cli.exits import EXIT_CODES, exit_code
from engine.config import config_from_mapping, config_hash
from engine.data.loss import EXIT_REJECTED, RejectionLimit
from engine.errors import BabelscoreError, ConfigError, RejectedRowsError
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _input_with_bad_rows(tmp_path, good: int = 2, bad: int = 6):
    rows = [make_sample(f"f{i}/gen-a") for i in range(good)]
    rows += [make_sample(f"b{i}/gen-a", comment_end=10_000) for i in range(bad)]  # offsets out of range
    write_jsonl(tmp_path / "in.jsonl", rows)
    config = tmp_path / "my.yaml"
    config.write_text("input: in.jsonl\nscore:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n", encoding="utf-8")
    return config


def _run(tmp_path, *extra: str) -> subprocess.CompletedProcess:
    config = _input_with_bad_rows(tmp_path)
    return subprocess.run([PYTHON, "-m", "engine.cli", "run", str(config), *extra], capture_output=True, text=True,
                          cwd=tmp_path, env=ENV)


def test_a_run_with_rejected_rows_exits_8_with_the_count_on_its_last_lines(tmp_path):
    proc = _run(tmp_path, "--out", "r1")
    assert proc.returncode == EXIT_REJECTED == 8, proc.stderr
    last = proc.stderr.strip().splitlines()[-2:]
    assert "6 of 8 input rows (75.0%) were rejected" in last[0] and "r1/rejected.parquet" in last[0], last
    assert last[1].startswith("ERROR engine.cli: next: ") and "--max-rejected 6" in last[1], last
    manifest = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert manifest["status"] == "complete"  # every valid row was processed
    assert manifest["data_loss"] == {"rejected_rows": 6, "input_rows": 8, "share": 0.75, "max_rejected": "0",
                                     "within_limit": False, "reasons": "r1/rejected.parquet"}
    # ... and its report says so at the top
    from engine.report.build import write_report
    from engine.stages.plan import reopen_run

    page = Path(write_report(reopen_run(tmp_path / "r1"))).read_text(encoding="utf-8")
    assert '<aside class="notice" id="data-loss">' in page
    assert "6 of 8 input rows (75.0%) were rejected" in page and "exited with status 8" in page


@pytest.mark.parametrize("limit", ["6", "75%"])
def test_max_rejected_high_enough_exits_0_and_still_names_the_loss(tmp_path, limit):
    proc = _run(tmp_path, "--out", "r2", "--max-rejected", limit)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("data loss: 6 of 8 input rows (75.0%) were rejected")
    assert json.loads((tmp_path / "r2" / "manifest.json").read_text())["data_loss"]["within_limit"] is True


def test_a_limit_just_below_the_loss_still_fails_and_resume_can_accept_it(tmp_path):
    assert _run(tmp_path, "--out", "r3", "--max-rejected", "74%").returncode == EXIT_REJECTED
    # The limit is not part of the run's identity: the same run resumes under a higher one.
    proc = _run(tmp_path, "--out", "r3", "--resume", "--max-rejected", "5")
    assert proc.returncode == EXIT_REJECTED
    proc = _run(tmp_path, "--out", "r3", "--resume", "--max-rejected", "6")
    assert proc.returncode == 0, proc.stderr


def test_the_config_key_allows_it_and_stays_out_of_the_hash(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [make_sample("a")])
    lexical = {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}
    plain = config_from_mapping({"input": "in.jsonl", "score": lexical}, tmp_path)
    allowed = config_from_mapping({"input": "in.jsonl", "score": lexical, "validation": {"max_rejected": "10%"}}, tmp_path)
    assert allowed.validation.rejection_limit == RejectionLimit(percent=10.0)
    assert config_hash(plain, "x") == config_hash(allowed, "x")
    with pytest.raises(ConfigError, match=r"validation.max_rejected: got '10 rows'; allowed: a row count"):
        config_from_mapping({"input": "in.jsonl", "score": lexical, "validation": {"max_rejected": "10 rows"}}, tmp_path)


def test_limits_parse_and_compare():
    assert RejectionLimit.parse(0).allows(0, 10) and not RejectionLimit.parse(0).allows(1, 10)
    assert RejectionLimit.parse("2.5%").allows(1, 40) and not RejectionLimit.parse("2.5%").allows(2, 40)
    for bad in (-1, True, "150%", "x"):
        with pytest.raises(ConfigError):
            RejectionLimit.parse(bad, where="--max-rejected")


def test_exit_8_is_documented_and_not_swallowed_by_the_base_class():
    assert exit_code(RejectedRowsError("x")) == 8 and exit_code(BabelscoreError("x")) == 7
    assert 8 in {code for code, _, _ in EXIT_CODES}


def test_the_suggested_share_allows_the_loss_when_copied():
    """4 of 18 is 22.22...%: the suggestion rounds up (22.23%), so pasting it is enough."""
    from engine.data.loss import DataLoss

    for rejected, rows in ((4, 18), (1, 3), (6, 8), (1, 4), (7, 1000)):
        loss = DataLoss(rejected=rejected, input_rows=rows, limit=RejectionLimit.parse(0), reasons_path="r/rejected.parquet")
        percent = loss.suggestion("babelscore validate in.jsonl").split("(or ")[1].split(",")[0]
        assert RejectionLimit.parse(percent).allows(rejected, rows), (rejected, rows, percent)


def test_a_bad_max_rejected_flag_is_a_usage_error_not_a_config_error(tmp_path):
    proc = _run(tmp_path, "--out", "r4", "--max-rejected", "abc")
    assert proc.returncode == 2, proc.stderr
    assert "--max-rejected" in proc.stderr and "fix " not in proc.stderr and not (tmp_path / "r4").exists()
