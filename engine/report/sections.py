"""The report's sections that reproduce the study's results, each headed with the study's number.

Each builder takes the `ReportContext` and returns its Section(s); a result whose input the run
lacks (no labels, no noise, no calibration) is still a section, saying what is missing and why.
  Table 1   error codes per language, parents accumulating children, ratios to English
  Table 2   expert correct / partial / incorrect share per generator and language
  Fig. 2    strip plots of the scores by expert label, with the KDE class boundaries
  Fig. 3    real predictions against uniform and targeted noise
  Fig. 6    quadratic kappa per scoring model and language
  Figs. 7/8 row- and column-normalised confusion matrices
  Fig. 11   change in kappa from context `none` to `minimal` / `full`
  Fig. 12   noise F1 per target LLM (and pooled over the generators)
"""
from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from engine import taxonomy
from engine.kinds import SCORES
from engine.report import figures, page
from engine.report.page import kappa_style
from engine.report.score_settings import BASE_LANGUAGE, ConfigKey, language_name, short_scorer
from engine.report.section_api import ReportContext, Section
from engine.report.tables import (
    ALL_GENERATORS,
    best_per_language,
    calibration_keys,
    calibration_languages,
    cell_states,
    contexts_of,
    error_code_counts,
    expert_accuracy,
    kappa_deltas,
    matrix,
    noise_values,
    strip_row,
)

MAX_HEATMAP_ROWS = 40
MAX_FIGURE_GROUPS = 16  # strip / noise figures: one per (metric, scorer) up to this many
NOISE_TASKS = ("noise-uniform", "noise-targeted")
# Noise rows are asked of the score rows themselves: perturbations are candidates too, so a
# candidate-providing stage does not mean noise predictions.
NO_NOISE_ROWS = "the run has no score rows for noise predictions (the <code>noise</code> stage makes them)"
esc = html.escape

TITLES = {
    "errors": "Table 1 — Error codes per language",
    "experts": "Table 2 — Expert accuracy per generator and language",
    "scores": "Fig. 2 — Scores by expert label",
    "noise": "Fig. 3 — Real vs noise",
    "agreement": "Fig. 6 — Agreement with experts: kappa per scoring model and language",
    "confusion": "Figs. 7/8 — Confusion matrices, row- and column-normalised",
    "context": "Fig. 11 — Effect of context on kappa",
    "noise-f1": "Fig. 12 — Noise robustness: F1 per target LLM",
}


def _missing(anchor: str, why: str) -> Section:
    return Section(anchor, TITLES[anchor], page.missing(why + "."), why)


def _labels_reason(ctx: ReportContext) -> str | None:
    if ctx.data.n_labelled:
        return None
    return (
        f"agreement needs expert labels, and none of the {ctx.data.stats.n_samples} samples of this run has a "
        "label (column <code>label</code>: correct / partial / incorrect)"
    )


def _no_scores_reason(ctx: ReportContext) -> str:
    data = ctx.data
    if not data.provides(SCORES):
        return "the run has no score rows: none of its stages scores (<code>score</code> does)"
    failed = len(data.manifest.failed_parts)
    if failed:
        return f"the run has no score rows: {failed} part(s) failed (see <a href='#run'>the run section</a>)"
    return f"the run has no score rows yet (run status: {esc(str(data.manifest.status))})"


