"""Report sections of the sweep views (engine/report/sweep.py computes them):
  layers  kappa against layer per (scorer, context, language) of all-layer scorers, best marked
  best    the best settings per language, each against the next by Williams' test
Cells carry data-* attributes so tests compare them with calibration.parquet.
"""
from __future__ import annotations

import html
from typing import Any

from engine.report import figures, page
from engine.report.answer import anchor_of, context_best, tied_count
from engine.report.page import kappa_style
from engine.report.score_settings import language_name, short_scorer
from engine.report.section_api import ReportContext, Section
from engine.report.sweep import (
    BEST_ROWS,
    LAYER_VARIANT,
    TIE,
    BestRow,
    interval_text,
    layer_curves,
    report_settings,
    representative_layers,
    same_kappa,
    setting_text,
    significance_options,
)

esc = html.escape


def _agreement(ctx: ReportContext) -> list[dict[str, Any]]:
    return ctx.data.calibration_rows("agreement") if ctx.data.n_labelled else []


def best_any_variant(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], tuple[dict[str, Any], int]]:
    """(metric, scorer, context, language) -> (the fitted layer-K/<part> row with the highest kappa, how
    many rows share that kappa): best as the Best settings table defines it, within one scorer and context."""
    out: dict[tuple[str, str, str, str], tuple[dict[str, Any], int]] = {}
    for r in rows:
        if not LAYER_VARIANT.fullmatch(r["variant"]) or not r["fitted"] or r["kappa"] is None or r["kappa"] != r["kappa"]:
            continue
        key = (r["metric"], r["scorer"], r["context"], r["language"])
        best = out.get(key)
        if best is None or r["kappa"] > best[0]["kappa"] + TIE:
            out[key] = (r, 1)
        elif same_kappa(r["kappa"], best[0]["kappa"]):  # a tie: counted, the first variant by name shown with the count
            out[key] = (min(r, best[0], key=lambda x: x["variant"]), best[1] + 1)
    return out


def layer_section(ctx: ReportContext) -> Section | None:
    """Only for runs with an all-layer scorer (variants layer-K/F)."""
    defaults = representative_layers(report_settings(ctx.data.manifest, ctx.data.plan))
    curves = layer_curves(_agreement(ctx), defaults)
    if not curves:
        return None
    parts = [page.note(
        "Quadratic kappa against the encoder layer whose embeddings BERTScore matches (0 = the embedding layer), for "
        "scorers run with <code>all_layers: true</code>, variant F. The band is the bootstrap interval of each layer's "
        "kappa; the star marks the best layer with its interval (named above each panel); the dotted line is the "
        "scorer's shipped default layer (engine/resources/encoders.yaml), which the other figures and tables of this "
        "report show as the scorer's representative. The table gives the best F layer (the figure's star; layers "
        "sharing its kappa are named as tied) and, as the Best settings table defines best, the highest kappa among "
        "every layer and variant (P, R, F) of the scorer in that context. Picking the best layer on the same items it is judged on "
        "flatters it: overlapping intervals mean the layers are not told apart.")]
    any_variant = best_any_variant(_agreement(ctx))
    groups: dict[tuple[str, str], list] = {}
    for curve in curves:
        groups.setdefault((curve.metric, curve.scorer), []).append(curve)
    for (metric, scorer), group in groups.items():
        name = f"{metric} · {short_scorer(scorer)}"
        parts.append(ctx.fw.draw(
            f"layers-{metric}-{short_scorer(scorer)}", f"kappa against layer {name}",
            f"<strong>{esc(name)}</strong>: kappa against layer per context and language; best layer starred.",
            lambda path, group=group, name=name: figures.layer_figure(path, f"Kappa against layer — {name}", group),
        ))
        rows = []
        for c in group:
            best = c.best
            default = c.layers.index(c.default) if c.default in c.layers else None
            cells = []
            for i in (best, default):
                if i is None:
                    cells.append('<td class="na">–</td><td class="na">–</td>')
                else:
                    tied = [k for k in c.tied if i == best and k != c.layers[i]]
                    shown = f"{c.layers[i]}" + (f"<small>tied with {', '.join(map(str, tied))}</small>" if tied else "")
                    cells.append(f'<td>{shown}</td><td style="{kappa_style(c.kappa[i])}">{c.kappa[i]:.3f}'
                                 f"<small>{interval_text(c.lo[i], c.hi[i])}</small></td>")
            anyv = any_variant.get((c.metric, c.scorer, c.context, c.language))
            if anyv is None:
                cells.append('<td class="na">–</td><td class="na">–</td>')
            else:
                tie = f"<small>{anyv[1]} tied</small>" if anyv[1] > 1 else ""
                cells.append(f'<td class=lbl data-any-variant="{esc(anyv[0]["variant"])}">{esc(anyv[0]["variant"])}{tie}</td>'
                             f'<td style="{kappa_style(anyv[0]["kappa"])}">{anyv[0]["kappa"]:.3f}'
                             f'<small>{interval_text(anyv[0].get("kappa_lo"), anyv[0].get("kappa_hi"))}</small></td>')
            attrs = (f'data-metric="{esc(c.metric)}" data-scorer="{esc(c.scorer)}" data-context="{esc(c.context)}" '
                     f'data-language="{esc(c.language)}" data-best-layer="{"" if best is None else c.layers[best]}" '
                     f'data-best-kappa="{"" if best is None else repr(c.kappa[best])}"')
            rows.append(f"<tr {attrs}><th scope=row>{esc(language_name(c.language))}</th><td class=lbl>{esc(c.context or '—')}</td>"
                        f"{''.join(cells)}<td>{max(c.n)}</td></tr>")
        parts.append(
            f'<div class="scroll" data-table="layers-{esc(short_scorer(scorer))}"><table class="values layers"><thead><tr>'
            f"<th>language</th><th>context</th><th>best F layer</th>"
            f"<th>kappa (best F)</th><th>default layer</th><th>kappa (default)</th><th>best layer and variant</th>"
            f"<th>its kappa</th><th>n</th></tr></thead>"
            f'<tbody>{"".join(rows)}</tbody></table></div>')
    return Section("layers", "Layer sweep — kappa against layer", "\n".join(parts))


