"""The README and docs/ cannot name what does not exist, and the README's walk-through works.

Every repository path, config, `babelscore` command and `make` target named in README.md and
docs/*.md is checked: paths exist, configs parse, commands parse with the real argument parser,
links (and their #anchors) resolve. The walk-through block is run in a fresh shell, step by step.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from engine.cli import build_parser
from engine.config import load_config
from engine.report.summary import run_summary
from engine.stages.plan import reopen_run
from tests.support.paths import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TOP = ("engine/", "kernels/", "tests/", "bench/", "configs/", "docs/", "examples/", ".ci/")
TOP_FILES = ("Makefile", "pyproject.toml", "README.md")
WALK_THROUGH = "<!-- walk-through"

_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(t) for t in TOP) + r")[\w./-]*|" +
                   "|".join(re.escape(f) for f in TOP_FILES) + r")")


def _blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)


def named_paths(text: str) -> set[str]:
    """Repository paths named in inline code or code blocks (placeholders such as <name> skipped)."""
    spans = _CODE.findall(text) + _blocks(text)
    found = set()
    for span in spans:
        for match in _PATH.finditer(span):
            path = match.group(1).rstrip(".,:;)")
            if not re.search(r"[<>*{}]", span[match.end(): match.end() + 1] + path):
                found.add(path)
    return found


def missing_paths(text: str, root: Path) -> list[str]:
    return sorted(p for p in named_paths(text) if not (root / p).exists())


def _slug(heading: str) -> str:  # GitHub's anchor of a heading
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def broken_links(page: Path) -> list[str]:
    out = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"\w+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            out.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", dest.read_text(encoding="utf-8"), flags=re.M)
            if anchor not in {_slug(h) for h in headings}:
                out.append(f"{target} (no heading #{anchor})")
    return out


def named_commands(text: str) -> list[tuple[list[str], bool]]:
    """`babelscore ...` and `make ...` commands, split like a shell; True for a whole command line
    (a code block line), False for a mention in inline code (which may leave arguments out)."""
    lines = [(line, True) for block in _blocks(text) for line in block.splitlines()]
    lines += [(span, False) for span in _CODE.findall(text)]
    commands = []
    for line, whole in lines:
        line = line.strip().removeprefix("$ ").rstrip("\\").strip()
        if not line.startswith(("babelscore", "make ", ".venv/bin/babelscore")) or re.search(r"[<>\[\]]|\.\.\.", line):
            continue
        try:
            argv = shlex.split(line, comments=True)
        except ValueError:
            continue
        if argv and argv[0] in ("babelscore", ".venv/bin/babelscore", "make"):
            commands.append((argv, whole))
    return commands


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def bad_commands(text: str) -> list[str]:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, flags=re.M))
    subs = _subparsers()
    global_flags = {"-v", "--verbose", "-q", "--quiet", "-h", "--help"}
    bad = []
    for argv, whole in named_commands(text):
        if argv[0] == "make":
            named = [a for a in argv[1:] if not a.startswith("-") and "=" not in a]
            bad += [f"make {t} (no such target)" for t in named if t not in targets]
            continue
        words = [w for w in argv[1:] if w not in ("-v", "--verbose", "-q", "--quiet")]
        if not words or words[0] in ("--help", "-h"):
            continue
        if not whole:  # a mention: the subcommand and the flags it names must exist
            if words[0] not in subs:
                bad.append(f"{shlex.join(argv)}: no subcommand {words[0]!r}")
                continue
            known = {o for a in subs[words[0]]._actions for o in a.option_strings} | global_flags
            bad += [f"{shlex.join(argv)}: no option {w}" for w in words[1:] if w.startswith("-") and w not in known]
            continue
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                build_parser().parse_args(words)
        except SystemExit as exc:
            if exc.code:
                bad.append(f"{shlex.join(argv)}: {err.getvalue().strip().splitlines()[-1]}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_path_link_and_command_a_page_names_exists(page):
    text = page.read_text(encoding="utf-8")
    assert not missing_paths(text, REPO), f"{page.name} names files that do not exist"
    assert not broken_links(page), f"{page.name} has broken links"
    assert not bad_commands(text), f"{page.name} names commands that do not parse"


def test_every_config_named_parses():
    named = sorted({p for page in PAGES for p in named_paths(page.read_text(encoding="utf-8")) if p.endswith(".yaml")})
    assert "examples/lexical.yaml" in named and "configs/demo.yaml" in named
    for path in named:
        if path.startswith(("configs/", "examples/")):
            # Examples name only models that `make setup` installs: check them; configs/ name hub ids.
            load_config(REPO / path, check=path.startswith("examples/"))
        else:
            yaml.safe_load((REPO / path).read_text(encoding="utf-8"))


def test_the_check_fails_when_a_named_file_is_removed(tmp_path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for path in named_paths(readme):
        src = REPO / path
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        if src.is_file():
            shutil.copy(src, tmp_path / path)
        else:
            (tmp_path / path).mkdir(exist_ok=True)
    assert missing_paths(readme, tmp_path) == []
    (tmp_path / "examples" / "lexical.yaml").unlink()
    assert missing_paths(readme, tmp_path) == ["examples/lexical.yaml"]
    bad = bad_commands("```\nbabelscore runn x.yaml --out r\nbabelscore run x.yaml\nmake demoo\n```")
    assert [b.split(":")[0] for b in bad] == ["babelscore runn x.yaml --out r", "babelscore run x.yaml", "make demoo (no such target)"]


def test_the_walk_through_runs_in_a_fresh_shell(tmp_path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert WALK_THROUGH in readme, "the README lost its walk-through block"
    block = _blocks(readme[readme.index(WALK_THROUGH):])[0]
    steps = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    assert steps[0] == "source .venv/bin/activate" and any(s.startswith("babelscore run ") for s in steps)
    # The repository as a newcomer has it after `make setup`: .venv and examples/ beside each other.
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    script = "\n".join(f"{step} || {{ echo 'STEP FAILED: {step}' >&2; exit 1; }}" for step in steps)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO),  # this checkout's code
           "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "LANG": os.environ.get("LANG", "C.UTF-8")}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "18 rows, 18 valid, 0 rejected" in proc.stdout and "config check passed" in proc.stdout
    assert (tmp_path / "runs" / "example" / "report" / "index.html").is_file()
    assert '"status": "complete"' in (tmp_path / "runs" / "example" / "manifest.json").read_text()


def _snippet() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("```python", readme.index("**Read the scores**"))
    return textwrap.dedent(readme[start:readme.index("```", start + 3)].split("\n", 1)[1])


def _console_means(stdout: str) -> dict[tuple[str, str, str, str, str], str]:
    """(metric, scorer, context, variant, language) -> the value the console printed."""
    lines = stdout[stdout.index("mean score per language"):].splitlines()
    header = lines[1].split()
    out = {}
    for line in lines[3:]:
        cells = line.split()
        if len(cells) != len(header) or line.startswith("("):
            break
        for language, value in zip(header[4:], cells[4:]):
            out[(*cells[:4], language)] = value
    return out


def test_the_pandas_snippet_prints_the_consoles_numbers(tmp_path, monkeypatch):
    """The README's snippet keeps settings apart: its means are the console's, setting by setting."""
    from engine.cli import main

    run = tmp_path / "runs" / "example"
    assert main(["run", str(REPO / "examples" / "lexical.yaml"), "--out", str(run)]) in (0, 1)
    console = _console_means(run_summary(reopen_run(run)) + "\n")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(_snippet(), "README.md", "exec"), namespace)
    assert printed.getvalue().strip()
    means = namespace["means"].reset_index()
    checked = 0
    for row in means.to_dict("records"):
        key = tuple(str(row[k]) if isinstance(row[k], str) and row[k] else "-" for k in ("metric", "scorer", "context", "variant"))
        for language in namespace["means"].columns:
            if console.get((*key, language), "-") != "-":
                assert console[(*key, language)] == f"{row[language]:.4f}", (key, language)
                checked += 1
    assert checked == sum(v != "-" for v in console.values()) > 0
