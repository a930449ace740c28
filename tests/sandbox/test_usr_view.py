"""The sandbox's /usr shows what the distribution's packages installed, nothing else.

Attacks written as model completions, run through the stage's own path
(`generation.code_from_completion`, then `orchestrate.execute_row`): a candidate that answers right only
when it can read a file, or list a directory, that no package installed under /usr. The module
puts such a file and directory there itself (and checks with `dpkg -S`, the package manager's own
answer, that no package owns them), so the attack has something to find on any machine; each
attack's control (the same completion aimed at a packaged file) passes, and every language's
honest completion still passes with the filtered /usr.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import uuid

import pytest

from engine.roundtrip import generation, orchestrate
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import bwrap, process, usr_view
from engine.sandbox.languages import LANGUAGES, toolchain_missing
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
TAG = f"babelscore-unpackaged-{uuid.uuid4().hex[:8]}"
SECRET_DIR = f"/usr/share/{TAG}"
SECRET_FILE = f"/usr/lib/{TAG}.txt"
PACKAGED_FILE = os.path.realpath("/usr/bin/bwrap")  # bubblewrap's own binary: dpkg owns it where bwrap runs
pytestmark = [
    pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs"),
    pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg: /usr is not filtered by package"),
    pytest.mark.skipif(not os.access("/usr/share", os.W_OK) or not os.access("/usr/lib", os.W_OK),
                       reason="the test cannot place an unpackaged file under /usr"),
]
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}


@pytest.fixture(scope="module", autouse=True)
def unpackaged():
    os.makedirs(SECRET_DIR)
    try:
        with open(f"{SECRET_DIR}/secret.txt", "w") as fh:
            fh.write("s3cret")
        with open(SECRET_FILE, "w") as fh:
            fh.write("s3cret")
        usr_view.forget()
        yield
    finally:
        shutil.rmtree(SECRET_DIR, ignore_errors=True)
        if os.path.exists(SECRET_FILE):
            os.unlink(SECRET_FILE)
        usr_view.forget()


def _owned_by_a_package(path: str) -> bool:
    return subprocess.run(["dpkg-query", "-S", path], capture_output=True).returncode == 0


def _through_the_stage(task: dict, completion: str) -> dict:
    params = type("P", (), {"sandbox": LIMITS, "call_seconds": 1.0, "verdict": "values"})()
    return orchestrate.execute_row(task, generation.code_from_completion(task, completion), None, params)


def test_the_fixture_is_unpackaged_and_the_control_is_packaged():
    assert not _owned_by_a_package(SECRET_FILE) and not _owned_by_a_package(f"{SECRET_DIR}/secret.txt")
    assert _owned_by_a_package(PACKAGED_FILE)
    directories, files = usr_view.hidden(bwrap.usr_entries())
    assert SECRET_DIR in directories and SECRET_FILE in files
    assert not any(PACKAGED_FILE == p or PACKAGED_FILE.startswith(p + "/") for p in (*directories, *files))


# Each completion answers a + b only when it sees the path; otherwise a wrong answer.
PYTHON_PEEKS = {
    "reads an unpackaged file": ("    try:\n        seen = len(open({path!r}, 'rb').read()) > 0\n"
                                 "    except OSError:\n        seen = False\n", SECRET_FILE),
    "reads a file in an unpackaged directory": ("    try:\n        seen = len(open({path!r}, 'rb').read()) > 0\n"
                                                "    except OSError:\n        seen = False\n",
                                                f"{SECRET_DIR}/secret.txt"),
    "lists an unpackaged directory": ("    import os\n    seen = bool(os.listdir({path!r}))\n", SECRET_DIR),
}


@pytest.mark.parametrize("attack", sorted(PYTHON_PEEKS))
def test_python_completion_sees_nothing_unpackaged(attack):
    body, path = PYTHON_PEEKS[attack]
    task = ADD["python"]
    completion = body.format(path=path) + "    return a + b if seen else a - b - 1\n"
    row = _through_the_stage(task, completion)
    assert row["pass_at_1"] == 0.0 and row["status"] == "failed", row
    control_path = os.path.dirname(PACKAGED_FILE) if attack.startswith("lists") else PACKAGED_FILE
    control = _through_the_stage(task, body.format(path=control_path) + "    return a + b if seen else a - b - 1\n")
    assert control["pass_at_1"] == 1.0, control


@pytest.mark.skipif(bool(toolchain_missing("javascript")), reason=toolchain_missing("javascript") or "node")
def test_javascript_completion_sees_nothing_unpackaged():
    task = ADD["javascript"]
    peek = ("  let seen = false;\n  try {{ seen = require('fs').readFileSync({path!r}).length > 0; }} catch (e) {{}}\n"
            "  return seen ? a + b : a - b - 1;\n}}\n")
    row = _through_the_stage(task, peek.format(path=SECRET_FILE).replace("'", '"'))
    assert row["pass_at_1"] == 0.0 and row["status"] == "failed", row
    control = _through_the_stage(task, peek.format(path=PACKAGED_FILE).replace("'", '"'))
    assert control["pass_at_1"] == 1.0, control


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_language_honest_completion_runs_with_the_filtered_usr(language):
    if toolchain_missing(language):
        pytest.skip(toolchain_missing(language))
    task = ADD[language]
    row = orchestrate.execute_row(task, task["code"], None,
                          type("P", (), {"sandbox": LIMITS, "call_seconds": 5.0, "verdict": "values"})())
    assert (row["status"], row["pass_at_1"]) == ("passed", 1.0), row


def test_without_the_package_database_nothing_is_hidden_and_the_next_run_asks_again(monkeypatch):
    usr_view.forget()
    monkeypatch.setattr(usr_view.shutil, "which", lambda name, *a, **k: None)
    assert usr_view.hidden(bwrap.usr_entries()) == ((), ())
    monkeypatch.undo()
    directories, files = usr_view.hidden(bwrap.usr_entries())
    assert SECRET_DIR in directories and SECRET_FILE in files


PYCACHES = sorted(glob.glob("/usr/lib/python3*/json/__pycache__"))


@pytest.mark.skipif(not PYCACHES or not os.access(PYCACHES[0], os.W_OK), reason="no writable packaged __pycache__")
def test_a_packaged_directorys_pycache_shows_only_byte_code_of_packaged_sources():
    """Byte code whose source is gone, or any other file, in a packaged `__pycache__` is hidden;
    the byte code of the packaged sources beside it stays (Python would recompile it otherwise)."""
    cache = PYCACHES[0]
    planted = [f"{cache}/{TAG}.cpython-311.pyc", f"{cache}/{TAG}.txt"]
    try:
        for path in planted:
            with open(path, "w") as fh:
                fh.write("s3cret")
        usr_view.forget()
        _, files = usr_view.hidden(bwrap.usr_entries())
        assert set(planted) <= set(files)
        kept = glob.glob(f"{cache}/__init__.*.pyc")
        assert kept and not set(kept) & set(files)
        task = ADD["python"]
        body = PYTHON_PEEKS["reads an unpackaged file"][0]
        row = _through_the_stage(task, body.format(path=planted[0]) + "    return a + b if seen else a - b - 1\n")
        assert row["pass_at_1"] == 0.0 and row["status"] == "failed", row
    finally:
        for path in planted:
            if os.path.exists(path):
                os.unlink(path)
        usr_view.forget()


def test_a_covered_entry_that_went_away_is_not_covered_again():
    """bubblewrap cannot cover a path that is gone: an unpackaged entry removed while an evaluation
    runs (a package manager's temporary file, a user's) must not fail every later run of the process."""
    gone = f"/usr/share/{TAG}-gone"
    os.makedirs(gone, exist_ok=True)
    try:
        usr_view.forget()
        assert gone in usr_view.hidden(bwrap.usr_entries())[0]
    finally:
        os.rmdir(gone)
    assert gone not in usr_view.hidden(bwrap.usr_entries())[0]
    task = ADD["python"]
    row = orchestrate.execute_row(task, task["code"], None,
                                  type("P", (), {"sandbox": LIMITS, "call_seconds": 5.0, "verdict": "values"})())
    assert (row["status"], row["pass_at_1"]) == ("passed", 1.0), row