def _best_row(r: BestRow) -> str:
    variant = LAYER_VARIANT.sub(r"\2", r.key.variant)
    nxt = f"{setting_text(r.next_key, r.next_layer)} (κ {r.next_kappa:.3f})" if r.next_key is not None else "none"
    if r.significant is None:
        verdict, title = "–", f"not tested: {r.reason}"
    else:
        verdict = f"{'yes' if r.significant else 'no'}<small>p = {r.p:.3g}</small>"
        title = f"Williams t = {r.t:.2f}, one-sided p = {r.p:.3g}, n = {r.n_common} common labelled items"
    title += f"; next: {nxt}"
    attrs = (f'data-language="{esc(r.language)}" data-rank="{r.rank}" data-metric="{esc(r.key.metric)}" '
             f'data-scorer="{esc(r.key.scorer)}" data-context="{esc(r.key.context)}" data-variant="{esc(r.key.variant)}" '
             f'data-ranked-kappa="{r.kappa!r}" data-significant="{"" if r.significant is None else str(r.significant).lower()}" '
             f'data-p="{"" if r.p is None else repr(r.p)}"')
    return (f"<tr {attrs}><td>{r.rank}</td><th scope=row>{esc(r.key.metric)}</th><td class=\"lbl sc\" title=\"{esc(r.key.scorer)}\">"
            f"{esc(short_scorer(r.key.scorer)) or '—'}</td><td>{'–' if r.layer is None else r.layer}</td>"
            f"<td class=lbl>{esc(r.key.context or '—')}</td><td class=lbl>{esc(variant)}</td>"
            f'<td style="{kappa_style(r.kappa)}">{r.kappa:.3f}<small>{interval_text(r.lo, r.hi)}</small></td><td>{r.n}</td>'
            f'<td class=verdict title="{esc(title)}">{verdict}</td></tr>')


def best_section(ctx: ReportContext) -> Section | None:
    rows = _agreement(ctx)
    if not rows:
        return None  # the kappa sections say why there is no agreement
    settings = report_settings(ctx.data.manifest, ctx.data.plan)
    correlation, alpha = significance_options(settings)
    best = context_best(ctx)
    if not best:
        return None
    parts = [page.note(
        f"Per language, the {BEST_ROWS} settings (metric, scorer, layer, context, variant) whose KDE classifier agrees best "
        "with the experts (quadratic kappa, bootstrap interval below it), ranked among all fitted settings: every "
        "variant and layer (rank 1 is the best setting of the confusion matrices too). <em>Better than next</em>: Williams' test that "
        f"the setting's scores correlate with the expert labels ({esc(correlation)}) better than those of the setting "
        f"ranked next (the row below; for the last row the next one not listed), on their common labelled items; "
        f"one-sided, significant when p &lt; {alpha:g} (not adjusted for the number of comparisons); hover for t, n and "
        "the next setting. The layer of a non-sweep embedding scorer is its configured or shipped default.")]
    head = ("<tr><th>rank</th><th>metric</th><th>scorer</th><th>layer</th><th>context</th><th>variant</th><th>kappa</th>"
            "<th>n</th><th>better than next</th></tr>")
    for language in dict.fromkeys(r.language for r in best):
        body = "".join(_best_row(r) for r in best if r.language == language)
        tied = tied_count(best, language)
        tie = (f' <small class=muted>(no single best: the first {tied} share one kappa)</small>' if tied > 1 else "")
        parts.append(f'<h3 id="{anchor_of(language)}">{esc(language_name(language))}{tie}</h3>'
                     f'<div class="scroll" data-table="best-{esc(language)}"><table class="values best" '
                     f'data-best-language="{esc(language)}"><thead>{head}</thead><tbody>{body}</tbody></table></div>')
    return Section("best", "Best settings per language", "\n".join(parts))


def sweep_sections(ctx: ReportContext) -> list[Section]:
    return [s for s in (layer_section(ctx), best_section(ctx)) if s is not None]
