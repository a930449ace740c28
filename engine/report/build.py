"""`babelscore report RUN`: RUN/report/index.html with its figures beside it.

The page is self-contained (inline CSS, one tiny inline script that marks images that failed
to load, no network). It is built in a temp folder inside the run directory and swapped into
place by rename, so a crash never leaves a half report that looks complete. Sections whose
data the run lacks (no labels, no noise, no calibration) say what is missing and why.
"""
from __future__ import annotations

import html
import json
import logging
import math
import os
import re
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any, Callable

import numpy as np

from engine.report import figures, page
from engine.report.page import PAGE, kappa_style
from engine.report.perturbation import perturbation_sections
from engine.report.tables import (
    ALL_GENERATORS,
    ConfigKey,
    RunData,
    best_per_language,
    by_key,
    calibration_keys,
    calibration_languages,
    cell_states,
    contexts_of,
    describe_error_code,
    display_status,
    error_code_counts,
    expert_accuracy,
    figure_groups,
    headline_keys,
    headline_variants,
    kappa_deltas,
    language_name,
    load_run,
    matrix,
    noise_values,
    order_languages,
    short_scorer,
    strip_row,
)

logger = logging.getLogger(__name__)

REPORT_DIR = "report"
TMP_PREFIX = ".report-tmp-"
OLD_PREFIX = ".report-old-"
MAX_HEATMAP_ROWS = 40
MAX_FIGURE_GROUPS = 16  # strip / noise figures: one per (metric, scorer) up to this many
NOISE_TASKS = ("noise-uniform", "noise-targeted")
esc = html.escape


@dataclass
class Section:
    anchor: str
    title: str
    body: str
    missing: str | None = None  # why (part of) the section could not be drawn


class FigureWriter:
    """Names figure files, draws them, and turns failures into a note instead of a crash."""

    def __init__(self, folder: Path, image_format: str):
        self.folder = folder
        self.ext = "svg" if image_format == "svg" else "png"
        self.count = 0
        self.failures: list[str] = []

    def draw(self, stem: str, alt: str, caption: str, fn: Callable[[Path], None]) -> str:
        slug = re.sub(r"[^A-Za-z0-9]+", "-", stem).strip("-").lower()[:80]
        self.count += 1
        name = f"{self.count:02d}-{slug}.{self.ext}"
        try:
            fn(self.folder / name)
        except Exception as exc:  # one bad figure must not cost the whole report
            logger.exception("report figure %s failed", name)
            self.failures.append(f"{alt}: {type(exc).__name__}: {exc}")
            return f'<p class="missing">Figure “{esc(alt)}” could not be drawn: {esc(type(exc).__name__)}: {esc(str(exc))}</p>'
        return (
            f'<figure><img src="{esc(name)}" alt="{esc(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>"
        )


# ----- sections ---------------------------------------------------------------------------------
def _labels_reason(data: RunData) -> str | None:
    if data.n_labelled:
        return None
    return (
        f"agreement needs expert labels, and none of the {data.samples.num_rows} samples of this run has a "
        "label (column <code>label</code>: correct / partial / incorrect)"
    )


def _no_scores_reason(data: RunData) -> str:
    if "score" not in data.stages:
        return "the run has no score rows: its stages do not include <code>score</code>"
    failed = len(data.manifest.get("failed_parts") or {})
    if failed:
        return f"the run has no score rows: {failed} part(s) failed (see <a href='#run'>the run section</a>)"
    return f"the run has no score rows yet (run status: {esc(str(data.manifest.get('status')))})"


def _strip_section(data: RunData, fw: FigureWriter, groups: list, agreement: dict) -> Section:
    title = "Scores by expert label"
    if data.scores is None:
        why = _no_scores_reason(data)
        return Section("scores", title, page.missing(why + "."), why)
    parts = [
        page.note(
            "Each point is one real prediction. Scores are min-max normalised per setting over all languages "
            "(the raw range is under each row name); dashed lines are the KDE classifier's class boundaries "
            "and the background tint is the label of each region."
        )
    ]
    missing = None
    reason = _labels_reason(data)
    if reason:
        missing = "points are not coloured by label: " + reason
        parts.append(page.missing(missing + "."))
    for (metric, scorer), keys in groups[:MAX_FIGURE_GROUPS]:
        rows = [strip_row(data.scores, k, agreement, data.max_strip_points) for k in keys]
        shown, total = sum(r.shown for r in rows), sum(r.total for r in rows)
        sub = f" Showing a random {shown:,} of {total:,} points (report.max_strip_points)." if shown < total else ""
        name = keys[0].label(with_context=False)
        parts.append(
            fw.draw(
                f"strip-{metric}-{short_scorer(scorer)}",
                f"strip plot {name}",
                f"<strong>{esc(name)}</strong>: normalised scores per language and context.{sub}",
                lambda path, rows=rows, name=name: figures.strip_figure(path, name, rows),
            )
        )
    if len(groups) > MAX_FIGURE_GROUPS:
        parts.append(page.note(f"{len(groups) - MAX_FIGURE_GROUPS} more metric/scorer pairs are not drawn (limit {MAX_FIGURE_GROUPS}); the tables below list all of them."))
    return Section("scores", title, "\n".join(parts), missing)


