"""The report page: its template and style (one HTML file, inline CSS, no network) and the
HTML fragments sections are made of (tables with machine-checkable cells, notes).

The inline script runs after load and marks images that failed (`data-broken` on the <img>,
`data-images-ok` on <body>), so a headless browser can check the page from its DOM.
"""
from __future__ import annotations

import html
import math
from typing import Any

from engine.calibrate import reasons
from engine.report.score_settings import ConfigKey, language_name, short_scorer
from engine.report.tables import by_key, calibration_keys, calibration_languages

esc = html.escape


def kappa_style(value: float) -> str:
    """Inline cell style: a blue tint growing with a value in [0, 1]; negative values vermillion."""
    if value is None or not math.isfinite(value):
        return ""
    if value < 0:
        alpha = min(1.0, -value) * 0.45 + 0.08
        return f"background:rgba(213,94,0,{alpha:.2f})"
    # Dark text on every tint (at most 45% blue): white text on the mid-blue failed contrast.
    alpha = min(1.0, value) * 0.42 + 0.03
    return f"background:rgba(0,114,178,{alpha:.2f});color:#10161d"


# ----- HTML fragments ---------------------------------------------------------------------------
def missing(text: str) -> str:
    return f'<p class="missing"><strong>Not shown:</strong> {text}</p>'


def note(text: str) -> str:
    return f'<p class="note">{text}</p>'


def cell(row: dict[str, Any] | None, field: str, key: ConfigKey, language: str, marks: dict[str, int] | None = None) -> str:
    if row is None:
        return '<td class="na">–</td>'
    attrs = (
        f'data-metric="{esc(key.metric)}" data-scorer="{esc(key.scorer)}" data-variant="{esc(key.variant)}" '
        f'data-context="{esc(key.context)}" data-language="{esc(language)}" data-task="{esc(row["task"])}" '
        f'data-n="{row["n"]}"'
    )
    if row.get("generator") is not None:  # a row fitted for one target LLM
        attrs += f' data-generator="{esc(row["generator"])}"'

    if not row["fitted"]:
        reason = row["reason"] or reasons.UNKNOWN
        mark = f"<sup>{marks[reason]}</sup>" if marks and reason in marks else ""
        return f'<td class="nf" {attrs} data-fitted="false" data-{field}="" title="{esc(reason)}">n/f{mark}</td>'
    value = row[field]
    if value is None:  # fitted but undefined (e.g. kappa with one predicted class): null in the parquet
        return f'<td {attrs} data-fitted="true" data-{field}="" title="{field} undefined, n = {row["n"]}">–</td>'
    value = float(value)
    lo, hi = row.get(f"{field}_lo"), row.get(f"{field}_hi")
    ci = f"<small>{lo:.2f} – {hi:.2f}</small>" if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi) else ""
    shown = f"{value:.3f}" if math.isfinite(value) else "nan"
    return (
        f'<td {attrs} data-fitted="true" data-{field}="{value!r}" style="{kappa_style(value)}" '
        f'title="n = {row["n"]}">{shown}{ci}</td>'
    )


def reason_list(grouped: list[reasons.Reason]) -> str:
    """The n/f reasons as text under a table (a hover title does not survive a screenshot or a PDF)."""
    if not grouped:
        return ""
    items = "".join(
        f'<li value="{r.number}">{esc(r.text)} <span class=muted>({r.cells} cell{"s" if r.cells != 1 else ""}'
        f'{": " + ", ".join(esc(language_name(x)) for x in r.languages) if r.languages else ""})</span></li>'
        for r in grouped)
    return f'<div class="nfreasons"><b>n/f</b> (not fitted), by reason:<ol>{items}</ol></div>'


def value_table(rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str], field: str, css: str) -> str:
    lookup = by_key(rows)
    shown = set(keys)
    grouped = reasons.grouped_reasons(r for r in rows if key_of(r) in shown and r["language"] in languages)
    marks = reasons.numbers(grouped)
    head = "".join(f"<th>{esc(language_name(lang))}</th>" for lang in languages)
    body = []
    for key in keys:
        cells = "".join(cell(lookup.get((*key, lang)), field, key, lang, marks) for lang in languages)
        body.append(
            f"<tr><th scope=row>{esc(key.metric)}</th><td class=\"lbl sc\" title=\"{esc(key.scorer)}\">{esc(short_scorer(key.scorer)) or '—'}</td>"
            f"<td class=lbl>{esc(key.context) or '—'}</td><td class=lbl>{esc(key.variant)}</td>{cells}</tr>"
        )
    return (
        f'<div class="scroll"><table class="{css}"><thead><tr><th>metric</th><th>scorer</th><th>context</th>'
        f'<th>variant</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>' + reason_list(grouped)
    )


