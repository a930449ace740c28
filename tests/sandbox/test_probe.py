"""The bubblewrap probe is a run like any other: it holds its uid's lock, and a failed probe is not
kept. On the main of 2026-12-03 it ran as the pool's first uid without that uid's lock (another
engine claiming the uid ended it), and its failure was cached for the life of the process, so
every later part failed with a ConfigError."""
from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

import pytest

from engine.sandbox import bwrap, process
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits(uid=231000, uid_slots=2)
needs_root_and_bwrap = pytest.mark.skipif(os.geteuid() != 0 or bool(process.unavailable(LIMITS)),
                                          reason="the probe drops to a pool uid only as root, with bwrap")


@needs_root_and_bwrap
def test_the_probe_takes_a_free_uid_of_the_pool_under_its_lock(monkeypatch):
    folder = Path(tempfile.gettempdir()) / "babelscore-sandbox-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    held = os.open(folder / f"{LIMITS.uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # another engine's run holds the pool's first uid
    probed = []
    real = bwrap.probe_as
    monkeypatch.setattr(bwrap, "probe_as", lambda uid: probed.append(uid) or real(uid))
    try:
        bwrap.forget()
        assert process.unavailable(LIMITS) == ""
    finally:
        os.close(held)
    assert probed == [LIMITS.uid + 1]


@needs_root_and_bwrap
def test_a_failed_probe_is_probed_again(monkeypatch):
    bwrap.forget()
    monkeypatch.setattr(bwrap.shutil, "which", lambda name, *a, **k: None)
    assert "not on PATH" in process.unavailable(LIMITS)
    monkeypatch.undo()
    assert process.unavailable(LIMITS) == ""
