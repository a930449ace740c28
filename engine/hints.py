"""Hints appended to error messages: "did you mean" for a mistyped key or file name, a Windows
backslash path, a tab in YAML. Each returns '' when it has nothing to say, so callers can
always append it."""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the closest choice (difflib ratio >= 0.6), else ''."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def path_hint(path: str | Path) -> str:
    """Why a path may not exist: a backslash separator, or a near name in the folder it names."""
    text = str(path)
    hints = []
    if "\\" in text:
        hints.append(f"the path has backslashes; write it with / ({text.replace(chr(92), '/')!r})")
    candidate = Path(text.replace("\\", "/"))
    folder = candidate.parent
    if folder.is_dir():
        try:
            names = [p.name for p in folder.iterdir()]
        except OSError:
            names = []
        # names compared without their suffix: 'missing.jsonl' is not close to 'lang.jsonl' for the '.jsonl' they share
        stems = {Path(n).stem.lower(): n for n in names}
        close = difflib.get_close_matches(candidate.stem.lower(), list(stems), n=1, cutoff=0.6)
        if close:
            hints.append(f"did you mean {str(folder / stems[close[0]])!r}?")
    else:
        existing = next((p for p in folder.parents if p.is_dir()), None)
        if existing is not None and existing != folder:
            hints.append(f"folder {str(folder)!r} does not exist (the nearest existing folder is {str(existing)!r})")
    return ("; " + "; ".join(hints)) if hints else ""


def yaml_tab_hint(text: str) -> str:
    """YAML forbids tabs in indentation; name the first line that starts with one."""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip(" ")
        if stripped.startswith("\t"):
            return f"; line {number} is indented with a tab: YAML indentation must be spaces"
    return ""
