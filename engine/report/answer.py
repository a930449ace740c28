"""The block right under the report's header: the research answer, per language.

"Which metric setting agrees with the experts in my language, and how sure is that": the best
setting (the one definition used everywhere: the highest quadratic kappa among all fitted
settings, every metric, scorer, layer, context and variant) with its bootstrap interval, the
runner-up with Williams' test against it, and the judges' best setup where judges ran. Each
line links to the section below that shows the evidence. Ties are said as ties, never broken
by name order.
"""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from engine.report.score_settings import language_name, order_languages, regions_out_of_order
from engine.report.section_api import ReportContext
from engine.report.sweep import BEST_DEFINITION, BEST_ROWS, TIE, BestRow, interval_text, setting_text, tied_count

esc = html.escape


def context_best(ctx: ReportContext) -> list[BestRow]:
    """The Best settings table's rows (top BEST_ROWS per language), computed once per report."""
    if "best" not in ctx.cache:
        from engine.io.rundir import RunDirectory
        from engine.report.sweep import (
            best_settings,
            label_ordinals,
            report_settings,
            representative_layers,
            run_scores,
            significance_options,
        )

        rows = ctx.data.calibration_rows("agreement") if ctx.data.n_labelled else []
        best: list[BestRow] = []
        if rows:
            settings = report_settings(ctx.data.manifest, ctx.data.plan)
            correlation, alpha = significance_options(settings)
            run = RunDirectory.open_existing(str(ctx.data.root), layout=ctx.data.layout)
            best = best_settings(rows, run_scores(run), label_ordinals(run), representative_layers(settings),
                                 BEST_ROWS, correlation, alpha)
        ctx.cache["best"] = best
    return ctx.cache["best"]


def judge_best(run_root: Path) -> dict[str, list[dict[str, Any]]]:
    """language -> the judge setups with the highest kappa (several when tied); empty without judges."""
    path = Path(run_root) / "judge_analysis" / "agreement.parquet"
    if not path.is_file():
        return {}
    import pyarrow.parquet as pq

    out: dict[str, list[dict[str, Any]]] = {}
    for row in pq.read_table(path).to_pylist():
        kappa = row.get("kappa")
        if not row.get("n") or kappa is None or not math.isfinite(kappa):
            continue
        best = out.setdefault(row["language"], [])
        if not best or kappa > best[0]["kappa"] + TIE:
            out[row["language"]] = [row]
        elif abs(kappa - best[0]["kappa"]) <= TIE:
            best.append(row)
    return out


def _judge_text(rows: list[dict[str, Any]]) -> str:
    first = rows[0]
    setup = " · ".join(str(first[k]) for k in ("judge", "strategy") if first.get(k))
    prompt = first.get("prompt_language")
    if prompt:
        setup += f" · prompt in {language_name(prompt) if prompt != 'sample' else 'the sample’s language'}"
    if first.get("reference"):
        setup += f" · {first['reference']} reference"
    text = f"<b>{esc(setup)}</b> κ {first['kappa']:.2f}, n = {first['n']}"
    if len(rows) > 1:
        text += f" <em>(tied with {len(rows) - 1} other setup{'s' if len(rows) > 2 else ''})</em>"
    return text


def anchor_of(language: str) -> str:
    return "best-" + "".join(c if c.isalnum() else "-" for c in language)


