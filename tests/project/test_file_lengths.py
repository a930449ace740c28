"""No Python file in engine/, kernels/, bench/ or tests/ is over 500 lines: a longer module holds
more than one subject, and is split by subject (a test module's halves listed in tests/tiers.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import REPO

MAX_LINES = 500
ROOTS = ("engine", "kernels", "bench", "tests")


def long_files(root: Path) -> list[str]:
    """`path (N lines)` of every .py file of ROOTS under `root` longer than MAX_LINES."""
    out = []
    for folder in ROOTS:
        for path in sorted((root / folder).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES and "__pycache__" not in path.parts:
                out.append(f"{path.relative_to(root).as_posix()} ({lines} lines)")
    return out


def test_no_python_file_is_longer_than_the_limit():
    assert long_files(REPO) == [], f"split these by subject (at most {MAX_LINES} lines each):\n" + "\n".join(long_files(REPO))


@pytest.mark.parametrize("folder", ROOTS)
def test_a_planted_long_file_is_found_in_each_folder(tmp_path: Path, folder: str):
    for other in ROOTS:
        (tmp_path / other).mkdir()
    (tmp_path / folder / "pkg").mkdir()
    (tmp_path / folder / "pkg" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    (tmp_path / folder / "at_the_limit.py").write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    assert long_files(tmp_path) == [f"{folder}/pkg/long.py ({MAX_LINES + 1} lines)"]