def _noise_section(data: RunData, fw: FigureWriter, groups: list) -> Section:
    title = "Real vs noise"
    if data.scores is None:
        why = _no_scores_reason(data)
        return Section("noise", title, page.missing(why + "."), why)
    if not data.scores.has_noise():
        why = (
            "the run's stages do not include <code>noise</code>"
            if "noise" not in data.stages
            else "the run has no score rows for noise predictions"
        )
        text = f"real vs noise distributions need noise scores: {why}."
        return Section("noise", title, page.missing(text), text)
    parts = [page.note("Score distributions of the real predictions and of the two synthetic noise predictions (same token length as the reference): uniform tokens from the vocabulary, and tokens drawn from the file's context. A metric that separates them is robust.")]
    for (metric, scorer), keys in groups[:MAX_FIGURE_GROUPS]:
        rows = [(k, noise_values(data.scores, k)) for k in keys]
        name = keys[0].label(with_context=False)
        parts.append(
            fw.draw(
                f"noise-{metric}-{short_scorer(scorer)}",
                f"noise distributions {name}",
                f"<strong>{esc(name)}</strong>: real vs uniform vs targeted noise, per language and context.",
                lambda path, rows=rows, name=name: figures.noise_figure(path, name, rows, data.scores.languages),
            )
        )
    return Section("noise", title, "\n".join(parts))


def _agreement_section(data: RunData, fw: FigureWriter, head_keys: set) -> tuple[Section, Section, Section]:
    titles = ("Agreement with experts (kappa)", "Effect of context on kappa", "Confusion matrices")
    reason = _labels_reason(data) or (data.notes.get("calibration") if data.calibration is None else None)
    rows = data.calibration_rows("agreement")
    if reason is None and not rows:
        reason = "calibration.parquet has no agreement rows"
    if reason:
        return tuple(Section(a, t, page.missing(reason + "."), reason) for a, t in zip(("agreement", "context", "confusion"), titles))  # type: ignore[return-value]
    languages = calibration_languages(rows)
    keys = calibration_keys(rows)
    shown_keys = [k for k in keys if k in head_keys] or keys
    parts = [page.note("Quadratically weighted Cohen's kappa between the expert labels and the KDE threshold classifier, per language; n/f = not fitted (hover for the reason). Small numbers are the bootstrap confidence interval.")]
    parts.append(_kappa_heatmap(fw, rows, shown_keys, languages))
    parts.append("<h3>Kappa table</h3>" + page.split_tables(rows, head_keys, "kappa", "values", "Other variants"))
    agreement = Section("agreement", titles[0], "\n".join(parts))

    base, deltas = kappa_deltas(rows, shown_keys, languages)
    if deltas:
        labels = [k.label(with_context=False) for k in base]
        panels = [(f"{c} − none", d) for c, d in deltas.items()]
        body = fw.draw(
            "kappa-delta",
            "change in kappa from context none",
            "Change in kappa when the neural metrics see context: <code>minimal</code> (the whole comment) and <code>full</code> (the whole file) against <code>none</code> (the scored spans only). Purple: context helps.",
            lambda path: figures.heatmap_figure(
                path, "Δ kappa against context none", labels, languages, panels, "Δ kappa", diverging=True,
                nan_text=[np.full(d.shape, "–", dtype=object) for _, d in panels],
            ),
        )
        context = Section("context", titles[1], body)
    else:
        text = "the change in kappa needs the same metric scored with context <code>none</code> and <code>minimal</code> or <code>full</code>; this run has no such pair (lexical metrics have no context)"
        context = Section("context", titles[1], page.missing(text + "."), text)

    best = best_per_language(rows, shown_keys, languages)
    if best:
        intro = page.note(
            "Expert label (rows) against the KDE classifier (columns). Row-normalised cells are the recall of each "
            "expert class, column-normalised cells the precision of each predicted class; counts in brackets. "
            "First the setting with the highest kappa in each language, then every setting."
        )
        cards = "".join(page.confusion_card(row, f"{language_name(lang)}", page.key_of(row).label()) for lang, row in best)
        body = intro + f"<h3>Best setting per language</h3><div class=cmgrid>{cards}</div>" + page.confusion_details(rows, shown_keys, languages)
        confusion = Section("confusion", titles[2], body)
    else:
        text = "no agreement row is fitted, so there is no confusion matrix"
        confusion = Section("confusion", titles[2], page.missing(text + "."), text)
    return agreement, context, confusion


