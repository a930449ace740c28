"""Comments, docstrings and docs say why, never which issue or review round asked for a change or
what the code did before it: the history is in git and docs/changes.md (the one file left out)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

ROOTS = ("engine", "kernels", "tests", "bench", "docs")
FILES = ("README.md", "Makefile")
SUFFIXES = (".py", ".md", ".js", ".yaml", ".toml", ".txt")
LEFT_OUT = {"docs/changes.md"}  # the change log: history is what it is for

# Each with what to write instead. `used to` counts unless it is the passive (`is used to draw`);
# an upstream project's issue is cited with its `#` (`vLLM issue #49497`) and is not ours.
PHRASES = (
    (r"\bissue\s+\d+", "say what the code does and why, not which issue asked for it"),
    (r"\(\s*issue\b", "say what the code does and why, not which issue asked for it"),
    (r"\breview(?:er)?s?\s+rounds?\b|\breviewers?\b", "say why, not who asked for it"),
    (r"\bround[- ]\d+\b", "say why, not which review round asked for it"),
    (r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bbeing )\bused to\b", "say what the code does now"),
    (r"\bpreviously\b|\bformerly\b|\bno longer\b|\bnot any more\b", "say what the code does now"),
)
PATTERN = re.compile("|".join(f"(?:{p})" for p, _ in PHRASES), re.IGNORECASE)


def narrative_lines(path: Path) -> list[str]:
    """`path:line: text` for each line that narrates history or addresses reviewers."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if PATTERN.search(line):
            found.append(f"{path}:{number}: {line.strip()[:160]}")
    return found


def _files() -> list[Path]:
    out = [REPO / name for name in FILES]
    for root in ROOTS:
        out += [p for p in sorted((REPO / root).rglob("*")) if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    this = Path(__file__).resolve()
    return [p for p in out if p.relative_to(REPO).as_posix() not in LEFT_OUT and p.resolve() != this]


def test_no_comment_narrates_history_or_names_a_review_round() -> None:
    found = [line for path in _files() for line in narrative_lines(path)]
    hints = "; ".join(sorted({hint for _, hint in PHRASES}))
    assert not found, f"rewrite these ({hints}):\n" + "\n".join(found)


@pytest.mark.parametrize("planted", [
    "# keeps the order (issue 32)",
    "x = 1  # see (issue #12)",
    '"""Fixed after review round 2."""',
    "# the reviewers asked for a copy",
    "# round-3 finding: the cache",
    "# the loop used to squeeze every row",
    "// previously the scorer read the config",
    "The stage no longer reads the section.",
])
def test_a_planted_narrative_comment_is_found(tmp_path: Path, planted: str) -> None:
    path = tmp_path / "planted.py"
    path.write_text("import os\n" + planted + "\n", encoding="utf-8")
    assert narrative_lines(path) == [f"{path}:2: {planted}"]


@pytest.mark.parametrize("fine", [
    "# the share is used to draw labels",
    "# a GPU without nvcc dies at start (vLLM issue #49497)",
    "# a round trip through the sandbox",
    "# rounds to 2 digits: round(x, 2)",
    "# review the diff before committing the golden files",
])
def test_a_comment_that_says_why_is_not_found(tmp_path: Path, fine: str) -> None:
    path = tmp_path / "fine.py"
    path.write_text(fine + "\n", encoding="utf-8")
    assert narrative_lines(path) == []