def split_tables(rows: list[dict[str, Any]], head_keys: set, field: str, css: str, other_label: str) -> str:
    keys = calibration_keys(rows)
    languages = calibration_languages(rows)
    main = [k for k in keys if k in head_keys] or keys
    rest = [k for k in keys if k not in main]
    out = value_table(rows, main, languages, field, css)
    if rest:
        out += f"<details><summary>{esc(other_label)} ({len(rest)} settings)</summary>{value_table(rows, rest, languages, field, css)}</details>"
    return out


def key_of(row: dict[str, Any]) -> ConfigKey:
    return ConfigKey(row["metric"], row["scorer"], row["context"], row["variant"])


def matrix_html(classes: list[str], values: list[list[float]], counts: list[list[int]], kind: str) -> str:
    head = "".join(f"<th>{esc(c)}</th>" for c in classes)
    body = "".join(
        f"<tr><th>{esc(c)}</th>"
        + "".join(
            f'<td style="{kappa_style(v)}">{v:.2f}<small>({n})</small></td>' if v is not None and math.isfinite(v) else f"<td>–<small>({n})</small></td>"
            for v, n in zip(row, count_row)
        )
        + "</tr>"
        for c, row, count_row in zip(classes, values, counts)
    )
    return f'<table class="cm" data-norm="{kind}"><thead><tr><th class=corner>expert \\ KDE</th>{head}</tr></thead><tbody>{body}</tbody></table>'


def confusion_card(row: dict[str, Any], heading: str, sub: str) -> str:
    classes, counts = list(row["classes"]), row["confusion"]
    return (
        f'<div class="cmpair"><h4>{esc(heading)}</h4><p class=sub>{esc(sub)} · κ {row["kappa"]:.3f} · n = {row["n"]}</p>'
        f'<div class=cms><div class=cmbox><p>row-normalised (recall)</p>{matrix_html(classes, row["confusion_row_norm"], counts, "row")}</div>'
        f'<div class=cmbox><p>column-normalised (precision)</p>{matrix_html(classes, row["confusion_col_norm"], counts, "column")}</div></div></div>'
    )


def confusion_details(rows: list[dict[str, Any]], keys: list[ConfigKey], languages: list[str]) -> str:
    lookup = by_key(rows)
    blocks = []
    for key in keys:
        cards = [
            confusion_card(row, language_name(language), key.label())
            for language in languages
            if (row := lookup.get((*key, language))) is not None and row["fitted"] and row["confusion_row_norm"] is not None
        ]
        if cards:
            blocks.append(f"<details><summary>{esc(key.label())}</summary><div class=cmgrid>{''.join(cards)}</div></details>")
    return "<h3>Every setting</h3>" + "".join(blocks) if blocks else ""


def kv_table(items: list[tuple[str, Any]], css: str = "kv") -> str:
    rows = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in items)
    return f'<table class="{css}"><tbody>{rows}</tbody></table>'



PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>
:root { --fg:#1d232b; --muted:#5d6875; --line:#e3e7ec; --bg:#f6f7f9; --card:#fff; --accent:#0072B2; --warn:#D55E00; }
* { box-sizing: border-box; }
html { scroll-behavior: smooth; }
body { margin:0; font:15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Helvetica Neue", Arial, sans-serif;
       color:var(--fg); background:var(--bg); }
header.top { background:linear-gradient(120deg,#0b3c5d,#0072B2); color:#fff; padding:28px 32px 22px; }
header.top h1 { margin:0 0 4px; font-size:26px; font-weight:650; letter-spacing:-.01em; }
header.top .path { opacity:.8; font-size:13px; word-break:break-all; }
header.top .meta { margin-top:10px; display:flex; flex-wrap:wrap; gap:8px 16px; font-size:13px; align-items:center; }
header.top code { background:rgba(255,255,255,.15); padding:1px 6px; border-radius:4px; }
.badge { padding:2px 10px; border-radius:999px; font-weight:600; font-size:12px; text-transform:uppercase; letter-spacing:.04em;
         background:#fff; color:#0b3c5d; }
.badge.failed { background:#D55E00; color:#fff; } .badge.running { background:#E69F00; color:#1d232b; }
.stats { display:grid; grid-template-columns:repeat(auto-fit,minmax(120px,1fr)); gap:10px; margin-top:18px; }
.stat { background:rgba(255,255,255,.12); border-radius:8px; padding:8px 12px; }
.stat span { display:block; font-size:11px; text-transform:uppercase; letter-spacing:.05em; opacity:.8; }
.stat b { font-size:18px; font-weight:600; word-break:break-word; }
header.top p.counted { margin:10px 0 0; font-size:12.5px; opacity:.85; max-width:1100px; }
/* The answer block: right under the header, one card per language, cards wrap at any width. */
aside.answer { max-width:1680px; margin:18px auto 0; padding:16px 32px 4px; }
aside.answer h2 { font-size:19px; margin:0 0 6px; }
aside.answer p.note { margin:0 0 8px; font-size:13px; }
.answers { display:flex; flex-wrap:wrap; gap:12px; margin-bottom:12px; }
.ans { flex:1 1 300px; min-width:0; background:var(--card); border:1px solid var(--line); border-left:4px solid var(--accent);
       border-radius:8px; padding:8px 12px; }
.ans h3 { margin:0 0 4px; font-size:15px; } .ans p { margin:3px 0; font-size:13.5px; overflow-wrap:anywhere; }
.ans .k { display:inline-block; min-width:5.5em; color:var(--muted); font-size:11px; text-transform:uppercase; letter-spacing:.04em; }
.ans p.tie { color:#7a3300; }
.layout { display:grid; grid-template-columns:230px minmax(0,1fr); gap:28px; max-width:1680px; margin:0 auto; padding:24px 32px 48px; }
nav.toc { position:sticky; top:16px; align-self:start; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 16px; }
nav.toc h2 { font-size:12px; text-transform:uppercase; letter-spacing:.06em; color:var(--muted); margin:0 0 8px; }
nav.toc ol { margin:0; padding-left:18px; } nav.toc li { margin:4px 0; font-size:14px; }
nav.toc em { color:var(--warn); font-style:normal; font-size:12px; }
a { color:var(--accent); text-decoration:none; } a:hover { text-decoration:underline; }
main { min-width:0; }
section, aside.notice { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:18px 22px; margin-bottom:22px; }
aside.notice { border-left:5px solid var(--warn); }
aside.notice h2 { color:var(--warn); }
h2 { margin:0 0 12px; font-size:20px; font-weight:650; } h3 { margin:22px 0 8px; font-size:16px; font-weight:620; }
h4 { margin:0 0 4px; font-size:14px; } h4 small { color:var(--muted); font-weight:400; }
p.note { color:var(--muted); margin:0 0 12px; font-size:14px; }
p.missing { background:#fff4ec; border:1px solid #f3c7a8; color:#7a3300; padding:8px 12px; border-radius:6px; font-size:14px; }
figure { margin:14px 0 22px; } figure img { display:block; max-width:100%; height:auto; border-radius:6px; border:1px solid var(--line); }
figcaption { color:var(--muted); font-size:13px; margin-top:6px; }
.scroll { overflow-x:auto; }
/* A long table scrolls inside a box no taller than the window, so its sideways scroll bar is in
   view with its rows (not only under the 50th), and its header row stays on top. */
.scroll.tall { max-height:75vh; overflow:auto; } .scroll.tall thead th { z-index:2; }
table.values.compact { font-size:12px; } table.values.compact th, table.values.compact td { padding:4px 6px; }
table.values.judge td.lbl { white-space:normal; min-width:6em; }  /* long setting names wrap, the numbers stay in view */
table.values tr.group th { background:#eef1f5; font-weight:600; text-align:left; white-space:normal; }
/* A table outside a .scroll box (a stage's own section) scrolls inside itself rather than widen
   the page; long unbroken strings (signatures) in lists wrap. */
main :not(.scroll) > table:not(.cm) { display:block; max-width:100%; overflow-x:auto; }
main li { overflow-wrap:anywhere; }
table { border-collapse:collapse; font-size:13px; margin:6px 0 12px; }
th, td { padding:5px 9px; border-bottom:1px solid var(--line); text-align:left; vertical-align:top; }
thead th { background:#eef1f5; font-weight:600; position:sticky; top:0; }
table.values td { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
table.values td.lbl { text-align:left; }
/* Long setting names wrap and column names break, so a many-column table (Williams' test, the
   judges' parse tables) fits its box at 1000 px instead of hiding its last columns. */
table.values td.wrap { white-space:normal; min-width:9em; overflow-wrap:anywhere; }
table.values.heads-wrap thead th, table.values.judge thead th { white-space:normal; min-width:3.5em; }
/* Row names stay on one line (wide value cells would squeeze them over five lines) and, in a table
   wider than its box, stay in view while the values scroll under them. */
table.values th[scope=row] { white-space:nowrap; }
.scroll > table.values th[scope=row] { position:sticky; left:0; z-index:1; background:var(--card); }
table.values td small, table.values td small { display:block; font-size:10.5px; opacity:.8; }
table.values td.nf { color:#777; cursor:help; } table.values td.nf sup { color:#555; }
.nfreasons { font-size:.85em; color:#444; margin:.3em 0 .8em; } .nfreasons ol { margin:.2em 0 0 1.4em; padding:0; } .muted { color:#777; } table.values td.na { color:#bbb; text-align:center; }
table.counts td { text-align:right; } table.counts td.desc { text-align:left; color:var(--muted); white-space:normal; }
td.total { font-weight:600; } td.sc { color:var(--muted); }
table.best td.verdict { text-align:left; cursor:help; }
table.kv th { color:var(--muted); font-weight:500; white-space:nowrap; }
code { font:12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code.sig { word-break:break-all; }
pre { background:#0f1720; color:#dce3ea; padding:14px; border-radius:8px; overflow:auto; font-size:12.5px; max-height:520px; }
details { margin:8px 0; border:1px solid var(--line); border-radius:8px; padding:6px 12px; }
summary { cursor:pointer; font-weight:550; }
/* Confusion cards: each card as wide as its two matrices (side by side when they fit, else one
   under the other), cards wrap to the next line; a matrix wider than the screen scrolls in its box. */
.cmgrid { display:flex; flex-wrap:wrap; align-items:flex-start; gap:14px; margin-top:10px; }
.cmpair { flex:0 1 auto; min-width:0; max-width:100%; border:1px solid var(--line); border-radius:8px; padding:10px 12px; }
.cms { display:flex; flex-wrap:wrap; gap:2px 18px; } .cmbox { min-width:0; max-width:100%; overflow-x:auto; }
.cmpair p { margin:6px 0 2px; font-size:12px; color:var(--muted); } .cmpair p.sub { margin-top:0; }
table.cm { font-size:12px; margin:0; } table.cm td { text-align:right; min-width:44px; font-variant-numeric:tabular-nums; }
table.cm th, table.cm td { padding:4px 6px; }
table.cm td small { display:block; font-size:10px; opacity:.75; } table.cm th { font-weight:500; }
table.cm th.corner { white-space:nowrap; font-size:11px; color:var(--muted); }
footer { color:var(--muted); font-size:12px; text-align:center; padding:0 0 30px; }
@media (max-width: 1100px) {  /* the contents go above the sections: tables and figures keep the full width */
  .layout { grid-template-columns:1fr; padding:16px; }
  nav.toc { position:static; }
  header.top { padding:20px 16px; }
  aside.answer { padding:12px 16px 2px; }
}
figcaption a.full { white-space:nowrap; font-size:12px; }
.figbox { max-width:100%; }
@media (max-width: 700px) {  /* a phone: figures keep a legible width and scroll sideways in their box */
  .layout { padding:8px; }
  /* a compact header: the first answer line stays on the first screen */
  header.top { padding:14px 12px; } header.top h1 { font-size:20px; }
  .stats { grid-template-columns:repeat(auto-fit,minmax(100px,1fr)); gap:6px; margin-top:10px; }
  .stat { padding:4px 8px; } .stat b { font-size:15px; } .stat span { letter-spacing:.02em; }
  aside.answer { margin-top:10px; } aside.answer h2 { font-size:16px; }
  .figbox { overflow-x:auto; }
  .figbox img { max-width:none; width:680px; }
  th, td { padding:4px 6px; }
  .scroll thead th { white-space:nowrap; }  /* column names on one line; the table scrolls instead */
}
</style>
</head>
<body>
<header class="top">
  <h1>$name</h1>
  <div class="path">$path</div>
  <div class="meta">$meta</div>
  <div class="stats">$chips</div>
  <p class="counted">$counted</p>
</header>
$answer
<div class="layout">
<nav class="toc"><h2>Contents</h2><ol>$toc</ol></nav>
<main>
$notice
$body
</main>
</div>
<footer>$footer</footer>
<script>
window.addEventListener("load", function () {
  var images = document.images, ok = true;
  for (var i = 0; i < images.length; i++) {
    if (!images[i].complete || images[i].naturalWidth === 0) { images[i].setAttribute("data-broken", "true"); ok = false; }
  }
  document.body.setAttribute("data-images", String(images.length));
  document.body.setAttribute("data-images-ok", ok ? "true" : "false");
});
</script>
</body>
</html>
"""