def _kappa_heatmap(fw: FigureWriter, rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str]) -> str:
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
        states.append(cell_states(rows, panel_keys, languages))
    caption = "Kappa per scorer and language for each context setting (<code>none</code>: the scored spans only; <code>minimal</code>: the whole comment; <code>full</code>: the whole file). Lexical metrics do not see context and repeat in every panel. n/f: not fitted."
    return fw.draw(
        "kappa-heatmap",
        "kappa heatmap per context setting",
        caption,
        lambda path: figures.heatmap_figure(path, "Quadratic kappa", labels, languages, panels, "kappa", vmin=0.0, vmax=1.0, nan_text=states),
    )


def _nanmean(values: Any) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else -math.inf


def _noise_f1_section(data: RunData, fw: FigureWriter, head_keys: set) -> Section:
    title = "Noise robustness (F1)"
    rows = [r for task in NOISE_TASKS for r in data.calibration_rows(task)]
    if not rows:
        if data.calibration is None:
            why = data.notes.get("calibration", "there is no calibration.parquet")
        elif data.scores is None or not data.scores.has_noise():
            why = "noise F1 needs noise scores: " + ("the run's stages do not include <code>noise</code>" if "noise" not in data.stages else "the run has no noise score rows")
        else:
            why = "calibration.parquet has no noise rows"
        return Section("noise-f1", title, page.missing(why + "."), why)
    languages = calibration_languages(rows)
    keys = [k for k in calibration_keys(rows) if k in head_keys] or calibration_keys(rows)
    keys = keys[:MAX_HEATMAP_ROWS]
    labels = [k.label() for k in keys]
    by_task = {task: [r for r in rows if r["task"] == task] for task in NOISE_TASKS}
    panels = [(task.replace("noise-", "") + " noise", matrix(by_task[task], keys, languages, "f1")) for task in NOISE_TASKS]
    states = [cell_states(by_task[task], keys, languages) for task in NOISE_TASKS]
    parts = [
        page.note("Macro F1 of a two-class KDE classifier separating real predictions from noise predictions: 1 means the metric always tells them apart, 0.5 is chance."),
        fw.draw("noise-f1", "noise F1 per scorer", "Noise F1 per setting and language.", lambda path: figures.heatmap_figure(path, "Noise F1 (real vs noise)", labels, languages, panels, "macro F1", vmin=0.5, vmax=1.0, nan_text=states)),
    ]
    for task in NOISE_TASKS:
        task_rows = [r for r in rows if r["task"] == task]
        if task_rows:
            parts.append(f"<h3>{esc(task)}</h3>" + page.split_tables(task_rows, head_keys, "f1", "values", "Other variants"))
    return Section("noise-f1", title, "\n".join(parts))


def _experts_section(data: RunData, fw: FigureWriter) -> Section:
    title = "Expert accuracy and error codes"
    reason = _labels_reason(data)
    if reason:
        text = "the expert accuracy table and error-code counts need expert labels: none of the samples has a label"
        return Section("experts", title, page.missing(text + "."), text)
    table = expert_accuracy(data.samples)
    head = "".join(f'<th title="{esc(g)}">{esc(g.rsplit("/", 1)[-1])}</th>' for g in table.generators)
    body = []
    for language in table.languages:
        cells = []
        for g in table.generators:
            n = table.n(language, g)
            share = table.share(language, g)
            cls = ' class="total"' if g == ALL_GENERATORS else ""
            cells.append(
                f'<td{cls} data-language="{esc(language)}" data-generator="{esc(g)}" data-correct="{share!r}" data-n="{n}" '
                f'style="{kappa_style(share / 100 if math.isfinite(share) else math.nan)}">'
                + (f"{share:.1f}<small>n = {n}</small>" if n else "–") + "</td>"
            )
        body.append(f"<tr><th scope=row>{esc(language_name(language))}</th>{''.join(cells)}</tr>")
    parts = [
        "<h3>Correct share (%) per language and generator</h3>",
        f'<div class="scroll"><table class="values"><thead><tr><th>language</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>',
        fw.draw("expert-accuracy", "expert labels per language and generator", "Share of correct, partially correct and incorrect predictions per generator, as judged by the experts.", lambda path: figures.accuracy_figure(path, "Expert labels", table)),
    ]
    codes = error_code_counts(data.samples)
    if codes.codes:
        head = "".join(f"<th>{esc(language_name(lang))}</th>" for lang in codes.languages)
        body = []
        for code in codes.codes:
            cells = "".join(f'<td data-code="{esc(code)}" data-language="{esc(lang)}">{codes.counts.get((code, lang), 0)}</td>' for lang in codes.languages)
            body.append(f'<tr><th scope=row><code>{esc(code)}</code></th><td class="lbl desc">{esc(describe_error_code(code))}</td>{cells}<td class="total">{codes.total(code)}</td></tr>')
        labelled = "".join(f"<td>{codes.labelled.get(lang, 0)}</td>" for lang in codes.languages)
        parts.append(
            "<h3>Error codes (occurrences per language)</h3>"
            f'<div class="scroll"><table class="values counts"><thead><tr><th>code</th><th>meaning</th>{head}<th>total</th></tr></thead>'
            f'<tbody>{"".join(body)}</tbody><tfoot><tr><th>labelled samples</th><td class=lbl></td>{labelled}<td class="total">{sum(codes.labelled.values())}</td></tr></tfoot></table></div>'
        )
    else:
        parts.append(page.missing("error-code counts: no sample has error codes (column <code>error_codes</code>)."))
    return Section("experts", title, "\n".join(parts))