def _language_card(language: str, rows: list[BestRow], judges: list[dict[str, Any]] | None, judged: bool,
                   agreement: dict[tuple, dict[str, Any]]) -> str:
    mine = [r for r in rows if r.language == language]
    lines = []
    if mine and regions_out_of_order((agreement.get((*mine[0].key, language)) or {}).get("region_labels")):
        lines.append('<p class="tie"><span class=k>warning</span> the best setting\'s KDE regions are out of label order '
                     '(a higher score is not a better label there; <a href="#scores">strip plots</a>).</p>')
    if mine:
        top = mine[0]
        tied = tied_count(rows, language)
        link = f' <a href="#{anchor_of(language)}">evidence</a>'
        if tied > 1:
            names = "; ".join(esc(setting_text(r.key, r.layer)) for r in mine[:min(tied, 3)])
            more = f" and {tied - 3} more" if tied > 3 else ""
            lines.append(f'<p class="best tie"><span class=k>best</span> no single best: {tied} settings share κ {top.kappa:.2f} '
                         f"{esc(interval_text(top.lo, top.hi))} ({names}{more}).{link}</p>")
        else:
            lines.append(f'<p class="best"><span class=k>best</span> <b>{esc(setting_text(top.key, top.layer))}</b> '
                         f"κ {top.kappa:.2f} {esc(interval_text(top.lo, top.hi))}, n = {top.n}.{link}</p>")
            if top.next_key is not None:
                if top.significant is None:
                    verdict = f"not tested ({esc(top.reason)})"
                else:
                    verdict = (f"Williams p = {top.p:.3g}: the best is "
                               f"{'significantly' if top.significant else '<b>not</b> significantly'} better")
                lines.append(f'<p class="next"><span class=k>runner-up</span> {esc(setting_text(top.next_key, top.next_layer))} '
                             f"κ {top.next_kappa:.2f}; {verdict}.</p>")
    else:
        lines.append('<p class="best"><span class=k>best</span> no fitted setting in this language '
                     '(<a href="#agreement">the kappa table</a> says why).</p>')
    if judges:
        lines.append(f'<p class="judge"><span class=k>judge</span> {_judge_text(judges)}. <a href="#judges">evidence</a></p>')
    elif judged:
        lines.append('<p class="judge"><span class=k>judge</span> no judge answer gave a label with an expert label '
                     '(<a href="#judges">see the judges</a>).</p>')
    attrs = f'data-answer-language="{esc(language)}"'
    if mine:  # what tests compare with the Best settings table
        top = mine[0]
        attrs += (f' data-metric="{esc(top.key.metric)}" data-scorer="{esc(top.key.scorer)}" data-context="{esc(top.key.context)}"'
                  f' data-variant="{esc(top.key.variant)}" data-answer-kappa="{top.kappa!r}" data-tied="{tied_count(rows, language)}"'
                  f' data-p="{"" if top.p is None else repr(top.p)}"')
    return f'<div class="ans" {attrs}><h3>{esc(language_name(language))}</h3>{"".join(lines)}</div>'



def answer_block(ctx: ReportContext) -> str:
    """The answer aside (HTML); says why when the run cannot answer."""
    data = ctx.data
    head = '<aside class="answer" id="answer"><h2>The answer: which setting agrees best with the experts</h2>'
    if not data.n_labelled:
        return (head + '<p class="missing"><strong>No answer:</strong> agreement needs expert labels (column '
                '<code>label</code>), and no sample of this run has one (<a href="#agreement">more</a>).</p></aside>')
    agreement = data.calibration_rows("agreement")
    if not agreement:
        why = data.notes.get("calibration") or "calibration.parquet has no agreement rows"
        return head + f'<p class="missing"><strong>No answer:</strong> {why}.</p></aside>'
    rows = context_best(ctx)
    judges = judge_best(data.root)
    judged = (Path(data.root) / "judge_analysis" / "agreement.parquet").is_file()
    languages = order_languages({r["language"] for r in agreement} | set(judges))
    cards = "".join(_language_card(lang, rows, judges.get(lang), judged, ctx.agreement) for lang in languages)
    note = (f'<p class="note">Per language, {esc(BEST_DEFINITION)}. Interval: bootstrap; runner-up: the setting ranked '
            'next, compared by Williams\' test on the same labelled items (one-sided). A best picked on the items it is '
            'judged on flatters it: overlapping intervals mean the settings are not told apart. '
            '<a href="#best">Best settings</a> ranks the top settings; <a href="#agreement">the kappa heatmap and table</a> '
            'show every one.</p>')
    # the answers first, their definition after: at 420 px the note alone would push them below the first screen
    return head + f'<div class="answers">{cards}</div>' + note + '</aside>'