# ----- Table 1, Table 2 -------------------------------------------------------------------------
def error_codes_section(ctx: ReportContext) -> Section:
    if _labels_reason(ctx):
        return _missing("errors", "the error-code counts need expert labels: none of the samples has a label")
    table = error_code_counts(ctx.data.stats)
    if not table.codes:
        return _missing("errors", "no sample has error codes (column <code>error_codes</code>)")
    others = [lang for lang in table.languages if lang != BASE_LANGUAGE]
    head = "".join(f"<th>{esc(language_name(lang))}</th>" for lang in table.languages)
    body = []
    for code in table.codes:
        cells = []
        for lang in table.languages:
            ratio = table.ratio(code, lang)
            shown = f"<small>×{ratio:.1f}</small>" if lang != BASE_LANGUAGE and math.isfinite(ratio) else ""
            cells.append(f'<td data-ratio="{ratio!r}" data-code="{esc(code)}" data-language="{esc(lang)}">'
                         f"{table.counts.get((code, lang), 0)}{shown}</td>")
        indent = "&nbsp;&nbsp;" * table.depth(code)
        cls = ' class="parent"' if code in taxonomy.CODES and taxonomy.children(code) else ""
        body.append(f'<tr{cls}><th scope=row>{indent}<code>{esc(code)}</code></th><td class="lbl desc">'
                    f'{esc(taxonomy.describe(code))}</td>{"".join(cells)}<td class="total">{table.total(code)}</td></tr>')
    labelled = "".join(f"<td>{table.labelled.get(lang, 0)}</td>" for lang in table.languages)
    ratio_note = (
        f"Small numbers are the ratio of a code's rate (samples with the code per labelled sample) in a language "
        f"to its rate in {language_name(BASE_LANGUAGE)}; the study reports language errors up to 15.1x and SE-MD up "
        "to 21.8x the English rate."
        if BASE_LANGUAGE in table.languages and others else
        f"No ratios: the run has no labelled {language_name(BASE_LANGUAGE)} samples to compare with."
    )
    intro = page.note(
        "The study's Table 1, computed from this run: labelled samples whose error codes include a code, per "
        "language. A parent code (e.g. <code>SE-HA</code>, <code>SE</code>) counts every sample that has it or one "
        f"of its children, each sample once. {ratio_note}"
    )
    return Section("errors", TITLES["errors"], intro + (
        f'<div class="scroll"><table class="values counts"><thead><tr><th>code</th><th>meaning</th>{head}<th>total</th></tr></thead>'
        f'<tbody>{"".join(body)}</tbody><tfoot><tr><th>labelled samples</th><td class=lbl></td>{labelled}'
        f'<td class="total">{sum(table.labelled.values())}</td></tr></tfoot></table></div>'))


def experts_section(ctx: ReportContext) -> Section:
    if _labels_reason(ctx):
        return _missing("experts", "the expert accuracy table and error-code counts need expert labels: none of the samples has a label")
    table = expert_accuracy(ctx.data.stats)
    head = "".join(f'<th title="{esc(g)}">{esc(g.rsplit("/", 1)[-1])}</th>' for g in table.generators)
    body = []
    for language in table.languages:
        cells = []
        for g in table.generators:
            n = table.n(language, g)
            share = table.share(language, g)
            shares = " ".join(f'data-{label}="{table.share(language, g, label)!r}"' for label in ("partial", "incorrect"))
            cls = ' class="total"' if g == ALL_GENERATORS else ""
            cells.append(
                f'<td{cls} data-language="{esc(language)}" data-generator="{esc(g)}" data-correct="{share!r}" {shares} data-n="{n}" '
                f'style="{kappa_style(share / 100 if math.isfinite(share) else math.nan)}">'
                + (f"{share:.1f}<small>n = {n}</small>" if n else "–") + "</td>"
            )
        body.append(f"<tr><th scope=row>{esc(language_name(language))}</th>{''.join(cells)}</tr>")
    parts = [
        page.note("The study's Table 2, computed from this run: the share of predictions the experts judged correct; "
                  "the figure adds the partially correct and incorrect shares."),
        "<h3>Correct share (%) per language and generator</h3>",
        f'<div class="scroll"><table class="values"><thead><tr><th>language</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>',
        ctx.fw.draw("expert-accuracy", "expert labels per language and generator",
                    "Share of correct, partially correct and incorrect predictions per generator, as judged by the experts; "
                    "each number is the share of the segment it sits in (segments under 8% are not numbered).",
                    lambda path: figures.accuracy_figure(path, "Expert labels", table)),
    ]
    return Section("experts", TITLES["experts"], "\n".join(parts))


