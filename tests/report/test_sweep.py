"""The sweep views on a real run of configs/demo_sweep.yaml (an all-layer embedding scorer) on
a subset of the demo data: the kappa-against-layer figure with the best layer marked, the
best-settings table recomputed with pandas from calibration.parquet, Williams' test against the
next setting recomputed from the score parts, and the console's best-per-language lines."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from scipy import stats

from engine.config import config_from_mapping
from engine.records import LABELS
from engine.report.sweep import BEST_ROWS
from engine.runner import execute_run
from engine.stats import williams_test
from tests.support.paths import REPO
from tests.support.report_run import parse
from tests.support.samples import write_demo_subset

MODEL = "pypi:all-MiniLM-L6-v2"
DEFAULT_LAYER = 5  # engine/resources/encoders.yaml


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("sweep")
    write_demo_subset(tmp / "subset.jsonl", 3)
    raw = yaml.safe_load((REPO / "configs" / "demo_sweep.yaml").read_text(encoding="utf-8"))
    raw["input"] = str(tmp / "subset.jsonl")
    raw["calibrate"]["bootstrap"] = 50
    raw["report"] = {"image_format": "svg"}  # SVG keeps the figure's text as text: the test reads it
    execute_run(config_from_mapping(raw, REPO / "configs"), str(tmp / "run"))
    return tmp / "run"


def _agreement(run: Path) -> pd.DataFrame:
    cal = pq.read_table(run / "calibration.parquet").to_pandas()
    cal = cal[(cal["task"] == "agreement") & (cal["group_by"].fillna("language") == "language")]
    return cal[cal["fitted"] & cal["kappa"].notna()]


def _html(run: Path) -> str:
    return (run / "report" / "index.html").read_text(encoding="utf-8")


def test_layer_figure_marks_the_best_layer(sweep_run: Path) -> None:
    cal = _agreement(sweep_run)
    layered = cal[cal["variant"].str.fullmatch(r"layer-\d+/F")].copy()
    layered["layer"] = layered["variant"].str.extract(r"layer-(\d+)/F", expand=False).astype(int)
    # best layer per (metric, scorer, context, language): highest kappa, the shallowest on a tie
    best = (layered.sort_values(["kappa", "layer"], ascending=[False, True])
            .groupby(["metric", "scorer", "context", "language"]).head(1))
    assert set(layered["scorer"]) == {MODEL} and layered["layer"].nunique() == 7  # MiniLM: embeddings + 6 layers
    text = _html(sweep_run)
    section = text[text.index('<section id="layers">'):]
    section = section[:section.index("</section>")]
    rows = parse(section, "data-best-layer").cells
    shown = {(r["data-metric"], r["data-scorer"], r["data-context"], r["data-language"]): (int(r["data-best-layer"]), float(r["data-best-kappa"]))
             for r in rows}
    expected = {(b.metric, b.scorer, b.context, b.language): (int(b.layer), float(b.kappa)) for b in best.itertuples()}
    assert shown == expected and len(expected) == 2 * 5  # contexts none, minimal x 5 languages
    [image] = parse(section, "data-never").images
    svg = (sweep_run / "report" / image["src"]).read_text(encoding="utf-8")
    ties = 0
    for b in best.itertuples():  # each panel names its best layer, drawn as a starred point, or the layers that tie
        group = layered[(layered["metric"] == b.metric) & (layered["context"] == b.context) & (layered["language"] == b.language)]
        tied = sorted(group[(group["kappa"] - b.kappa).abs() <= 1e-12]["layer"])
        if len(tied) > 1:
            ties += 1
            assert f"no single best layer: {', '.join(map(str, tied))} share κ {b.kappa:.2f}" in svg, (b.language, b.context, tied)
        else:
            assert f"best layer {int(b.layer)}: κ {b.kappa:.2f}" in svg, (b.language, b.context, b.layer)
    assert ties < len(expected)  # the sweep has panels with a single best layer too
    assert "shipped default layer" in svg


def test_representative_variant_is_the_default_layer(sweep_run: Path) -> None:
    from engine.report.build import report_context
    from engine.report.load import load_run
    from engine.stages.plan import reopen_run

    ctx = report_context(load_run(reopen_run(sweep_run)), sweep_run / "report")
    variants = {k.variant for k in ctx.head_keys if k.scorer == MODEL}
    assert variants == {f"layer-{DEFAULT_LAYER}/F"}


def test_best_settings_table_equals_pandas_on_calibration_parquet(sweep_run: Path) -> None:
    cal = _agreement(sweep_run)
    ranked = cal.sort_values(["language", "kappa", "metric", "scorer", "context", "variant"],
                             ascending=[True, False, True, True, True, True])
    expected = ranked.groupby("language").head(BEST_ROWS)
    expected = {(r.language, r.metric, r.scorer, r.context, r.variant, float(r.kappa)) for r in expected.itertuples()}
    text = _html(sweep_run)
    rows = parse(text, "data-rank").cells
    shown = {(r["data-language"], r["data-metric"], r["data-scorer"], r["data-context"], r["data-variant"], float(r["data-ranked-kappa"]))
             for r in rows}
    assert shown == expected and len(rows) == len(expected) == 5 * BEST_ROWS
    for language, group in ((lang, [r for r in rows if r["data-language"] == lang]) for lang in {r["data-language"] for r in rows}):
        kappas = [float(r["data-ranked-kappa"]) for r in sorted(group, key=lambda r: int(r["data-rank"]))]
        assert kappas == sorted(kappas, reverse=True), language


def test_williams_against_the_next_setting_recomputed(sweep_run: Path) -> None:
    cal = _agreement(sweep_run)
    scores = pq.read_table(sweep_run / "scores").to_pandas()
    scores = scores[(scores["noise"] == "none") & scores["error"].isna() & scores["value"].notna()]
    samples = pq.read_table(sweep_run / "samples").to_pandas()
    labels = samples[samples["label"].isin(LABELS)].set_index("sample_id")["label"].map(LABELS.index)
    rows = {(r["data-language"], int(r["data-rank"])): r for r in parse(_html(sweep_run), "data-rank").cells}
    checked = 0
    for language, group in cal.groupby("language"):
        top = group.sort_values(["kappa", "metric", "scorer", "context", "variant"], ascending=[False, True, True, True, True]).head(2)
        x, y = (scores[(scores["language"] == language) & (scores["metric"] == s.metric) & (scores["scorer"] == s.scorer)
                       & (scores["context"] == s.context) & (scores["variant"] == s.variant)].set_index("sample_id")["value"]
                for s in top.itertuples())
        both = pd.concat({"x": x, "y": y, "z": labels}, axis=1, join="inner")
        r_xz, r_yz, r_xy = (stats.spearmanr(both[a], both[b]).statistic for a, b in (("x", "z"), ("y", "z"), ("x", "y")))
        row = rows[(language, 1)]
        if not all(math.isfinite(r) for r in (r_xz, r_yz, r_xy)):
            assert row["data-significant"] == ""
            continue
        _, p = williams_test(r_xz, r_yz, r_xy, len(both))
        assert float(row["data-p"]) == pytest.approx(p, rel=1e-9)
        assert row["data-significant"] == ("true" if p < 0.05 else "false")
        checked += 1
    assert checked >= 1


def test_console_prints_the_best_setting_per_language(sweep_run: Path) -> None:
    from engine.report.sweep import best_lines
    from engine.stages.plan import reopen_run

    out = best_lines(reopen_run(str(sweep_run)))
    lines = out[out.index("best setting per language"):].splitlines()[1:6]
    cal = _agreement(sweep_run)
    names = {"en": "English", "nl": "Dutch", "pl": "Polish", "el": "Greek", "zh": "Chinese"}
    for line in lines:
        language = next(code for code, name in names.items() if line.strip().startswith(name))
        group = cal[cal["language"] == language]
        best = group.sort_values(["kappa", "metric", "scorer", "context", "variant"], ascending=[False, True, True, True, True]).iloc[0]
        assert f"κ {best.kappa:.2f}" in line and best.metric in line, line
        match = re.search(r"layer (\d+)", line)
        if best.variant.startswith("layer-"):
            assert match and int(match.group(1)) == int(best.variant.split("/")[0].split("-")[1]), line
    assert len(lines) == 5


def test_a_language_without_a_fitted_setting_gets_its_line_and_reason(tmp_path) -> None:
    """The console does not drop a language whose every setting is n/f (examples/: Dutch has one
    'incorrect' label): it names the language and the reason."""
    from engine.config import load_config
    from engine.report.sweep import best_lines
    from engine.runner import execute_run
    from engine.stages.plan import reopen_run
    from tests.support.paths import REPO

    execute_run(load_config(str(REPO / "examples" / "lexical.yaml")), str(tmp_path / "run"))
    lines = best_lines(reopen_run(tmp_path / "run")).splitlines()
    assert lines[1].split()[0] == "English" and "κ" in lines[1]
    languages = [line for line in lines[1:] if not line.startswith("warning:")]
    assert languages[-1].split()[:4] == ["Dutch", "no", "fitted", "setting:"] and "has 1 score(s)" in languages[-1], lines
    # the lexical example has a fitted setting whose regions run partial below incorrect: the console says so
    assert [line for line in lines if line.startswith("warning:")] == [lines[-1]] and "out of label order" in lines[-1]


def test_the_answer_block_opens_the_page_with_rank_one_of_each_language(sweep_run: Path) -> None:
    """Right under the header, before any section: per language the Best settings table's rank 1
    (the highest kappa among every fitted setting), its Williams p against the runner-up, and a
    link to the evidence; a tie is said as a tie."""
    text = _html(sweep_run)
    start = text.index('<aside class="answer"')
    assert start < text.index("<section") and start < text.index('<nav class="toc"')
    answer = text[start:text.index("</aside>", start)]
    cards = {c["data-answer-language"]: c for c in parse(answer, "data-answer-language").cells}
    ranked = {r["data-language"]: r for r in parse(text, "data-rank").cells if r["data-rank"] == "1"}
    assert list(cards) == ["en", "nl", "pl", "el", "zh"] and set(ranked) == set(cards)
    cal = _agreement(sweep_run)
    for language, card in cards.items():
        top = ranked[language]
        assert (card["data-metric"], card["data-variant"], card["data-context"]) == (top["data-metric"], top["data-variant"], top["data-context"])
        assert float(card["data-answer-kappa"]) == float(top["data-ranked-kappa"]) == cal[cal["language"] == language]["kappa"].max()
        assert card["data-p"] == top["data-p"]
        tied = int((cal[cal["language"] == language]["kappa"] == float(card["data-answer-kappa"])).sum())
        assert int(card["data-tied"]) == min(tied, BEST_ROWS + 1)
        assert f'href="#best-{language}"' in answer and f'id="best-{language}"' in text
    assert "no single best" in answer or "Williams p = " in answer


@pytest.mark.parametrize("width", [420, 1000, 1600])
def test_sweep_report_layout_holds_with_the_answer_on_the_first_screen(sweep_run: Path, width: int, tmp_path: Path) -> None:
    """Chromium at three widths: no clipped table, no text over text, the answer on the first screen,
    and the layer and best-settings tables whole at 1000 px and wider."""
    import shutil

    if shutil.which("chromium") is None:
        pytest.skip("chromium is not installed (the Makefile's test set-up installs Debian's `chromium`)")
    from tests.support.browser import answer_first_and_tables_fit

    names = re.findall(r'data-table="((?:layers|best)-[^"]+)"', _html(sweep_run))
    assert names
    answer_first_and_tables_fit(sweep_run / "report" / "index.html", width, tmp_path, tuple(names))


def test_a_tie_is_said_as_a_tie_by_the_console_and_the_layer_curve(tmp_path) -> None:
    """Two scorers that score alike (bleu with the 13a and the intl tokenizer on ASCII comments):
    the console names no best, as the report's answer block does, with the one tie rule."""
    from engine.config import config_from_mapping
    from engine.report.sweep import LayerCurve, best_lines, same_kappa
    from engine.runner import execute_run
    from engine.stages.plan import reopen_run
    from tests.support.paths import REPO

    raw = {"name": "tie", "input": str(REPO / "examples" / "samples.jsonl"), "stages": ["score", "calibrate"],
           "score": {"scorers": [{"kind": "lexical", "metrics": ["bleu"]},
                                 {"kind": "lexical", "metrics": ["bleu"], "bleu_tokenize": "intl"}]},
           "calibrate": {"bootstrap": 20}}
    execute_run(config_from_mapping(raw, tmp_path), str(tmp_path / "run"))
    cal = _agreement(tmp_path / "run")
    english = cal[(cal["language"] == "en") & cal["fitted"]]["kappa"].tolist()
    assert len(english) == 2 and same_kappa(*english)  # the premise: the two settings tie
    line = next(line for line in best_lines(reopen_run(tmp_path / "run")).splitlines() if line.strip().startswith("English"))
    assert f"no single best: 2 settings share κ {english[0]:.2f}" in line and "next:" not in line, line
    curve = LayerCurve("bertscore", "m", "none", "en", [1, 2, 3], [0.5, 0.7, 0.7 + 1e-15], [0.4] * 3, [0.8] * 3, [9] * 3, None)
    assert curve.tied == [2, 3]
    assert LayerCurve("bertscore", "m", "none", "en", [1, 2], [0.5, 0.7], [0.4] * 2, [0.8] * 2, [9] * 2, None).tied == [2]
