"""The embedded demo dataset (engine/data/demo/samples.jsonl) keeps its promises (DATA_CARD.md)."""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO_DIR = REPO / "engine" / "data" / "demo"
SAMPLES = DEMO_DIR / "samples.jsonl"
LANGUAGES = ("en", "nl", "zh", "el", "pl")
EXPECTED_VARIANTS = {
    "demo/paraphrase": ("correct", []),
    "demo/wrong-identifier": ("partial", ["SE-HA1"]),
    "demo/missing-detail": ("partial", ["SE-MD"]),
    "demo/wrong-statement": ("incorrect", ["SE-HA3"]),
    "demo/wrong-language": ("incorrect", ["LG-WL2"]),
}
FILE_ID = re.compile(r"^(en|nl|zh|el|pl)_(java|python)_\d{2}$")


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with SAMPLES.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


@pytest.fixture(scope="module")
def files(rows: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        grouped[row["file_id"]].append(row)
    return dict(grouped)


@pytest.fixture(scope="module")
def detector():
    from lingua import Language, LanguageDetectorBuilder

    languages = {
        Language.ENGLISH: "en",
        Language.DUTCH: "nl",
        Language.CHINESE: "zh",
        Language.GREEK: "el",
        Language.POLISH: "pl",
    }
    built = LanguageDetectorBuilder.from_languages(*languages).build()
    return lambda text: languages.get(built.detect_language_of(text))


def _program(file_id: str) -> str:
    match = FILE_ID.match(file_id)
    assert match, f"file_id {file_id!r} does not look like <lang>_<java|python>_NN"
    return match.group(2)


def _prose(comment: str) -> str:
    """The words of a comment without its syntax (/** * */, //, #)."""
    lines = (line.strip().removesuffix("*/").lstrip("/*# ") for line in comment.split("\n"))
    return " ".join(line for line in lines if line)


def test_at_least_ten_files_per_language_with_java_and_python(files: dict[str, list[dict]]) -> None:
    by_language: dict[str, Counter] = defaultdict(Counter)
    for file_id, file_rows in files.items():
        assert {row["language"] for row in file_rows} == {file_id[:2]}
        by_language[file_id[:2]][_program(file_id)] += 1
    assert set(by_language) == set(LANGUAGES)
    for language, programs in by_language.items():
        assert sum(programs.values()) >= 10, (language, programs)
        assert programs["java"] >= 1 and programs["python"] >= 1, (language, programs)


def test_reference_is_the_span_and_starts_with_the_prime(rows: list[dict]) -> None:
    for row in rows:
        source, start, end = row["source"], row["comment_start"], row["comment_end"]
        assert 0 <= start < end <= len(source), row["sample_id"]
        assert source[start:end] == row["reference"], row["sample_id"]
        assert row["reference"].startswith(row["prime"]), row["sample_id"]
        assert 0 < len(row["prime"]) < len(row["reference"]), row["sample_id"]


def test_sample_ids_unique_and_named_after_file_and_generator(rows: list[dict]) -> None:
    ids = [row["sample_id"] for row in rows]
    assert len(ids) == len(set(ids))
    for row in rows:
        assert row["sample_id"] == f"{row['file_id']}/{row['generator']}"


def test_each_file_has_the_five_variants_with_labels_by_construction(files: dict[str, list[dict]]) -> None:
    for file_id, file_rows in files.items():
        got = {row["generator"]: (row["label"], row["error_codes"]) for row in file_rows}
        assert got == EXPECTED_VARIANTS, file_id
        shared = {(r["source"], r["comment_start"], r["comment_end"], r["reference"], r["prime"]) for r in file_rows}
        assert len(shared) == 1, f"{file_id}: rows disagree on the file, the comment or the prime"
        continuations = [row["prediction"] for row in file_rows]
        reference_continuation = file_rows[0]["reference"][len(file_rows[0]["prime"]) :]
        assert len(set(continuations)) == 5 and reference_continuation not in continuations, file_id


def test_rows_sorted_so_a_file_is_contiguous(rows: list[dict]) -> None:
    keys = [(row["file_id"], row["generator"]) for row in rows]
    assert keys == sorted(keys)


def test_comments_are_in_the_program_syntax(rows: list[dict]) -> None:
    for row in rows:
        program = _program(row["file_id"])
        for comment in (row["reference"], row["prime"] + row["prediction"]):
            lines = comment.split("\n")
            if program == "python":
                assert all(line.lstrip().startswith("#") for line in lines), row["sample_id"]
            elif comment.startswith("/**"):
                assert comment.endswith("*/") and comment.count("*/") == 1, row["sample_id"]
                assert all(line.lstrip().startswith("*") for line in lines[1:]), row["sample_id"]
            else:
                assert all(line.lstrip().startswith("//") for line in lines), row["sample_id"]


def test_reference_comments_have_a_realistic_length(files: dict[str, list[dict]]) -> None:
    for file_id, file_rows in files.items():
        prose = _prose(file_rows[0]["reference"])
        if file_id.startswith("zh"):
            han = sum(1 for char in prose if "\u4e00" <= char <= "\u9fff")
            assert 15 <= han <= 80, (file_id, han)
        else:
            assert 10 <= len(prose.split()) <= 40, (file_id, len(prose.split()))


def test_python_sources_parse_with_reference_and_with_each_variant(files: dict[str, list[dict]]) -> None:
    for file_id, file_rows in files.items():
        if _program(file_id) != "python":
            continue
        for row in file_rows:
            start, end = row["comment_start"], row["comment_end"]
            candidate = row["source"][:start] + row["prime"] + row["prediction"] + row["source"][end:]
            ast.parse(row["source"], filename=file_id)
            ast.parse(candidate, filename=row["sample_id"])


@pytest.mark.skipif(shutil.which("javac") is None, reason="javac not installed")
def test_java_sources_compile(files: dict[str, list[dict]], tmp_path: Path) -> None:
    paths = []
    for file_id, file_rows in files.items():
        if _program(file_id) != "java":
            continue
        source = file_rows[0]["source"]
        package = re.search(r"^package ([\w.]+);", source, re.M)
        public = re.search(r"^public (?:final )?class (\w+)", source, re.M)
        assert package and public, file_id
        path = tmp_path / "src" / Path(*package.group(1).split(".")) / f"{public.group(1)}.java"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
        paths.append(str(path))
    result = subprocess.run(
        ["javac", "-encoding", "UTF-8", "-d", str(tmp_path / "classes"), *paths],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_wrong_language_variant_is_not_in_the_file_language(rows: list[dict], detector) -> None:
    for row in rows:
        if row["generator"] != "demo/wrong-language":
            continue
        detected = detector(_prose(row["prediction"]))
        assert detected is not None and detected != row["language"], (row["sample_id"], detected)


def test_other_comments_are_in_the_file_language(rows: list[dict], detector) -> None:
    for row in rows:
        texts = [row["reference"]]
        if row["generator"] != "demo/wrong-language":
            texts.append(row["prime"] + row["prediction"])
        for text in texts:
            assert detector(_prose(text)) == row["language"], (row["sample_id"], _prose(text))


def test_rows_pass_the_input_validator_and_fit_the_schema(rows: list[dict]) -> None:
    from engine.data.reader import iter_raw_rows
    from engine.data.validate import SampleValidator
    from engine.records import SAMPLE_SCHEMA

    validator = SampleValidator(require_prediction=True)
    for raw in iter_raw_rows(SAMPLES):
        sample, rejected = validator.check(raw)
        assert rejected is None, rejected
    assert validator.valid == len(rows)
    table = pa.Table.from_pylist(rows, schema=SAMPLE_SCHEMA)
    assert table.num_rows == len(rows)


@pytest.mark.parametrize("how", ["module", "script"])
def test_generator_reproduces_the_committed_file(tmp_path: Path, how: str) -> None:
    out = tmp_path / "samples.jsonl"
    entry = ["-m", "engine.data.demo.make_demo_data"] if how == "module" else [str(DEMO_DIR / "make_demo_data.py")]
    subprocess.run([sys.executable, *entry, str(out)], cwd=REPO, check=True, capture_output=True, timeout=120)
    assert out.read_bytes() == SAMPLES.read_bytes()