# ----- Fig. 2, Fig. 3 ---------------------------------------------------------------------------
def strip_section(ctx: ReportContext) -> Section:
    data = ctx.data
    if data.scores is None:
        return _missing("scores", _no_scores_reason(ctx))
    parts = [
        page.note(
            "The study's Fig. 2, computed from this run. Each point is one real prediction. Scores are min-max "
            "normalised per setting over all languages (the raw range is under each row name); dashed lines are the "
            "KDE classifier's class boundaries and the background tint is the label of each region (legend: region). "
            "A panel framed in red has regions out of label order (e.g. partial below incorrect): a higher score is not "
            "a better label there, whatever its kappa."
        )
    ]
    missing = None
    reason = _labels_reason(ctx)
    if reason:
        missing = "points are not coloured by label: " + reason
        parts.append(page.missing(missing + "."))
    for (metric, scorer), keys in ctx.groups[:MAX_FIGURE_GROUPS]:
        rows = [strip_row(data.scores, k, ctx.agreement, data.max_strip_points) for k in keys]
        shown, total = sum(r.shown for r in rows), sum(r.total for r in rows)
        sub = f" Showing a random {shown:,} of {total:,} points (report.max_strip_points)." if shown < total else ""
        name = keys[0].label(with_context=False)
        parts.append(ctx.fw.draw(
            f"strip-{metric}-{short_scorer(scorer)}", f"strip plot {name}",
            f"<strong>{esc(name)}</strong>: normalised scores per language and context.{sub}",
            lambda path, rows=rows, name=name: figures.strip_figure(path, name, rows),
        ))
    if len(ctx.groups) > MAX_FIGURE_GROUPS:
        parts.append(page.note(f"{len(ctx.groups) - MAX_FIGURE_GROUPS} more metric/scorer pairs are not drawn (limit {MAX_FIGURE_GROUPS}); the tables below list all of them."))
    return Section("scores", TITLES["scores"], "\n".join(parts), missing)


def noise_section(ctx: ReportContext) -> Section:
    data = ctx.data
    if data.scores is None:
        return _missing("noise", _no_scores_reason(ctx))
    if not data.scores.has_noise():
        return _missing("noise", f"real vs noise distributions need noise scores: {NO_NOISE_ROWS}")
    parts = [page.note(
        "The study's Fig. 3, computed from this run: score distributions of the real predictions and of the two "
        "synthetic noise predictions (same token length as the reference): uniform tokens from the vocabulary, and "
        "tokens drawn from the file's context. A metric that separates them is robust. Each histogram is drawn "
        "from a seeded sample of at most report.max_strip_points scores.")]
    for (metric, scorer), keys in ctx.groups[:MAX_FIGURE_GROUPS]:
        rows = [(k, noise_values(data.scores, k, data.max_strip_points)) for k in keys]
        name = keys[0].label(with_context=False)
        parts.append(ctx.fw.draw(
            f"noise-{metric}-{short_scorer(scorer)}", f"noise distributions {name}",
            f"<strong>{esc(name)}</strong>: real vs uniform vs targeted noise, per language and context.",
            lambda path, rows=rows, name=name: figures.noise_figure(path, name, rows, data.scores.languages),
        ))
    return Section("noise", TITLES["noise"], "\n".join(parts))


# ----- Fig. 6, Figs. 7/8, Fig. 11 ---------------------------------------------------------------
def _agreement_inputs(ctx: ReportContext) -> tuple[str | None, list[dict[str, Any]]]:
    data = ctx.data
    reason = _labels_reason(ctx) or (data.notes.get("calibration") if data.calibration is None else None)
    rows = data.calibration_rows("agreement")
    if reason is None and not rows:
        reason = "calibration.parquet has no agreement rows pooled over generators"
    return reason, rows


def _shown_keys(ctx: ReportContext, rows: list[dict[str, Any]]) -> list[ConfigKey]:
    keys = calibration_keys(rows)
    return [k for k in keys if k in ctx.head_keys] or keys


def agreement_section(ctx: ReportContext) -> Section:
    reason, rows = _agreement_inputs(ctx)
    if reason:
        return _missing("agreement", reason)
    languages = calibration_languages(rows)
    parts = [page.note(
        "The study's Fig. 6, computed from this run: quadratically weighted Cohen's kappa between the expert labels "
        "and the KDE threshold classifier, per scoring model and language (generators pooled); n/f = not fitted "
        "(the number beside it points to the reason, listed under the table). Small numbers are the bootstrap "
        "confidence interval.")]
    parts.append(_kappa_heatmap(ctx, rows, _shown_keys(ctx, rows), languages))
    parts.append("<h3>Kappa table</h3>" + page.split_tables(rows, ctx.head_keys, "kappa", "values", "Other variants"))
    return Section("agreement", TITLES["agreement"], "\n".join(parts))


