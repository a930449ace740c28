"""Report sections of the perturbation analyses: sensitivity (RUN/sensitivity.parquet) and
significance (RUN/significance.parquet).

Sensitivity: one heatmap per language (perturbation family x metric setting, reference
target), coloured by the relative drop dS / |mean S(original)| so metrics of different scales
share one colour bar, and a table of the share of samples whose score dropped. Significance:
correlations with the expert labels, the Williams comparisons with t, p and the direction, and a
plain sentence per significant finding. With many settings only headline variants are drawn.
"""
from __future__ import annotations

import html
import math
from typing import Any, Callable

import numpy as np
import pyarrow.parquet as pq

from engine.perturb.families import FAMILIES
from engine.records import SENSITIVITY_SCHEMA, SIGNIFICANCE_SCHEMA
from engine.report import figures, page
from engine.report.page import kappa_style
from engine.report.score_settings import language_name, order_languages, short_scorer

esc = html.escape
MAX_COLUMNS = 14
HEADLINE_VARIANTS = ("F", "score", "avg")


def _setting_label(metric: str, scorer: str, variant: str, context: str) -> str:
    parts = [metric] + ([short_scorer(scorer)] if scorer else []) + ([context] if context else [])
    if variant and variant != "score":
        parts.append(variant)
    return " · ".join(parts)