def _provenance_section(data: RunData) -> Section:
    m = data.manifest
    parts = ["<h3>Versions</h3>", page.kv_table(sorted((m.get("versions") or {}).items()))]
    # manifest signatures: scorer task -> {metric/language or context -> signature}
    signatures = {
        f"{task} {key}": sig
        for task, by_key in (m.get("signatures") or {}).items()
        for key, sig in (by_key.items() if isinstance(by_key, dict) else [("", by_key)])
    }
    if signatures:
        rows = "".join(f"<tr><th>{esc(k)}</th><td><code class=sig>{esc(v)}</code></td></tr>" for k, v in sorted(signatures.items()))
        parts += ["<h3>Metric signatures (manifest)</h3>", f'<div class="scroll"><table class="kv"><tbody>{rows}</tbody></table></div>']
    if data.score_signatures:
        rows = "".join(
            f"<tr><th>{esc(metric)}</th><td class=sc title='{esc(scorer)}'>{esc(short_scorer(scorer)) or '—'}</td><td>{esc(context) or '—'}</td>"
            f"<td><code class=sig>{esc(signature)}</code></td></tr>"
            for metric, scorer, context, signature in data.score_signatures
        )
        parts += [
            "<h3>Signatures in the score rows</h3>",
            f'<div class="scroll"><table class="kv"><thead><tr><th>metric</th><th>scorer</th><th>context</th><th>signature</th></tr></thead><tbody>{rows}</tbody></table></div>',
        ]
    if not signatures and not data.score_signatures:
        parts.append(page.missing("metric signatures: the run has no score rows and its manifest records none."))
    stages = m.get("stages") or {}
    if stages:
        parts += ["<h3>Stages</h3>", page.kv_table([(k, ", ".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else v) for k, v in stages.items()])]
    if m.get("failed_parts"):
        parts += ["<h3>Failed parts</h3>", page.kv_table([(k, v.get("error", v)) for k, v in sorted(m["failed_parts"].items())])]
    rejected = (m.get("counts") or {}).get("rejected_by_reason") or {}
    if rejected:
        parts += ["<h3>Rejected input rows</h3>", page.kv_table(sorted(rejected.items(), key=lambda kv: -kv[1]))]
    parts += ["<h3>Resolved config</h3>", f"<pre>{esc(json.dumps(m.get('config', {}), indent=2, ensure_ascii=False))}</pre>"]
    return Section("run", "Run: config, signatures, versions", "\n".join(parts))


# ----- page -------------------------------------------------------------------------------------
def _header(data: RunData) -> tuple[str, str]:
    m = data.manifest
    config = m.get("config", {})
    counts = m.get("counts") or {}
    scores = data.scores
    languages = order_languages(set(data.samples["language"].to_pylist())) if data.samples.num_rows else []
    generators = sorted({g for g in data.samples["generator"].to_pylist() if g}) if data.samples.num_rows else []
    stats = [
        ("samples", f"{data.samples.num_rows:,}"),
        ("labelled", f"{data.n_labelled:,}"),
        ("languages", ", ".join(languages) or "–"),
        ("generators", str(len(generators))),
        ("score rows", f"{scores.n_rows:,}" if scores else "0"),
        ("settings", str(len(scores.groups)) if scores else "0"),
        ("error rows", f"{scores.n_errors:,}" if scores else "0"),
        ("rejected rows", f"{counts.get('rejected_rows', data.rejected_rows):,}"),
    ]
    chips = "".join(f'<div class="stat"><span>{esc(k)}</span><b>{esc(v)}</b></div>' for k, v in stats)
    status = display_status(m)
    meta = (
        f'<span class="badge {esc(status)}">{esc(status)}</span> <span>config <code>{esc(str(m.get("config_hash", ""))[:12])}</code></span>'
        f' <span>created {esc(str(m.get("created", "?")))}</span> <span>stages {esc(" → ".join(config.get("stages", [])))}</span>'
    )
    return meta, chips