def confusion_section(ctx: ReportContext) -> Section:
    reason, rows = _agreement_inputs(ctx)
    if reason:
        return _missing("confusion", reason)
    shown = _shown_keys(ctx, rows)
    languages = calibration_languages(rows)
    # One definition of "best" in the report: the highest kappa among every fitted setting (all
    # variants and layers), as the Best settings table ranks them, not only the kappa table's main rows.
    best = best_per_language(rows, calibration_keys(rows), languages)
    if not best:
        return _missing("confusion", "no agreement row is fitted, so there is no confusion matrix")
    intro = page.note(
        "The study's Figs. 7 (row-normalised) and 8 (column-normalised), computed from this run: expert label (rows) "
        "against the KDE classifier (columns). Row-normalised cells are the recall of each expert class, "
        "column-normalised cells the precision of each predicted class; counts in brackets. First the best setting of "
        "each language: the highest kappa among all fitted settings (every metric, scorer, layer, context and "
        "variant; the same ranking as the Best settings table), then every setting of the kappa table."
    )
    cards = "".join(page.confusion_card(row, language_name(lang), page.key_of(row).label()) for lang, row in best)
    body = intro + f"<h3>Best setting per language</h3><div class=cmgrid>{cards}</div>" + page.confusion_details(rows, shown, languages)
    return Section("confusion", TITLES["confusion"], body)


def context_section(ctx: ReportContext) -> Section:
    reason, rows = _agreement_inputs(ctx)
    if reason:
        return _missing("context", reason)
    languages = calibration_languages(rows)
    base, deltas = kappa_deltas(rows, _shown_keys(ctx, rows), languages)
    if not deltas:
        return _missing("context", "the change in kappa needs the same metric scored with context <code>none</code> and "
                        "<code>minimal</code> or <code>full</code>; this run has no such pair (lexical metrics have no context)")
    labels = [k.label(with_context=False) for k in base]
    panels = [(f"{c} − none", d) for c, d in deltas.items()]
    body = page.note("The study's Fig. 11, computed from this run.") + ctx.fw.draw(
        "kappa-delta", "change in kappa from context none",
        "Change in kappa when the neural metrics see context: <code>minimal</code> (the whole comment) and <code>full</code> "
        "(the whole file) against <code>none</code> (the scored spans only). Purple: context helps.",
        lambda path: figures.heatmap_figure(
            path, "Δ kappa against context none", labels, languages, panels, "Δ kappa", diverging=True,
            nan_text=[np.full(d.shape, "–", dtype=object) for _, d in panels],
        ),
    )
    return Section("context", TITLES["context"], body)


def _kappa_heatmap(ctx: ReportContext, rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str]) -> str:
    """One panel per context setting; lexical metrics (no context) repeat in every panel."""
    lexical = [k for k in keys if not k.context]
    contexts = [c for c in contexts_of(keys) if c]
    neural = sorted({k._replace(context="") for k in keys if k.context})
    row_keys = lexical + neural
    if len(row_keys) > MAX_HEATMAP_ROWS:
        mean = {k: _nanmean(matrix(rows, [k] if k in lexical else [k._replace(context=c) for c in contexts], languages, "kappa").ravel()) for k in row_keys}
        row_keys = sorted(row_keys, key=lambda k: -mean[k])[:MAX_HEATMAP_ROWS]
    labels = [k.label(with_context=False) + (" (no context)" if k in lexical and contexts else "") for k in row_keys]
    panels, states = [], []
    for context in contexts or [""]:
        panel_keys = [k if k in lexical else k._replace(context=context) for k in row_keys]
        panels.append((f"context: {context}" if context else "no context", matrix(rows, panel_keys, languages, "kappa")))
        state = cell_states(rows, panel_keys, languages)
        present = {(r["metric"], r["scorer"], r["context"], r["variant"], r["language"]) for r in rows}
        for i, key in enumerate(panel_keys):  # a cell with no row at all: the setting was not scored in this context
            for j, language in enumerate(languages):
                if (*key, language) not in present:
                    state[i, j] = "–"
        states.append(state)
    caption = ("Kappa per scorer and language for each context setting (<code>none</code>: the scored spans only; "
               "<code>minimal</code>: the whole comment; <code>full</code>: the whole file). Lexical metrics do not see "
               "context and repeat in every panel. n/f: not fitted (the reasons are under the kappa table); –: the setting "
               "was not scored in this context (e.g. a scorer configured without it). Every number, with its interval, is in "
               "the kappa table below.")
    return ctx.fw.draw(
        "kappa-heatmap", "kappa heatmap per context setting", caption,
        lambda path: figures.heatmap_figure(path, "Quadratic kappa", labels, languages, panels, "kappa", vmin=0.0, vmax=1.0, nan_text=states),
    )


def _nanmean(values: Any) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else -math.inf


