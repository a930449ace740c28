"""Perturbation families, the perturb stage's table and score items, and the sensitivity analysis."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from engine.data.extract import extract_comments
from engine.errors import ConfigError
from engine.perturb.analysis import bootstrap_mean_interval, sensitivity_table
from engine.perturb.families import FAMILIES, NO_WORDS, FamilyInput, perturb
from engine.perturb.language import resources_for
from engine.perturb.params import PerturbParams
from engine.perturb.perturber import foreign_pool, make_perturbations, perturb_rng
from engine.perturb.text import CommentText
from engine.records import PERTURB_SCHEMA, SCORE_SCHEMA

DEMO = Path(__file__).resolve().parents[2] / "engine" / "data" / "demo" / "samples.jsonl"
CODE = "int total(int count) { return count; }"


def _source(comment: str) -> tuple[str, int, int]:
    head = "class K {\n    "
    return head + comment + "\n    " + CODE, len(head), len(head) + len(comment)


def _input(language: str, comment: str, prime: str, foreign=()) -> FamilyInput:
    source, start, end = _source(comment)
    return FamilyInput(CommentText.of(comment, prime), resources_for(language), source, start, end, comment[:3], tuple(foreign))


FOREIGN = {"en": ("nl", "f9", "Telt één op."), "nl": ("en", "f1", "Adds one."), "pl": ("en", "f1", "Adds one."),
           "el": ("en", "f1", "Adds one."), "zh": ("en", "f1", "Adds one.")}

# (language, family, comment, prime, expected perturbed span); each example leaves the family one choice
EXAMPLES = [
    ("en", "negation", "// The total is positive.", "// The", " total is not positive."),
    ("en", "identifier_swap", "// Adds one to count.", "// Adds", " one to total."),
    ("en", "deletion", "// Adds one. Then stops.", "// Adds", " one."),
    ("en", "truncation", "// Adds one quickly", "// Adds", " one"),
    ("en", "verbatim_repetition", "// Adds one.", "//", " Adds one. Adds one. Adds one."),
    ("en", "pattern_repetition", "// Adds one", "// Adds", " one one one one one"),
    ("en", "code_copy", "// Adds one.", "// Adds", " one. " + CODE),
    ("en", "foreign_comment", "// Adds one.", "// Adds", " Telt één op."),
    ("nl", "negation", "// Het totaal is positief.", "// Het", " totaal is niet positief."),
    ("nl", "identifier_swap", "// Verhoogt count met een.", "// Verhoogt", " total met een."),
    ("nl", "deletion", "// Telt op. Stopt dan.", "// Telt", " op."),
    ("nl", "truncation", "// Telt snel op", "// Telt", " snel"),
    ("nl", "verbatim_repetition", "// Telt op.", "//", " Telt op. Telt op. Telt op."),
    ("nl", "pattern_repetition", "// Telt op", "// Telt", " op op op op op"),
    ("nl", "code_copy", "// Telt op.", "// Telt", " op. " + CODE),
    ("nl", "foreign_comment", "// Telt op.", "// Telt", " Adds one."),
    ("pl", "negation", "// Wynik jest dodatni.", "// Wynik", " nie jest dodatni."),
    ("pl", "identifier_swap", "// Zwiększa count o jeden.", "// Zwiększa", " total o jeden."),
    ("pl", "deletion", "// Dodaje jeden. Potem kończy.", "// Dodaje", " jeden."),
    ("pl", "truncation", "// Dodaje szybko jeden", "// Dodaje", " szybko"),
    ("pl", "verbatim_repetition", "// Dodaje jeden.", "//", " Dodaje jeden. Dodaje jeden. Dodaje jeden."),
    ("pl", "pattern_repetition", "// Dodaje jeden", "// Dodaje", " jeden jeden jeden jeden jeden"),
    ("pl", "code_copy", "// Dodaje jeden.", "// Dodaje", " jeden. " + CODE),
    ("pl", "foreign_comment", "// Dodaje jeden.", "// Dodaje", " Adds one."),
    ("el", "negation", "// Το σύνολο είναι θετικό.", "// Το", " σύνολο δεν είναι θετικό."),
    ("el", "identifier_swap", "// Αυξάνει το count κατά ένα.", "// Αυξάνει", " το total κατά ένα."),
    ("el", "deletion", "// Προσθέτει ένα. Μετά σταματά.", "// Προσθέτει", " ένα."),
    ("el", "truncation", "// Προσθέτει γρήγορα ένα", "// Προσθέτει", " γρήγορα"),
    ("el", "verbatim_repetition", "// Προσθέτει ένα.", "//", " Προσθέτει ένα. Προσθέτει ένα. Προσθέτει ένα."),
    ("el", "pattern_repetition", "// Προσθέτει ένα", "// Προσθέτει", " ένα ένα ένα ένα ένα"),
    ("el", "code_copy", "// Προσθέτει ένα.", "// Προσθέτει", " ένα. " + CODE),
    ("el", "foreign_comment", "// Προσθέτει ένα.", "// Προσθέτει", " Adds one."),
    ("zh", "negation", "// 结果是正数。", "// 结果", "不是正数。"),
    ("zh", "identifier_swap", "// 将 count 加一。", "// 将", " total 加一。"),
    ("zh", "deletion", "// 先加一。然后停止。", "// 先", "加一。"),
    ("zh", "truncation", "// 加一", "//", " 加"),
    ("zh", "verbatim_repetition", "// 加一。", "//", " 加一。加一。加一。"),
    ("zh", "pattern_repetition", "// 加一", "// 加", "一一一一一"),
    ("zh", "code_copy", "// 加一。", "// 加", "一。 " + CODE),
    ("zh", "foreign_comment", "// 加一。", "// 加", "Adds one."),
]


def test_examples_cover_every_family_in_every_language():
    assert {(lang, fam) for lang, fam, *_ in EXAMPLES} == {(lang, fam) for lang in FOREIGN for fam in FAMILIES}


@pytest.mark.parametrize("language,family,comment,prime,expected", EXAMPLES)
def test_family_examples(language, family, comment, prime, expected):
    inp = _input(language, comment, prime, [FOREIGN[language]])
    for seed in (0, 1, 7):  # one possible choice: the same output for every seed
        outcome = perturb(family, inp, perturb_rng(seed, "s", "reference", family))
        assert outcome.skip_reason is None
        assert outcome.text == expected


DOC = "/**\n     * Returns the sum of count. It is never negative, and it skips nulls.\n     * Callers may cache it.\n     */"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_never_edits_outside_the_comment(family):
    """The perturbed comment keeps its markers and stays one comment of the file at its place."""
    prime = "/**\n     * Returns the"
    source, start, end = _source(DOC)
    inp = FamilyInput(CommentText.of(DOC, prime), resources_for("en"), source, start, end, "/**",
                      (("nl", "f9", "Telt één op."),))
    for seed in range(5):
        outcome = perturb(family, inp, perturb_rng(seed, "s", "reference", family))
        assert outcome.applied, outcome.skip_reason
        comment = prime + outcome.text
        assert comment != DOC and comment.endswith("\n     */")
        assert all(line.startswith("     *") for line in comment.split("\n")[1:])
        edited = source[:start] + comment + source[end:]
        found = [c for c in extract_comments(edited, "java") if c.start == start]
        assert len(found) == 1 and found[0].end == start + len(comment)
        assert edited[start + len(comment):] == source[end:] and edited[:start] == source[:start]


def test_deletion_and_truncation_keep_the_closer_of_a_dropped_line():
    comment = "/** First part here.\n     * Second sentence goes. */"
    c = CommentText.of(comment, "/** First")
    inp = FamilyInput(c, resources_for("en"), comment, 0, len(comment), "/**")
    out = perturb("deletion", inp, np.random.default_rng(0))
    assert out.text == " part here. */"


SKIPS = [
    ("negation", "en", "// The total of rows.", "// The", "no negatable word"),
    ("negation", "xx", "// The total is here.", "// The", "no negation rules for language 'xx'"),
    ("identifier_swap", "en", "// The sum of rows.", "// The", "no identifier of the file"),
    ("deletion", "en", "// Adds one to the sum.", "// Adds", "one sentence of one clause"),
    ("truncation", "en", "// Adds one.", "// Adds", "fewer than 2 words"),
    ("pattern_repetition", "en", "// Adds ...", "// Adds", "punctuation only"),
    ("foreign_comment", "en", "// Adds one.", "// Adds", "no comment in another language"),
]


@pytest.mark.parametrize("family,language,comment,prime,reason", SKIPS)
def test_skips_report_their_reason(family, language, comment, prime, reason):
    outcome = perturb(family, _input(language, comment, prime), np.random.default_rng(0))
    assert outcome.text is None and reason in outcome.skip_reason


def test_code_copy_skips_without_code_and_every_family_skips_an_empty_span():
    comment = "// Adds one."
    inp = FamilyInput(CommentText.of(comment, "//"), resources_for("en"), comment, 0, len(comment), "//")
    assert "no code line" in perturb("code_copy", inp, np.random.default_rng(0)).skip_reason
    empty = FamilyInput(CommentText.of(comment, comment), resources_for("en"), comment, 0, len(comment), "//")
    assert all(perturb(f, empty, np.random.default_rng(0)).skip_reason == NO_WORDS for f in FAMILIES)


# ----- the part table -------------------------------------------------------------------------------
def _demo() -> pa.Table:
    rows = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    return pa.Table.from_pylist(rows)


def _by_files(table: pa.Table, files_per_part: int) -> list[pa.Table]:
    files = sorted(set(table["file_id"].to_pylist()))
    parts = []
    for i in range(0, len(files), files_per_part):
        chosen = pa.array(files[i:i + files_per_part])
        parts.append(table.filter(pa.compute.is_in(table["file_id"], value_set=chosen)))
    return parts


def _run(parts: list[pa.Table], params: PerturbParams) -> pa.Table:
    prepass = {"foreign_pool": foreign_pool(parts, params.seed, params.foreign_pool_size)}
    out = pa.concat_tables([make_perturbations(p, params, prepass) for p in parts])
    return out.sort_by([("sample_id", "ascending"), ("target", "ascending"), ("family", "ascending")])


def test_perturbations_are_deterministic_and_part_invariant():
    table = _demo()
    params = PerturbParams(perturb_predictions=True, foreign_pool_size=4)
    whole = _run([table], params)
    assert whole.schema == PERTURB_SCHEMA
    # one part per file, in reverse order and with rows shuffled, gives the same rows
    shuffled = table.take(np.random.default_rng(3).permutation(table.num_rows))
    assert _run(_by_files(shuffled, 1)[::-1], params).equals(whole)
    assert _run(_by_files(table, 7), params).equals(whole)
    other = _run([table], PerturbParams(perturb_predictions=True, foreign_pool_size=4, seed=1))
    assert other["prediction"].to_pylist() != whole["prediction"].to_pylist()
    # one reference target per file; predictions only for samples labelled correct
    refs = whole.filter(pa.compute.equal(whole["target"], "reference"))
    assert refs.num_rows == len(set(table["file_id"].to_pylist())) * (len(FAMILIES) + 1)  # + original
    correct = {r["sample_id"] for r in table.to_pylist() if r["label"] == "correct"}
    preds = whole.filter(pa.compute.equal(whole["target"], "prediction"))
    assert set(preds["sample_id"].to_pylist()) == correct
    applied = whole.filter(whole["applied"])
    assert applied.num_rows > 0.8 * whole.num_rows
    for row in whole.filter(pa.compute.invert(whole["applied"])).to_pylist():
        assert row["prediction"] is None and row["skip_reason"]
    # LG-WL2 draws a comment of another language
    pool_langs = {r["file_id"]: r["language"] for r in table.to_pylist()}
    for row in applied.filter(pa.compute.equal(applied["family"], "foreign_comment")).to_pylist():
        assert pool_langs[row["detail"].rsplit(" ", 1)[-1]] != row["language"]


def test_params_validate_and_name_the_key():
    with pytest.raises(ConfigError, match="families"):
        PerturbParams.from_mapping({"families": ["negation", "shouting"]}, where="perturb")
    with pytest.raises(ConfigError, match="truncate_min"):
        PerturbParams.from_mapping({"truncate_min": 0.9, "truncate_max": 0.5}, where="perturb")
    with pytest.raises(ConfigError, match="significance.correlation"):
        PerturbParams.from_mapping({"significance": {"correlation": "kendall"}}, where="perturb")


def test_stage_run_part_and_scored_rows():
    from engine.perturb.scored_rows import scored_perturbations
    from engine.perturb.stage import PerturbStage
    from engine.stages.base import PartContext, PartTask, RunSettings

    params = PerturbStage().parse_section({"families": ["negation", "truncation", "foreign_comment"]}, Path("."), "perturb")
    stage = PerturbStage(params)
    table = _demo()
    part = _by_files(table, 3)[0]
    (task,) = stage.tasks()
    assert stage.needs_prepass(task)
    prepass = stage.prepass(task, iter(_by_files(table, 5)))
    ctx = PartContext(Path("."), RunSettings(), PartTask.of(task, 0, stage.directory), prepass, _input_reader=lambda i: part)
    out = stage.run_part(ctx)
    assert out.schema == PERTURB_SCHEMA
    originals = out.filter(pa.compute.equal(out["family"], "original")).to_pylist()
    assert len(originals) == 3 and out.num_rows == 3 * 3 + 3  # 3 files x (3 families + original)
    by_id = {r["sample_id"]: r for r in part.to_pylist()}
    for r in originals:
        sample = by_id[r["sample_id"]]
        assert r["noise"] == "perturb:reference:original"
        assert r["prediction"] == sample["reference"][len(sample["prime"]):]
    scored = scored_perturbations(out)
    assert scored.num_rows == out.filter(out["applied"]).num_rows
    assert set(scored["noise"].to_pylist()) <= {"perturb:reference:original", "perturb:reference:negation",
                                                "perturb:reference:truncation", "perturb:reference:foreign_comment"}


# ----- sensitivity ------------------------------------------------------------------------------------
def _scores(rows: list[tuple]) -> pa.Table:
    cols = ["sample_id", "language", "noise", "metric", "scorer", "context", "variant", "value", "error"]
    table = pa.Table.from_pylist([dict(zip(cols, r)) for r in rows])
    return table.cast(pa.schema([SCORE_SCHEMA.field(c) for c in cols]))


def test_sensitivity_equals_a_hand_computation():
    o, n = "perturb:reference:original", "perturb:reference:negation"
    rows = [
        ("a", "en", o, "bleu", "", "", "score", 1.0, None), ("a", "en", n, "bleu", "", "", "score", 0.5, None),
        ("b", "en", o, "bleu", "", "", "score", 1.0, None), ("b", "en", n, "bleu", "", "", "score", 1.0, None),
        ("c", "en", o, "bleu", "", "", "score", 0.8, None), ("c", "en", n, "bleu", "", "", "score", 0.9, None),
        ("d", "en", o, "bleu", "", "", "score", 0.8, None), ("d", "en", n, "bleu", "", "", "score", float("nan"), "boom"),
        # prediction target: the original is the real row (noise none)
        ("a", "en", "none", "bleu", "", "", "score", 0.7, None),
        ("a", "en", "perturb:prediction:truncation", "bleu", "", "", "score", 0.4, None),
        ("b", "en", "none", "bleu", "", "", "score", 0.6, None),
        ("b", "en", "perturb:prediction:truncation", "bleu", "", "", "score", 0.2, None),
    ]
    skipped = pa.Table.from_pylist([dict(sample_id="e", file_id="e", language="en", noise="perturb:reference:negation",
                                         target="reference", family="negation", codes=["SE-HA3"], applied=False,
                                         skip_reason="x", prediction=None, detail=None, seed=0)],
                                   schema=PERTURB_SCHEMA)
    table = sensitivity_table([_scores(rows)], [skipped], seed=0, replicates=0, confidence=0.95)
    got = {(r["target"], r["family"]): r for r in table.to_pylist()}
    neg = got[("reference", "negation")]
    assert neg["n"] == 3 and neg["n_skipped"] == 1 and neg["codes"] == ["SE-HA3"]
    assert neg["ds"] == pytest.approx((0.5 + 0.0 - 0.1) / 3)
    assert neg["share_dropped"] == pytest.approx(1 / 3)
    assert neg["mean_original"] == pytest.approx(2.8 / 3) and neg["mean_perturbed"] == pytest.approx(2.4 / 3)
    trunc = got[("prediction", "truncation")]
    assert trunc["n"] == 2 and trunc["ds"] == pytest.approx((0.3 + 0.4) / 2) and trunc["share_dropped"] == 1.0
    # row order does not matter
    again = sensitivity_table([_scores(rows[::-1])], [skipped], seed=0, replicates=0, confidence=0.95)
    assert again.equals(table)


def test_bootstrap_is_seeded_and_reproducible():
    d = np.random.default_rng(0).normal(0.2, 1.0, size=50)
    a = bootstrap_mean_interval(d, 500, 0.9, seed=11)
    assert a == bootstrap_mean_interval(d, 500, 0.9, seed=11)
    assert a != bootstrap_mean_interval(d, 500, 0.9, seed=12)
    assert a[0] < d.mean() < a[1]
    # an independent computation: the percentile interval of resampled means
    rng = np.random.Generator(np.random.PCG64(11))
    means = d[rng.integers(0, d.size, size=(500, d.size))].mean(axis=1)
    assert a == pytest.approx(tuple(np.quantile(means, [0.05, 0.95])))
    assert bootstrap_mean_interval(np.full(10, 0.25), 100, 0.95, seed=1) == pytest.approx((0.25, 0.25))


def test_calibration_ignores_perturbation_rows():
    from engine.calibrate.params import CalibrateParams
    from engine.calibrate.thresholds import calibrate

    rng = np.random.default_rng(0)
    labels = ["incorrect", "partial", "correct"] * 6
    samples = pa.table({"sample_id": [f"s{i}" for i in range(18)], "label": labels})
    rows = []
    for i, label in enumerate(labels):
        rows.append((f"s{i}", "en", "none", "bleu", "", "", "score", float(labels.index(label) + rng.normal(0, 0.3)), None))
        rows.append((f"s{i}", "en", "uniform", "bleu", "", "", "score", float(rng.normal(-2, 0.3)), None))
    base = _scores(rows)
    extra = _scores(rows + [(f"s{i}", "en", f"perturb:reference:{f}", "bleu", "", "", "score", float(rng.normal(5, 1)), None)
                            for i in range(18) for f in ("negation", "original")])
    params = CalibrateParams(bootstrap=20)
    assert calibrate(extra, samples, params).equals(calibrate(base, samples, params))
    assert set(calibrate(extra, samples, params)["task"].to_pylist()) == {"agreement", "noise-uniform"}


# ----- a run through the runner: perturb -> score -> sensitivity / significance -> report ----------------
def _run_config(input_path: Path, part_size: int, stages: list[str]):
    from engine.config import config_from_mapping

    raw = {
        "name": "perturb-test", "input": str(input_path), "part_size": part_size, "stages": stages,
        "perturb": {"perturb_predictions": True, "bootstrap": 200, "foreign_pool_size": 8,
                    "significance": {"pairs": [{"x": {"metric": "rougeL", "variant": "F"},
                                                "y": {"metric": "bleu", "variant": "score"}}]}},
        "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu", "rougeL"]}]},
    }
    return config_from_mapping(raw, input_path.parent)


def test_run_results_are_part_invariant(tmp_path):
    import pyarrow.parquet as pq

    from engine.runner import execute_run

    rows = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r["language"] in ("en", "zh", "el")]
    ordered = tmp_path / "ordered.jsonl"
    ordered.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    shuffled = tmp_path / "shuffled.jsonl"
    mixed = [rows[i] for i in np.random.default_rng(5).permutation(len(rows))]
    shuffled.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in mixed), encoding="utf-8")
    results = []
    for name, path, part_size, stages in (("one-file", ordered, 1, ["perturb", "score", "report"]),
                                          ("all-rows", shuffled, 10_000, ["perturb", "score"])):
        root = tmp_path / name
        execute_run(_run_config(path, part_size, stages), str(root))
        perturbations = pa.concat_tables(pq.read_table(p) for p in sorted((root / "perturbations").glob("*.parquet")))
        results.append((pq.read_table(root / "sensitivity.parquet"), pq.read_table(root / "significance.parquet"),
                        perturbations.sort_by([("sample_id", "ascending"), ("noise", "ascending")])))
    (s1, g1, p1), (s2, g2, p2) = results
    assert len(list((tmp_path / "one-file" / "perturbations").glob("*.parquet"))) == len({r["file_id"] for r in rows})
    assert p1.equals(p2)
    assert s1.equals(s2) and s1.num_rows > 0
    assert g1.equals(g2)
    sens = s1.to_pylist()
    # a truncated reference scores below the reference itself, for every file, in every language
    trunc = [r for r in sens if r["family"] == "truncation" and r["metric"] == "bleu" and r["target"] == "reference"]
    assert {r["language"] for r in trunc} == {"en", "zh", "el"}
    assert all(r["ds"] > 0 and r["share_dropped"] == 1.0 and r["ds_lo"] <= r["ds"] <= r["ds_hi"] for r in trunc)
    assert {r["target"] for r in sens} == {"reference", "prediction"}
    williams = [r for r in g1.to_pylist() if r["kind"] == "williams"]
    assert {r["language"] for r in williams} == {"en", "zh", "el"} and all(r["n"] == 55 for r in williams)
    index = (tmp_path / "one-file" / "report" / "index.html").read_text(encoding="utf-8")
    assert 'id="sensitivity"' in index and 'id="significance"' in index
    assert "data-share-dropped" in index and "sensitivity heatmap English" in index
    # the report's score views and the score key stay clean: perturbation rows only under perturb: noise values
    scores = pa.concat_tables(pq.read_table(p) for p in sorted((tmp_path / "one-file" / "scores").glob("*.parquet")))
    noise = set(scores["noise"].to_pylist())
    assert "none" in noise and "perturb:reference:original" in noise and all(n == "none" or n.startswith("perturb:") for n in noise)


def test_a_family_skipped_everywhere_in_a_language_gets_an_empty_row():
    rows = [("a", "en", "perturb:reference:original", "bleu", "", "", "score", 1.0, None),
            ("a", "en", "perturb:reference:truncation", "bleu", "", "", "score", 0.5, None)]
    skipped = pa.Table.from_pylist([dict(sample_id="a", file_id="a", language="en", noise="perturb:reference:negation",
                                         target="reference", family="negation", codes=["SE-HA3"], applied=False,
                                         skip_reason="x", prediction=None, detail=None, seed=0)], schema=PERTURB_SCHEMA)
    table = sensitivity_table([_scores(rows)], [skipped], seed=0, replicates=10, confidence=0.95)
    got = {r["family"]: r for r in table.to_pylist()}
    assert got["negation"]["n"] == 0 and got["negation"]["n_skipped"] == 1 and got["negation"]["ds"] is None
    assert got["truncation"]["n"] == 1 and got["truncation"]["ds"] == 0.5