def render_page(data: RunData, sections: list[Section], elapsed_note: str) -> str:
    meta, chips = _header(data)
    toc = "".join(
        f'<li><a href="#{s.anchor}">{esc(s.title)}</a>{" <em>(incomplete)</em>" if s.missing else ""}</li>' for s in sections
    )
    missing = [s for s in sections if s.missing]
    notice = ""
    if missing:
        items = "".join(f"<li><a href='#{s.anchor}'>{esc(s.title)}</a>: {s.missing}</li>" for s in missing)
        notice = f'<aside class="notice" id="missing"><h2>Missing from this report</h2><ul>{items}</ul></aside>'
    body = "".join(f'<section id="{s.anchor}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections)
    name = str(data.manifest.get("config", {}).get("name", data.root.name))
    return Template(PAGE).substitute(
        title=esc(f"babelscore report — {name}"),
        name=esc(name),
        path=esc(str(data.root.resolve())),
        meta=meta,
        chips=chips,
        toc=toc,
        notice=notice,
        body=body,
        footer=esc(elapsed_note),
    )


def _build(data: RunData, folder: Path) -> list[Section]:
    fw = FigureWriter(folder, data.image_format)
    agreement_rows = data.calibration_rows("agreement")
    # settings present in the scores or only in calibration.parquet (scores of another run layout)
    keys = (data.scores.keys() if data.scores else []) + calibration_keys([r for t in ("agreement", *NOISE_TASKS) for r in data.calibration_rows(t)])
    head_keys = set(headline_keys(keys, headline_variants(keys, agreement_rows)))
    groups = figure_groups(sorted(k for k in head_keys if data.scores and k in data.scores.groups))
    sections = [_strip_section(data, fw, groups, by_key(agreement_rows)), _noise_section(data, fw, groups)]
    sections += list(_agreement_section(data, fw, head_keys))
    sections += [_noise_f1_section(data, fw, head_keys), _experts_section(data, fw)]
    sections += perturbation_sections(data, fw, Section)
    sections += _stage_sections(data)
    sections.append(_provenance_section(data))
    if fw.failures:
        sections.append(Section("failures", "Figures that failed", "<ul>" + "".join(f"<li>{esc(f)}</li>" for f in fw.failures) + "</ul>", f"{len(fw.failures)} figure(s) failed to draw"))
    return sections


def _stage_sections(data: RunData) -> list[Section]:
    """The sections of the run's part stages that report on their own outputs (judge, ...)."""
    from engine.stages.registry import part_stages_of

    stages = tuple(data.manifest.get("config", {}).get("stages", []))
    out = []
    for stage in part_stages_of(stages):
        section = stage.report_section(data.root)
        if section is not None:
            out.append(Section(*section))
    return out


def _remove_leftovers(root: Path) -> None:
    for path in root.iterdir():
        if path.is_dir() and path.name.startswith((TMP_PREFIX, OLD_PREFIX)):
            shutil.rmtree(path, ignore_errors=True)


def write_report(run_dir: str) -> str:
    """Write RUN/report/index.html (figures beside it); returns the path of index.html."""
    start = time.perf_counter()
    root = Path(run_dir)
    data = load_run(root)
    _remove_leftovers(root)
    temp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))
    try:
        os.chmod(temp, 0o755)
        sections = _build(data, temp)
        footer = f"generated {time.strftime('%Y-%m-%d %H:%M:%S')} in {time.perf_counter() - start:.1f} s by babelscore report; reads only {root.resolve()}"
        (temp / "index.html").write_text(render_page(data, sections, footer), encoding="utf-8")
        final = root / REPORT_DIR
        if final.exists():
            old = root / f"{OLD_PREFIX}{uuid.uuid4().hex[:8]}"
            os.replace(final, old)
            os.replace(temp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(temp, final)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    logger.info("report written to %s in %.1f s", final / "index.html", time.perf_counter() - start)
    return str(final / "index.html")