# ----- Fig. 12 ----------------------------------------------------------------------------------
def _noise_missing_reason(ctx: ReportContext) -> str:
    data = ctx.data
    if data.calibration is None:
        return data.notes.get("calibration", "there is no calibration.parquet")
    if data.scores is None or not data.scores.has_noise():
        return f"noise F1 needs noise scores: {NO_NOISE_ROWS}"
    return "calibration.parquet has no noise rows"


def noise_f1_section(ctx: ReportContext) -> Section:
    data = ctx.data
    per_generator = {task: data.calibration_rows(task, per_generator=True) for task in NOISE_TASKS}
    pooled = {task: data.calibration_rows(task) for task in NOISE_TASKS}
    if not any(per_generator.values()) and not any(pooled.values()):
        return _missing("noise-f1", _noise_missing_reason(ctx))
    parts = [page.note(
        "The study's Fig. 12, computed from this run: macro F1 of a two-class KDE classifier separating real "
        "predictions from noise predictions, fitted per target LLM (the generator whose predictions are scored) and "
        "language, as the study fits it; 1 means the metric always tells them apart, 0.5 is chance. The same "
        "classifier fitted with the generators pooled follows.")]
    missing = None
    if not any(per_generator.values()):
        missing = ("noise F1 per target LLM: calibration.parquet has no per-generator noise rows "
                   "(calibrate.group_by.noise does not include [language, generator])")
        parts.append(page.missing(missing + "."))
    for task in NOISE_TASKS:
        rows = per_generator[task]
        if not rows:
            continue
        kind = task.replace("noise-", "")
        languages = calibration_languages(rows)
        keys = _shown_keys(ctx, rows)[:MAX_HEATMAP_ROWS]
        generators = sorted({r["generator"] for r in rows})
        by_generator = {g: [r for r in rows if r["generator"] == g] for g in generators}
        panels = [(g.rsplit("/", 1)[-1], matrix(by_generator[g], keys, languages, "f1")) for g in generators]
        states = [cell_states(by_generator[g], keys, languages) for g in generators]
        labels = [k.label() for k in keys]
        parts.append(f"<h3>{esc(kind)} noise, per target LLM</h3>")
        parts.append(ctx.fw.draw(
            f"noise-f1-per-generator-{kind}", f"noise F1 per target LLM, {kind} noise",
            f"Noise F1 ({kind} noise) per setting and language, one panel per target LLM.",
            lambda path, labels=labels, languages=languages, panels=panels, states=states, kind=kind: figures.heatmap_figure(
                path, f"Noise F1 per target LLM ({kind} noise)", labels, languages, panels, "macro F1",
                vmin=0.5, vmax=1.0, nan_text=states),
        ))
        tables = "".join(f"<h4>{esc(g)}</h4>" + page.split_tables(by_generator[g], ctx.head_keys, "f1", "values", "Other variants")
                         for g in generators)
        parts.append(f"<details><summary>F1 tables per target LLM ({len(generators)})</summary>{tables}</details>")
    pooled_rows = [r for task in NOISE_TASKS for r in pooled[task]]
    if pooled_rows:
        languages = calibration_languages(pooled_rows)
        keys = _shown_keys(ctx, pooled_rows)[:MAX_HEATMAP_ROWS]
        labels = [k.label() for k in keys]
        panels = [(task.replace("noise-", "") + " noise", matrix(pooled[task], keys, languages, "f1")) for task in NOISE_TASKS]
        states = [cell_states(pooled[task], keys, languages) for task in NOISE_TASKS]
        parts.append("<h3>Generators pooled</h3>")
        parts.append(ctx.fw.draw(
            "noise-f1", "noise F1 per scorer", "Noise F1 per setting and language, generators pooled.",
            lambda path: figures.heatmap_figure(path, "Noise F1 (real vs noise, generators pooled)", labels, languages, panels,
                                                "macro F1", vmin=0.5, vmax=1.0, nan_text=states),
        ))
        for task in NOISE_TASKS:
            if pooled[task]:
                parts.append(f"<h4>{esc(task)}</h4>" + page.split_tables(pooled[task], ctx.head_keys, "f1", "values", "Other variants"))
    return Section("noise-f1", TITLES["noise-f1"], "\n".join(parts), missing)


STUDY_SECTIONS = [
    error_codes_section,
    experts_section,
    strip_section,
    noise_section,
    agreement_section,
    confusion_section,
    context_section,
    noise_f1_section,
]
