"""The config reference, generated from the parameter classes so that it cannot drift.

Every config section is a frozen `Params` dataclass; the string right below each field
documents its key. Type, allowed values and default come from the dataclass itself; the
meaning from those strings.
Sections are discovered from the stage registry (engine.stages.registry: stage order) and
scorer kinds from engine.metrics.base.SCORER_KINDS, so a new stage or scorer kind appears here
without editing this module. `babelscore config reference --write docs/config.md` rewrites the
page the README links; a test fails when the page and this output differ.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import textwrap
import typing
from typing import Any, Iterator

from engine.params import Params, describe_type
from engine.stages.registry import DEFAULT_STAGES

# Top-level keys are not a Params class (RunConfig holds the parsed sections); documented here.
TOP_LEVEL: tuple[tuple[str, str, str, str], ...] = (
    ("name", "str", '"run"', "the run's name (manifest, report title)."),
    ("input", "str", "required (unless stage build)",
     "the input sample table (Parquet or JSON Lines): a path relative to the config file's folder, "
     "an absolute path, or `builtin:demo`."),
    ("labels", "str or null", "null",
     "expert labels for generated rows: a Parquet / JSON Lines table of file_id, generator, label, "
     "error_codes, joined by (file_id, generator name); relative to the config file's folder."),
    ("stages", "a list of stage names", json.dumps(list(DEFAULT_STAGES)),
     "the stages to run, in the order shown under Stages; a section for a stage not listed here is an error."),
    ("seed", "int", "0",
     "run-wide seed: the default `seed` of every stage that has one (build, each generator, noise, perturb, "
     "roundtrip and its generators, calibrate); a section's own `seed` wins. The judges keep their own "
     "(default 42) so that a sweep over the run seed reuses the same judge tasks."),
    ("part_size", "int", "64",
     "the least number of sample rows per part (a part holds whole files and closes once it has this many): "
     "the unit of work, of retry and of resume. The round trip cuts its tasks by `roundtrip.tasks_per_part`."),
    ("reuse", "a run directory or a list of them", "null",
     "earlier runs whose finished, identical rows this run takes instead of computing them (relative to the "
     "config file's folder; `babelscore run --reuse` replaces it). Not part of the run's identity."),
    ("deterministic", "`default`, `batch_invariant` or {mode, threads}", "default",
     "how neural values are computed (engine/numerics.py): `default` is bit for bit across executors, resumes "
     "and retries at one part size; `batch_invariant` also across part sizes (each sequence in a batch of its "
     "own; slower). `threads`: torch's intra-op threads in every process (default: OMP_NUM_THREADS, else the "
     "driver's usable CPUs), recorded in the neural signatures."),
)


def key_docs(cls: type) -> dict[str, str]:
    """Key -> one-line meaning, from the field strings of the class and of the classes it derives
    its keys from (the shared model entry, a judge's per-backend groups)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        docs.update(_field_strings(klass))
    return docs


def _field_strings(cls: type) -> dict[str, str]:
    """Key -> one-line meaning, from the string literal right below each field of the class body."""
    if not issubclass(cls, Params) or cls is Params:
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # no source to read (a class made at run time)
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for field, below in zip(body, body[1:]):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and isinstance(below, ast.Expr)
                and isinstance(below.value, ast.Constant) and isinstance(below.value.value, str)):
            docs[field.target.id] = " ".join(line.strip() for line in below.value.value.strip().splitlines())
    return docs


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    if isinstance(value, Params):  # a nested section: its own defaults
        value = value.to_dict()
    if isinstance(value, tuple):
        value = list(value)
    # JSON spelling is valid YAML and reads as written in a config (null, false, [..]).
    return json.dumps(value, ensure_ascii=False)


def _type_text(tp: Any) -> str:
    return describe_type(tp).replace("|", "\\|")


def _nested_params(tp: Any) -> type[Params] | None:
    """The Params class a field holds (directly or as list items), for a sub-table."""
    for arg in (tp, *typing.get_args(tp)):
        if isinstance(arg, type) and issubclass(arg, Params):
            return arg
    return None


def missing_key_docs(cls: type[Params]) -> list[str]:
    docs = key_docs(cls)
    return [f.name for f in dataclasses.fields(cls) if f.init and f.name not in docs]