def _headline(settings: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    if len(settings) <= MAX_COLUMNS:
        return settings
    head = [s for s in settings if s[2] in HEADLINE_VARIANTS or s[2].endswith(tuple("/" + v for v in HEADLINE_VARIANTS))]
    return (head or settings)[:MAX_COLUMNS]


def _fmt(value: Any, digits: int = 3) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def sensitivity_section(data: Any, fw: Any, section: Callable[..., Any]) -> Any | None:
    anchor, title = "sensitivity", "Perturbation sensitivity"
    path = data.root / "sensitivity.parquet"
    stages = data.manifest.config_stages
    if not path.exists():
        if "perturb" not in stages:
            return None
        why = "sensitivity.parquet is absent: the analysis runs after the score stage and has not run yet"
        return section(anchor, title, page.missing(why + "."), why)
    rows = [r for r in pq.read_table(path, schema=SENSITIVITY_SCHEMA).to_pylist() if r["target"] == "reference"]
    if not rows:
        why = "sensitivity.parquet has no rows for perturbed references"
        return section(anchor, title, page.missing(why + "."), why)
    settings = _headline(sorted({(r["metric"], r["scorer"], r["variant"], r["context"]) for r in rows}))
    families = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    languages = order_languages({r["language"] for r in rows})
    by = {(r["metric"], r["scorer"], r["variant"], r["context"], r["language"], r["family"]): r for r in rows}
    parts = [page.note(
        "Each perturbation stands for an error code; dS = mean over files of S(original) − S(perturbed), where "
        "S(original) scores the reference against itself and S(perturbed) the perturbed reference against the "
        "reference. Colours show dS / |mean S(original)| (a relative drop: positive means the metric noticed the "
        "error); the table below gives dS with its bootstrap interval and the share of files whose score dropped.")]
    row_labels = [f"{f} ({'/'.join(FAMILIES[f])})" for f in families]
    # the scorer is named only where a metric has several (long model ids crowd the axis)
    scorers_of: dict[str, set[str]] = {}
    for m, sc, _, _ in settings:
        scorers_of.setdefault(m, set()).add(sc)
    col_labels = [(m + (f" {short_scorer(sc)}" if len(scorers_of[m]) > 1 else "")
                   + ("\n" + " · ".join(x for x in (c, v if v != "score" else "") if x) if c or v != "score" else ""))
                  for m, sc, v, c in settings]
    for language in languages:
        values = np.full((len(families), len(settings)), np.nan)
        for i, f in enumerate(families):
            for j, s in enumerate(settings):
                r = by.get((*s, language, f))
                if r and r["ds"] is not None and r["mean_original"] not in (None, 0.0):
                    values[i, j] = r["ds"] / abs(r["mean_original"])
        text = np.full(values.shape, "", dtype=object)
        parts.append(fw.draw(
            f"sensitivity-{language}", f"sensitivity heatmap {language_name(language)}",
            f"<strong>{esc(language_name(language))}</strong>: relative drop per perturbation family and metric setting.",
            lambda p, v=values, t=text, lang=language: figures.heatmap_figure(
                p, f"Perturbation sensitivity — {language_name(lang)}", row_labels, col_labels, [("", v)],
                "dS / |mean S(original)|", diverging=True, nan_text=[t]),
        ))
    head = "".join(f"<th>{esc(language_name(lang))}</th>" for lang in languages)
    body = []
    for s in settings:
        # The setting heads its group of rows (a column of long setting names hid the languages).
        body.append(f'<tr class="group"><th colspan="{1 + len(languages)}" scope="rowgroup">{esc(_setting_label(*s))}</th></tr>')
        for f in families:
            cells = []
            for lang in languages:
                r = by.get((*s, lang, f))
                if r is None or r["ds"] is None:
                    cells.append('<td class="na">–</td>')
                    continue
                share = r["share_dropped"]
                # dS is the number (the share dropped is 1.00 in almost every cell: a perturbed text
                # nearly always scores lower than the reference against itself); tinted, like the
                # heatmap, by the relative drop dS / |mean S(original)|.
                relative = r["ds"] / abs(r["mean_original"]) if r["mean_original"] not in (None, 0.0) else math.nan
                detail = (f"<small>[{_fmt(r['ds_lo'], 2)}, {_fmt(r['ds_hi'], 2)}]<br>{100 * share:.0f}% of {r['n']}"
                          + (f", {r['n_skipped']} skipped" if r["n_skipped"] else "") + "</small>")
                cells.append(f'<td data-family="{esc(f)}" data-language="{esc(lang)}" data-metric="{esc(s[0])}" '
                             f'data-share-dropped="{share!r}" data-ds="{r["ds"]!r}" style="{kappa_style(relative)}">'
                             f"{_fmt(r['ds'])}{detail}</td>")
            body.append(f'<tr><th scope=row>{esc(f)}</th>{"".join(cells)}</tr>')
    parts.append("<h3>dS per setting and family</h3>"
                 + page.note("Each cell: dS (the mean drop of the score), its bootstrap interval, and the share of "
                             "files whose score dropped, of n files. Tint: the relative drop, as in the heatmaps.")
                 + f'<div class="scroll tall" data-table="sensitivity"><table class="values compact"><thead><tr>'
                 f'<th>setting / family</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')
    return section(anchor, title, "\n".join(parts))


def significance_section(data: Any, section: Callable[..., Any]) -> Any | None:
    anchor, title = "significance", "Significance of agreement differences"
    path = data.root / "significance.parquet"
    if not path.exists():
        return None
    rows = pq.read_table(path, schema=SIGNIFICANCE_SCHEMA).to_pylist()
    corr = [r for r in rows if r["kind"] == "correlation"]
    will = [r for r in rows if r["kind"] == "williams"]
    rank = {lang: i for i, lang in enumerate(order_languages({r["language"] for r in will}))}
    will.sort(key=lambda r: rank[r["language"]])  # the report's one language order; stable within a language
    parts = [page.note(
        "Correlation of each metric setting's scores of real predictions with the expert labels (incorrect < partial "
        "< correct): Spearman's ρ and Kendall's τ-b. Williams' t compares two settings on the same items, one-sided: "
        "p is the probability of a difference this large if x did not agree better than y (df = n − 3); "
        "p adjusted corrects it for the number of comparisons in the language (Holm, unless configured otherwise), "
        "and a comparison is significant when p adjusted is below alpha.")]
    significant = [r for r in will if r["significant"]]
    if significant:
        parts.append("<h3>Findings</h3><ul>" + "".join(f"<li>{esc(r['sentence'])}</li>" for r in significant) + "</ul>")
    elif will:
        parts.append(page.note("No comparison is significant at the configured level."))
    if will:
        body = "".join(
            f'<tr data-significant="{str(bool(r["significant"])).lower()}"><td>{esc(language_name(r["language"]))}</td>'
            f'<td class="lbl wrap">{esc(_setting_label(r["metric"], r["scorer"], r["variant"], r["context"]))}</td>'
            f'<td class="lbl wrap">{esc(_setting_label(r["metric_y"], r["scorer_y"], r["variant_y"], r["context_y"]))}</td>'
            f'<td>{r["n"]}</td><td>{_fmt(r["r_xz"])}</td><td>{_fmt(r["r_yz"])}</td><td>{_fmt(r["r_xy"])}</td>'
            f'<td>{_fmt(r["t"], 2)}</td><td>{_fmt(r["p"], 4)}</td><td>{_fmt(r["p_adjusted"], 4)}</td><td>{esc(r["direction"] or "–")}</td>'
            f'<td title="{esc(r["reason"] or "")}">{"yes" if r["significant"] else "no"}</td></tr>'
            for r in will)
        parts.append("<h3>Williams' test (x better than y)</h3>"
                     '<div class="scroll" data-table="williams"><table class="values heads-wrap compact"><thead><tr>'
                     "<th>language</th><th>x</th><th>y</th><th>n</th>"
                     "<th>r(x, experts)</th><th>r(y, experts)</th><th>r(x, y)</th><th>t</th><th>p (one-sided)</th><th>p adjusted</th>"
                     f'<th>direction</th><th>significant</th></tr></thead><tbody>{body}</tbody></table></div>')
    if corr:
        languages = order_languages({r["language"] for r in corr})
        by = {(r["metric"], r["scorer"], r["variant"], r["context"], r["language"]): r for r in corr}
        settings = sorted({k[:4] for k in by})
        head = "".join(f"<th>{esc(language_name(lang))}</th>" for lang in languages)
        body = []
        for s in settings:
            cells = []
            for lang in languages:
                r = by.get((*s, lang))
                if r is None or r["spearman"] is None:
                    cells.append('<td class="na">–</td>')
                else:
                    cells.append(f'<td data-spearman="{r["spearman"]!r}" style="{kappa_style(r["spearman"])}">'
                                 f'{r["spearman"]:.2f}<small>τ-b {_fmt(r["kendall"], 2)}, n = {r["n"]}</small></td>')
            body.append(f'<tr><th scope=row>{esc(_setting_label(*s))}</th>{"".join(cells)}</tr>')
        parts.append("<h3>Correlation with the expert labels (Spearman ρ; Kendall τ-b below)</h3>"
                     f'<div class="scroll"><table class="values"><thead><tr><th>setting</th>{head}</tr></thead>'
                     f'<tbody>{"".join(body)}</tbody></table></div>')
    return section(anchor, title, "\n".join(parts))


def perturbation_sections(data: Any, fw: Any, section: Callable[..., Any]) -> list[Any]:
    """The sections present for this run (none when it has neither analysis).

    data: the report's RunData; fw: its FigureWriter; section: its Section class.
    """
    out = [sensitivity_section(data, fw, section), significance_section(data, section)]
    return [s for s in out if s is not None]
