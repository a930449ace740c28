"""The run directory's filesystem full during a part's commit.

A clear error (DiskFullError, exit 7) naming the file, its filesystem and what to do; nothing
half-written that looks complete (no temp file, no part file without its completion marker,
no marker without its file); `--resume` once space is freed completes equal to a clean run.
Injected two ways: a write hook (pyarrow's writer failing half way, as it does on ENOSPC), and,
where this process may mount one (root), a real 4 MiB tmpfs filled up between two commits.
"""
from __future__ import annotations

import errno
import logging
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine import cli, runner
from engine.config import load_config
from engine.io import atomic
from engine.io.rundir import RunDirectory
from tests.support.run_compare import assert_runs_equal


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from tests.support.synthetic import write_synthetic

    folder = tmp_path_factory.mktemp("disk-full")
    input_path = write_synthetic(folder / "in.parquet", 20)
    config = folder / "config.yaml"
    config.write_text(f"name: disk-full\ninput: {input_path}\npart_size: 5\nstages: [score]\nscore:\n  scorers:\n"
                      "    - kind: lexical\n      metrics: [bleu]\n")
    runner.execute_run(load_config(config), str(folder / "clean"), executor_name="local")
    return config, folder / "clean"


def _assert_nothing_half_written(run: Path) -> None:
    assert not [p for p in run.rglob(f"{atomic.TEMP_PREFIX}*")], "a temp file was left"
    opened = RunDirectory.open_existing(run)
    committed = {Path(r["file"]).name for r in opened.manifest.parts.values()}
    for file in (run / "scores").glob("*.parquet"):
        pq.read_table(file)  # whole
        assert file.name in committed, f"{file} has no completion marker"


def _cli(config: Path, out: Path, *extra: str) -> int:
    return cli.main(["run", str(config), "--out", str(out), *extra])


def test_full_disk_in_a_part_write_then_resume(case, tmp_path, monkeypatch, caplog) -> None:
    config, clean = case
    out = tmp_path / "run"
    write = atomic.pq.write_table
    written: list[str] = []

    def fills_up(table, where, **kw):  # the third score part meets a full disk half way through
        if "scores" in Path(where).parent.name:
            written.append(str(where))
            if len(written) == 3:
                write(table, where, **kw)
                data = Path(where).read_bytes()
                Path(where).write_bytes(data[: len(data) // 2])
                raise OSError(f"[errno {errno.ENOSPC}] Error writing bytes to file. Detail: [errno 28] No space left on device")
        return write(table, where, **kw)

    monkeypatch.setattr(atomic.pq, "write_table", fills_up)
    with caplog.at_level(logging.ERROR):
        assert _cli(config, out) == 7
    assert "the disk is full: writing " in caplog.text and "rerun with --resume" in caplog.text
    assert "the filesystem at /" in caplog.text and "next: free space on that disk" in caplog.text
    _assert_nothing_half_written(out)
    assert len(list((out / "scores").glob("*.parquet"))) == 2
    monkeypatch.setattr(atomic.pq, "write_table", write)
    assert _cli(config, out, "--resume") == 0
    assert_runs_equal(out, clean)
    assert cli.main(["diff", str(out), str(clean)]) == 0  # as a user would check it


def test_full_disk_in_a_completion_marker_leaves_the_part_undone(tmp_path, monkeypatch) -> None:
    """The marker is the commit point: its write failing leaves a part file that resume redoes."""
    import pyarrow as pa

    run = RunDirectory(tmp_path, {"parts": {}, "failed_parts": {}})
    real_open = open

    class _Full:
        def __init__(self, path, mode):
            self.handle = real_open(path, mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            self.handle.write(data[:10])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "open", lambda path, mode="r", *a: _Full(path, mode) if mode == "wb" else real_open(path, mode, *a),
                        raising=False)
    table = pa.table({"x": [1, 2]})
    with pytest.raises(atomic.DiskFullError, match="score/t/00000.json failed"):
        run.commit_part("score/t/00000", "scores/t__part-00000.parquet", table, table.schema)
    assert not run.is_done("score/t/00000")
    assert not list(tmp_path.rglob(f"{atomic.TEMP_PREFIX}*"))


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0:
        return False
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


def test_a_real_full_tmpfs_then_resume(case, tmp_path, monkeypatch, caplog) -> None:
    config, clean = case
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "4m"):
        pytest.skip("cannot mount a tmpfs here (needs root); the write-hook test covers the engine's side")
    try:
        out, ballast = disk / "run", disk / "ballast"
        commit = runner.Committer.commit

        def fill_after_two(self, part, table):
            commit(self, part, table)
            if self.commits == 2:  # fill the disk to the last byte
                with open(ballast, "wb") as handle:
                    try:
                        while True:
                            handle.write(b"\0" * 65536)
                            handle.flush()
                    except OSError:
                        pass
                    try:
                        while True:
                            handle.write(b"\0")
                            handle.flush()
                    except OSError:
                        pass

        monkeypatch.setattr(runner.Committer, "commit", fill_after_two)
        with caplog.at_level(logging.ERROR):
            assert _cli(config, out) == 7
        assert f"the filesystem at {disk} has 0.0 MiB free" in caplog.text
        ballast.unlink()
        _assert_nothing_half_written(out)
        monkeypatch.setattr(runner.Committer, "commit", commit)
        assert _cli(config, out, "--resume") == 0
        assert_runs_equal(out, clean)
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)
