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
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from string import Template
from typing import Callable

from engine.io.rundir import RunDirectory
from engine.report import page
from engine.report.answer import answer_block
from engine.report.load import RunData, load_run
from engine.report.page import PAGE
from engine.report.score_settings import short_scorer
from engine.report.section_api import FigureWriter, ReportContext, Section
from engine.report.sections import NOISE_TASKS, STUDY_SECTIONS
from engine.report.sweep import report_settings, representative_layers
from engine.report.sweep_sections import sweep_sections
from engine.report.tables import by_key, calibration_keys, display_status, figure_groups, headline_keys, headline_variants

logger = logging.getLogger(__name__)

REPORT_DIR = "report"
TMP_PREFIX = ".report-tmp-"
OLD_PREFIX = ".report-old-"
esc = html.escape


def provenance_section(ctx: ReportContext) -> Section:
    data = ctx.data
    m = data.manifest
    parts = ["<h3>Versions</h3>", page.kv_table(sorted(m.versions.items()))]
    # manifest signatures: scorer task -> {metric/language or context -> signature}
    signatures = {
        f"{task} {key}": sig
        for task, by_key in m.signatures.items()
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
    stages = m.stage_records
    if stages:
        parts += ["<h3>Stages</h3>", page.kv_table([(k, ", ".join(f"{a}={b}" for a, b in v.items()) if isinstance(v, dict) else v) for k, v in stages.items()])]
    if m.failed_parts:
        parts += ["<h3>Failed parts</h3>", page.kv_table([(k, v.get("error", v)) for k, v in sorted(m.failed_parts.items())])]
    rejected = m.counts.get("rejected_by_reason") or {}
    if rejected:
        parts += ["<h3>Rejected input rows</h3>", page.kv_table(sorted(rejected.items(), key=lambda kv: -kv[1]))]
    parts += ["<h3>Resolved config</h3>", f"<pre>{esc(json.dumps(m.config, indent=2, ensure_ascii=False))}</pre>"]
    return Section("run", "Run: config, signatures, versions", "\n".join(parts))


# ----- page -------------------------------------------------------------------------------------
def _score_rows(data: RunData) -> int:
    """Every score row of the run (the number the console prints), perturbation rows included."""
    scores = data.scores
    counted = data.manifest.counts.get("score_rows")
    return int(counted) if counted is not None else (scores.n_rows + scores.n_perturbed if scores else 0)


def _counted_note(data: RunData) -> str:
    """What the header's counts count: the score views read real predictions and noise only."""
    scores = data.scores
    total = _score_rows(data)
    real = scores.n_rows if scores else 0
    perturbed = scores.n_perturbed if scores else 0
    text = (f"A score row is one value: one sample × noise kind (or perturbation) × metric × scorer × context × variant. "
            f"Of the {total:,} score rows, {real:,} score the real predictions and their noise (the sections from Fig. 2 on "
            f"read these)")
    if perturbed:
        text += f" and {perturbed:,} score perturbed texts (the perturbation sections read these)"
    other = total - real - perturbed
    if other > 0:  # parts counted by the run but unreadable now (e.g. removed files)
        text += f"; {other:,} counted by the run are not in its score files"
    return esc(text + f". Settings: distinct (metric, scorer, context, variant); error rows: score rows with an error, among the {real:,}.")


def _header(data: RunData) -> tuple[str, str]:
    m = data.manifest
    config = m.config
    counts = m.counts
    scores = data.scores
    languages = data.stats.languages
    generators = data.stats.generators
    stats = [
        ("samples", f"{data.stats.n_samples:,}"),
        ("labelled", f"{data.n_labelled:,}"),
        ("languages", ", ".join(languages) or "–"),
        ("generators", str(len(generators))),
        ("score rows", f"{_score_rows(data):,}"),
        ("settings", str(len(scores.groups)) if scores else "0"),
        ("error rows", f"{scores.n_errors:,}" if scores else "0"),
        ("rejected rows", f"{counts.get('rejected_rows', data.rejected_rows):,}"),
    ]
    chips = "".join(f'<div class="stat"><span>{esc(k)}</span><b>{esc(v)}</b></div>' for k, v in stats)
    status = display_status(m, data.layout)
    meta = (
        f'<span class="badge {esc(status)}">{esc(status)}</span> <span>config <code>{esc(str(m.config_hash or ""))[:12]}</code></span>'
        f' <span>created {esc(str(m.created or "?"))}</span> <span>stages {esc(" → ".join(config.get("stages", [])))}</span>'
    )
    return meta, chips


def _data_loss_notice(loss: dict) -> str:
    """A run that rejected input rows says so at the top of its report, as its console did at its end."""
    rejected = int(loss.get("rejected_rows") or 0)
    if not rejected:
        return ""
    share = float(loss.get("share") or 0.0)
    verdict = ("within the run's limit" if loss.get("within_limit")
               else "more than the run's limit allowed: the run exited with status 8")
    return (f'<aside class="notice" id="data-loss"><h2>Data loss</h2><p>{rejected:,} of {int(loss.get("input_rows") or 0):,} '
            f'input rows ({100 * share:.1f}%) were rejected and are in no result below; {esc(verdict)} '
            f'(max_rejected {esc(str(loss.get("max_rejected", "0")))}). Reasons: <code>{esc(str(loss.get("reasons", "rejected.parquet")))}</code>.</p></aside>')


def render_page(data: RunData, sections: list[Section], elapsed_note: str, answer: str = "") -> str:
    meta, chips = _header(data)
    toc = "".join(
        f'<li><a href="#{s.anchor}">{esc(s.title)}</a>{" <em>(incomplete)</em>" if s.missing else ""}</li>' for s in sections
    )
    missing = [s for s in sections if s.missing]
    notice = _data_loss_notice(data.manifest.data_loss)
    if missing:
        items = "".join(f"<li><a href='#{s.anchor}'>{esc(s.title)}</a>: {s.missing}</li>" for s in missing)
        notice += f'<aside class="notice" id="missing"><h2>Missing from this report</h2><ul>{items}</ul></aside>'
    body = "".join(f'<section id="{s.anchor}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections)
    name = str(data.manifest.config.get("name", data.root.name))
    return Template(PAGE).substitute(
        title=esc(f"babelscore report — {name}"),
        name=esc(name),
        path=esc(str(data.root.resolve())),
        meta=meta,
        chips=chips,
        counted=_counted_note(data),
        answer=answer,
        toc=toc,
        notice=notice,
        body=body,
        footer=esc(elapsed_note),
    )


# The page, in order: one function per section (or group of sections), each taking the
# ReportContext. A new section is a function and an entry here.
def stage_sections(ctx: ReportContext) -> list[Section]:
    """The sections of the run's stages that report on their own outputs (`ReportSection.report_section`:
    perturbation sensitivity, judges, round trip, ...), in run order."""
    out: list[Section] = []
    hooks = ctx.data.plan.report_sections() if ctx.data.plan is not None else ()
    for report_section in hooks:
        made = report_section(ctx)
        for section in made if isinstance(made, list) else [made] if made is not None else []:
            out.append(section if isinstance(section, Section) else Section(*section))
    return out


SECTION_BUILDERS: list[Callable[[ReportContext], Section | list[Section]]] = [
    *STUDY_SECTIONS, sweep_sections, stage_sections, provenance_section,
]


def report_context(data: RunData, folder: Path) -> ReportContext:
    agreement_rows = data.calibration_rows("agreement")
    # settings present in the scores or only in calibration.parquet (scores of another run layout)
    calibrated = [r for t in ("agreement", *NOISE_TASKS) for per_gen in (False, True) for r in data.calibration_rows(t, per_gen)]
    keys = (data.scores.keys() if data.scores else []) + calibration_keys(calibrated)
    defaults = representative_layers(report_settings(data.manifest, data.plan))
    head_keys = set(headline_keys(keys, headline_variants(keys, defaults)))
    groups = figure_groups(sorted(k for k in head_keys if data.scores and k in data.scores.groups))
    return ReportContext(data, FigureWriter(folder, data.image_format), head_keys, groups, by_key(agreement_rows))


def _build(data: RunData, folder: Path) -> tuple[list[Section], str]:
    ctx = report_context(data, folder)
    answer = answer_block(ctx)
    sections: list[Section] = []
    for builder in SECTION_BUILDERS:
        made = builder(ctx)
        sections.extend(made if isinstance(made, list) else [made])
    if ctx.fw.failures:
        failures = ctx.fw.failures
        sections.append(Section("failures", "Figures that failed", "<ul>" + "".join(f"<li>{esc(f)}</li>" for f in failures) + "</ul>",
                                f"{len(failures)} figure(s) failed to draw"))
    return sections, answer


def _remove_leftovers(root: Path) -> None:
    for path in root.iterdir():
        if path.is_dir() and path.name.startswith((TMP_PREFIX, OLD_PREFIX)):
            shutil.rmtree(path, ignore_errors=True)


def write_report(run: RunDirectory) -> str:
    """Write RUN/report/index.html (figures beside it); returns the path of index.html.

    run: the run directory opened with its plan (engine.stages.plan.reopen_run); opened with a
    layout only, the page has no stage's own section."""
    start = time.perf_counter()
    root = run.root
    data = load_run(run)
    _remove_leftovers(root)
    temp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))
    try:
        os.chmod(temp, 0o755)
        sections, answer = _build(data, temp)
        footer = f"generated {time.strftime('%Y-%m-%d %H:%M:%S')} in {time.perf_counter() - start:.1f} s by babelscore report; reads only {root.resolve()}"
        (temp / "index.html").write_text(render_page(data, sections, footer, answer), encoding="utf-8")
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
