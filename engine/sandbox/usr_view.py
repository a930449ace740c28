"""What of /usr a sandboxed run sees: what the distribution's packages installed, nothing else.

Inside /usr's bound entries (engine.sandbox.bwrap), every entry no installed package owns by
`dpkg-query -L` is hidden: a directory under an empty read-only tmpfs, a file under /dev/null.
Also counted as packaged: paths under the merged /usr, a packaged source's byte code in
`__pycache__`, and symlinks into /etc/alternatives; unpackaged symlinks keep their target text.
One mount per hidden entry (a bind per packaged file costs seconds per run: bubblewrap rereads
the mount table for each); a directory that would need COLLAPSE_ENTRIES mounts and is at least
a quarter unpackaged is hidden whole. Computed once per process, kept only when dpkg answered
(without it nothing is hidden, a warning is logged, the next run asks again) and computed again
when a covered entry went away.
docs/sandbox.md ("What of /usr a run sees") has the measured figures.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from typing import Iterable

log = logging.getLogger(__name__)

COLLAPSE_ENTRIES = 16
_MERGED = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_HIDDEN: tuple[tuple[str, ...], tuple[str, ...]] | None = None  # (directories, files), once computed
_WARNED: list[bool] = []  # the missing database is logged once per process, not once per run
_COMPUTING = threading.Lock()  # runs starting at once (a split run's two sides) wait for one computation


def _packaged_paths() -> set[str] | None:
    """Every path under /usr an installed package owns (with its parent directories); None without dpkg."""
    if shutil.which("dpkg-query") is None:
        return None
    try:
        names = subprocess.run(["dpkg-query", "-W", "-f", "${binary:Package}\\n"], capture_output=True,
                               text=True, timeout=60, check=True).stdout.split()
        listed = subprocess.run(["dpkg-query", "-L", *names], capture_output=True, text=True, timeout=120,
                                errors="surrogateescape").stdout
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("dpkg-query failed (%s): the sandbox's /usr is not filtered by package this time", exc)
        return None
    owned: set[str] = set()
    for line in listed.splitlines():
        path = _merged(line.strip())
        while path.startswith("/usr/") and path not in owned:
            owned.add(path)
            path = os.path.dirname(path)
    return owned or None


def _merged(path: str) -> str:
    for root in _MERGED:
        if path == root or path.startswith(root + "/"):
            return "/usr" + path
    return path


def _packaged(entry: os.DirEntry, parent_owned: bool, owned: set[str]) -> bool:
    if entry.path in owned:
        return True
    if entry.name == "__pycache__" and parent_owned:
        return True
    if os.path.basename(os.path.dirname(entry.path)) == "__pycache__":
        return _compiled_from_packaged(entry, owned)
    return entry.is_symlink() and os.readlink(entry.path).startswith("/etc/alternatives/")


def _compiled_from_packaged(entry: os.DirEntry, owned: set[str]) -> bool:
    """Byte code of a packaged source (`__pycache__/name.<tag>.pyc` beside a packaged `name.py`):
    anything else in a `__pycache__` (a stale .pyc whose source is gone, a planted file) is hidden."""
    source_dir = os.path.dirname(os.path.dirname(entry.path))
    return entry.name.endswith(".pyc") and f"{source_dir}/{entry.name.split('.', 1)[0]}.py" in owned


def _file_count(path: str) -> int:
    return max(1, sum(len(files) for _, _, files in os.walk(path)))


def _scan(directory: str, owned: set[str]) -> tuple[int, int, list[str]]:
    """(packaged files, unpackaged files, entries to hide) of `directory`, recursively."""
    packaged = unpackaged = 0
    hidden: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0, 0, []
    for entry in entries:
        is_dir = entry.is_dir(follow_symlinks=False)
        if _packaged(entry, directory in owned, owned):
            if is_dir:
                sub_packaged, sub_unpackaged, sub_hidden = _scan(entry.path, owned)
                packaged, unpackaged = packaged + sub_packaged, unpackaged + sub_unpackaged
                hidden += sub_hidden
            else:
                packaged += 1
            continue
        unpackaged += _file_count(entry.path) if is_dir else 1
        if not entry.is_symlink():
            hidden.append(entry.path)
    if len(hidden) >= COLLAPSE_ENTRIES and 4 * unpackaged >= packaged + unpackaged:
        return packaged, unpackaged, [directory]
    return packaged, unpackaged, hidden


def hidden(tops: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(directories, files) under the bound `tops` that no installed package owns; computed once
    per process (kept only when dpkg answered)."""
    with _COMPUTING:
        return _hidden(tops)


def _hidden(tops: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    global _HIDDEN
    if _HIDDEN is not None and _still_there(*_HIDDEN):
        return _HIDDEN
    owned = _packaged_paths()
    if owned is None:
        if not _WARNED:
            _WARNED.append(True)
            log.warning("no package database (dpkg-query): the sandbox shows /usr's toolchain directories whole")
        return (), ()
    found: list[str] = []
    for top in tops:
        if os.path.isdir(top) and not os.path.islink(top):
            found += _scan(top, owned)[2]
    directories = tuple(p for p in found if os.path.isdir(p) and not os.path.islink(p))
    files = tuple(p for p in found if p not in directories)
    _HIDDEN = (directories, files)
    log.info("the sandbox hides %d directories and %d files under /usr that no package installed",
             len(directories), len(files))
    return _HIDDEN


def _still_there(directories: tuple[str, ...], files: tuple[str, ...]) -> bool:
    """Whether every covered entry is still there as it was: bubblewrap cannot cover a path that
    went away (an unpackaged file removed during a long evaluation would fail every later run)."""
    return (all(os.path.isdir(p) and not os.path.islink(p) for p in directories)
            and all(os.path.lexists(p) and not os.path.isdir(p) for p in files))


def forget() -> None:
    """Compute the list again at the next run (after packages changed)."""
    global _HIDDEN
    _HIDDEN = None