def params_table(cls: type[Params], where: str) -> Iterator[tuple[str, type[Params]]]:
    """Markdown lines of one section's table, then (where, class) of nested sections."""
    hints = typing.get_type_hints(cls)
    docs = key_docs(cls)
    nested = []
    yield "| key | type and allowed values | default | meaning |", cls
    yield "|---|---|---|---|", cls
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        tp = hints[field.name]
        sub = _nested_params(tp)
        if sub is not None:
            nested.append((f"{where}.{field.name}[]" if typing.get_origin(tp) is tuple else f"{where}.{field.name}", sub))
            type_text = "a list of mappings (below)" if typing.get_origin(tp) is tuple else "a mapping (below)"
        else:
            type_text = _type_text(tp)
        meaning = docs.get(field.name, "").replace("|", "\\|")
        yield f"| `{field.name}` | {type_text} | `{_default(field)}` | {meaning} |", cls
    for sub_where, sub in nested:
        yield "", sub
        yield f"#### `{sub_where}`", sub
        yield "", sub
        yield from params_table(sub, sub_where)


def _import(target: str) -> Any:
    module_name, name = target.split(":")
    return getattr(importlib.import_module(module_name), name)


def sections() -> list[tuple[str, type[Params]]]:
    """(section key, Params class) of every stage section, in stage order, then `validation`.

    Every stage names its class in `Stage.params_class`; a section whose entries are of several
    kinds (`Stage.entries_by_kind`: the score stage's scorers) is documented by kind instead
    (`scorer_kinds`).
    """
    from engine.stages import registry

    out = []
    for stage in registry.listed():  # every registered stage, in run order
        if stage.section and stage.params_class and not stage.entries_by_kind:
            out.append((stage.section, _import(stage.params_class)))
    out.append(("validation", _import("engine.data.params:ValidationParams")))
    return out


def scorers_section() -> str:
    """The section key of the stage whose entries are scorers of several kinds (`entries_by_kind`)."""
    from engine.stages import registry

    return next(s.section for s in registry.listed() if s.section and s.entries_by_kind)


def path_option_names() -> list[str]:
    """Every option name some stage resolves as a path (`Stage.path_options`), sorted."""
    from engine.stages import registry

    return sorted({key for stage in registry.listed() for key in stage.path_options})


def scorer_kinds() -> list[tuple[str, type[Params]]]:
    from engine.metrics.base import SCORER_KINDS, scorer_class

    return [(kind, scorer_class(kind).Params) for kind in SCORER_KINDS]


def all_params_classes() -> list[tuple[str, type[Params]]]:
    """Every documented (where, class), nested ones included: what the docs test walks."""
    out = []
    scorers = scorers_section()
    for where, cls in [*sections(), *((f"{scorers}.scorers[] kind: {k}", c) for k, c in scorer_kinds())]:
        seen = {cls}
        out.append((where, cls))
        for _, sub in params_table(cls, where):
            if sub not in seen:
                seen.add(sub)
                out.append((where, sub))
    return out


def reference_markdown() -> str:
    """The whole reference page (Markdown)."""
    from engine.stages.registry import stage_order

    lines = [
        "# Config reference",
        "",
        "Generated by `babelscore config reference --write docs/config.md` from the parameter "
        "classes; do not edit by hand. Every key is checked before any work: an unknown key or a "
        "value outside the allowed ones stops the run with the key, the value and what is allowed "
        "(`babelscore config check my.yaml` runs every check without doing work).",
        "",
        "Relative paths (`input`, and "
        + ", ".join(f"`{k}`" for k in path_option_names())
        + " values starting with `./` or `../`, in the sections that have them) resolve against the "
        "folder of the config file, not the current directory.",
        "",
        "## Top level",
        "",
        "| key | type and allowed values | default | meaning |",
        "|---|---|---|---|",
    ]
    for key, type_text, default, meaning in TOP_LEVEL:
        lines.append(f"| `{key}` | {type_text} | `{default}` | {meaning} |")
    lines += ["", "## Stages", "", "`stages` lists them in this order: " + ", ".join(f"`{s}`" for s in stage_order()) + ".", ""]
    scorers = scorers_section()
    lines += [f"### `{scorers}`", "", f"`{scorers}.scorers` is a non-empty list; each entry has a `kind` "
              "(" + ", ".join(f"`{k}`" for k, _ in scorer_kinds()) + ") and that kind's keys.", ""]
    for kind, cls in scorer_kinds():
        lines += [f"#### `{scorers}.scorers[]` with `kind: {kind}`", ""]
        lines += [line for line, _ in params_table(cls, f"{scorers}.scorers[{kind}]")]
        lines.append("")
    for where, cls in sections():
        heading = "## `validation`" if where == "validation" else f"### `{where}`"
        lines += [heading, ""]
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        if summary:
            lines += [summary, ""]
        lines += [line for line, _ in params_table(cls, where)]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
