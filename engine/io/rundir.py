"""The run directory and its manifest, owned by the driver (one writer, enforced by a lock).

Exactly-once: each part is written to a temp file, renamed into place when complete, and
then recorded by its **completion marker** `RUN/commits/<part key>.json` (a few hundred bytes,
itself written atomically): the marker is the commit point, so a commit writes O(1) bytes
whatever the number of parts (as datatrove's completion files). `manifest.json` (replaced
atomically) summarises the markers under `parts`; the driver rewrites it when a stage ends,
when a part fails and when the run ends, and every reader (resume, reports) merges the markers
into it on opening, so a summary that a crash left behind is never trusted over the markers.
A part whose file exists but has no marker (crash between rename and marker) is simply redone
on resume and overwrites its own file, so there is never a duplicate and never a partial file.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import RunDirectoryError
from engine.io.atomic import remove_stale_temps, write_json_atomic, write_parquet_atomic
from engine.io.layout import RunLayout
from engine.io.lock import LOCK_FILE, RunLock
from engine.io.manifest import Manifest, now
from engine.kinds import SAMPLES, SCORES

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
COMMITS = "commits"  # completion markers: COMMITS/<stage>/<task>/<index>.json


class RunDirectory:
    """A run's folder. Only the driver process creates one and changes its manifest."""

    def __init__(self, root: str | Path, manifest: Manifest | dict[str, Any], lock: RunLock | None = None,
                 layout: RunLayout | None = None):
        self.root = Path(root)
        self.manifest = manifest if isinstance(manifest, Manifest) else Manifest(manifest)
        self._lock = lock
        self._layout = layout
        self._plan: Any = None

    def use_layout(self, layout: RunLayout) -> None:
        """A reader that needs only the run's rows gives their layout."""
        self._layout = layout

    def use_plan(self, plan: Any) -> None:
        """The run's plan (engine.stages.plan.RunPlan: the driver's, or `reopen_run`'s for a run
        written earlier) and its layout. The run directory only reads `plan.layout`; the plan
        travels with it for whoever calls the stages' hooks (the report, reuse)."""
        self._plan = plan
        self._layout = plan.layout

    @property
    def plan(self) -> Any:
        """The RunPlan given by `use_plan` (None: opened with a layout only, or none)."""
        return self._plan

    @property
    def layout(self) -> RunLayout:
        """The run's data flow as data (engine.io.layout), given by whoever opened it: the
        driver's RunPlan, or `engine.stages.plan.reopen_run` for a run written earlier."""
        if self._layout is None:
            raise RunDirectoryError(f"{self.root}: opened without its layout; open it with "
                                    "engine.stages.plan.reopen_run (or give `layout=`) to read its rows")
        return self._layout

    # ----- opening -------------------------------------------------------------------------
    @classmethod
    def open_for_run(
        cls, root: str | Path, config_dict: dict[str, Any], config_hash: str, extra: dict[str, Any], resume: bool
    ) -> "RunDirectory":
        """Create a new run directory, or reopen one for `--resume` after checking its hash.

        The returned directory holds the writer's lock (`RunLock`) until `close()`: a second
        process on the same directory is refused, naming the holder.
        """
        root = Path(root)
        manifest_path = root / MANIFEST
        if resume and not manifest_path.exists():
            raise RunDirectoryError(
                f"--resume: {root} holds no run ({MANIFEST} is missing); start it without --resume, "
                "or give the --out of the run to continue"
            )
        if not manifest_path.exists() and root.exists() and any(p.name != LOCK_FILE for p in root.iterdir()):
            raise RunDirectoryError(f"{root} exists, is not empty and has no {MANIFEST}: choose an empty or new --out")
        lock = RunLock(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        except OSError as exc:  # a read-only disk, a folder of another user: say so, not a traceback
            raise RunDirectoryError(f"cannot write the run directory {root} ({exc.strerror or exc}): choose an --out "
                                    "on a disk and in a folder you can write to") from None
        try:
            return cls._open_locked(root, lock, config_dict, config_hash, extra, resume)
        except BaseException:
            lock.release()
            raise

    @classmethod
    def _open_locked(
        cls, root: Path, lock: RunLock, config_dict: dict[str, Any], config_hash: str, extra: dict[str, Any], resume: bool
    ) -> "RunDirectory":
        manifest_path = root / MANIFEST
        if manifest_path.exists():
            manifest = Manifest.load(manifest_path)
            old_hash = manifest.config_hash
            if old_hash != config_hash:
                raise RunDirectoryError(
                    f"{root} holds a run of another config or input (hash {old_hash}, this one {config_hash}); "
                    "a changed config never writes into an old run directory: choose a new --out"
                )
            if not resume:
                raise RunDirectoryError(f"{root} already holds this run ({manifest.status_text()}); pass --resume "
                                        "to continue it (committed parts are kept), or choose a new --out")
            removed = remove_stale_temps(root)
            if removed:
                logger.info("removed %d temp file(s) left by an interrupted run", removed)
            run = cls(root, manifest, lock)
            run._merge_markers()
            run._forget_lost_parts()
            # Failures of an earlier attempt are history: every failed or blocked part is retried now.
            earlier = run.manifest.start_resume()
            if earlier:
                logger.info("resume: retrying %d part(s) that failed or waited last time", earlier)
            run.save()
            return run
        run = cls(root, Manifest.new(config_dict, config_hash, extra), lock)
        run.save()
        return run

    def close(self) -> None:
        """Release the writer's lock (the run directory stays as it is)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @classmethod
    def open_existing(cls, root: str | Path, layout: RunLayout | None = None, plan: Any = None) -> "RunDirectory":
        """plan: the run's RunPlan (its layout is then the plan's; see `use_plan`)."""
        manifest_path = Path(root) / MANIFEST
        if not manifest_path.exists():
            raise RunDirectoryError(f"{root} is not a babelscore run directory (no {MANIFEST})")
        run = cls(root, Manifest.load(manifest_path), layout=layout)
        if plan is not None:
            run.use_plan(plan)
        run._merge_markers()
        return run

    # ----- completion markers --------------------------------------------------------------
    def marker_path(self, part_key: str) -> Path:
        return self.root / COMMITS / f"{part_key}.json"

    def _merge_markers(self) -> None:
        """Every committed part's record from its marker into the manifest's `parts` (the markers win)."""
        folder = self.root / COMMITS
        if not folder.is_dir():
            return
        for path in folder.rglob("*.json"):
            if path.name.startswith(".tmp-"):
                continue
            key = path.relative_to(folder).with_suffix("").as_posix()
            self.manifest.record_part(key, json.loads(path.read_text(encoding="utf-8")))

    def _forget_lost_parts(self) -> None:
        """On resume, a committed part whose file is gone or is not the file its marker recorded
        (deleted, lost or cut short in a copy of the run directory) is redone, never trusted:
        keeping it would lose its rows. One Parquet footer read per part."""
        lost = []
        for key, info in self.manifest.committed():
            if "file" not in info:
                continue
            try:
                rows = pq.read_metadata(self.root / info["file"]).num_rows
            except (OSError, ValueError, pa.ArrowException):
                rows = None
            if rows is None or ("rows" in info and rows != info["rows"]):
                lost.append(key)
        for key in lost:
            self.manifest.forget_part(key)
            self.marker_path(key).unlink(missing_ok=True)
        if lost:
            logger.warning("resume: %d committed part(s) have a missing or damaged file and are redone: %s",
                           len(lost), ", ".join(lost[:5]) + (" ..." if len(lost) > 5 else ""))

    # ----- manifest ------------------------------------------------------------------------
    def save(self) -> None:
        self.manifest.touch()
        write_json_atomic(self.root / MANIFEST, self.manifest.as_dict())

    def path(self, relative: str) -> Path:
        return self.root / relative

    def is_done(self, part_key: str) -> bool:
        return self.manifest.is_committed(part_key)

    def stage_done(self, stage: str) -> bool:
        return self.manifest.stage_done(stage)

    def mark_stage(self, stage: str, **info: Any) -> None:
        self.manifest.mark_stage(stage, **info)
        self.save()

    def commit_part(self, part_key: str, relative: str, table: pa.Table, schema: pa.Schema, info: dict[str, Any] | None = None) -> None:
        """Write a part's table atomically, then its completion marker: the marker is the commit
        point. O(1) bytes per commit: the manifest's summary is written by `save` later."""
        write_parquet_atomic(self.root / relative, table, schema)
        record = {"file": relative, "rows": table.num_rows, "at": now(), **(info or {})}
        write_json_atomic(self.marker_path(part_key), record)
        self.manifest.record_part(part_key, record)

    def record_failed_part(self, part_key: str, error: str, attempts: int) -> None:
        self.manifest.record_failure(part_key, error, attempts)
        self.save()

    def record_blocked_part(self, part_key: str, waits_for: list[str]) -> None:
        """A part that could not start because a part it reads failed; redone on resume."""
        self.manifest.record_blocked(part_key, waits_for)
        self.save()

    def part_files(self, prefix: str) -> list[Path]:
        """Committed part files whose key starts with `prefix`, in key order."""
        return [self.root / info["file"] for _, info in self.manifest.committed(prefix)]

    def read_parts(self, prefix: str, schema: pa.Schema, columns: Iterable[str] | None = None) -> pa.Table:
        files = self.part_files(prefix)
        cols = list(columns) if columns is not None else None
        if not files:
            empty = schema if cols is None else pa.schema([schema.field(c) for c in cols])
            return empty.empty_table()
        return pa.concat_tables([pq.read_table(f, columns=cols, schema=schema) for f in files])

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages the run lists (from the manifest's resolved config); every registered stage
        when the manifest names none (a run directory written by hand, e.g. in tests)."""
        return self.layout.stages

    def kind_files(self, kind: str) -> list[Path]:
        """Committed part files of the rows of `kind` (engine.stages.base: SAMPLES, SCORES, ...),
        from the stages that provide it as the run's layout says."""
        return [path for prefix in self.layout.prefixes(kind) for path in self.part_files(prefix)]

    def sample_tables(self, columns: Iterable[str] | None = None) -> Iterator[pa.Table]:
        """Every valid sample of the run, one table per part (the generated rows when a stage
        generates the samples).

        Streams: callers that need a statistic over all samples read part by part, and name
        the `columns` they need (the `source` column is most of a sample's bytes).
        """
        from engine.records import SAMPLE_SCHEMA

        cols = list(columns) if columns is not None else None
        schema = self.layout.sample_schema
        generated = self.kind_files(SAMPLES) if schema is not None else []
        if generated:
            for path in generated:
                yield pq.read_table(path, schema=schema, columns=cols)
            return
        for path in sorted(self.path("samples").glob("part-*.parquet")):
            yield pq.read_table(path, schema=SAMPLE_SCHEMA, columns=cols)

    def score_tables(self, columns: Iterable[str] | None = None) -> Iterator[pa.Table]:
        """The committed score parts, one table per part file (streams; see `score_dataset`)."""
        from engine.records import SCORE_SCHEMA

        cols = list(columns) if columns is not None else None
        for path in self.kind_files(SCORES):
            yield pq.read_table(path, schema=SCORE_SCHEMA, columns=cols)

    def score_dataset(self) -> Any:
        """The committed score parts as one `pyarrow.dataset.Dataset` (filtered reads per group)."""
        import pyarrow.dataset as ds

        from engine.records import SCORE_SCHEMA

        return ds.dataset([str(p) for p in self.kind_files(SCORES)], schema=SCORE_SCHEMA, format="parquet")

    def read_samples(self, columns: Iterable[str] | None = None) -> pa.Table:
        """Every valid sample as one table; for small runs and reports (prefer `sample_tables`)."""
        from engine.records import SAMPLE_SCHEMA

        tables = list(self.sample_tables(columns))
        if not tables:
            schema = SAMPLE_SCHEMA
            return schema.empty_table() if columns is None else pa.schema([schema.field(c) for c in columns]).empty_table()
        return pa.concat_tables(tables)

    def finish(self, status: str) -> None:
        self.manifest.set_status(status)
        self.save()

    def fail(self, reason: str) -> None:
        """The driver stopped on an error before the run ended: the status says failed, and why."""
        self.manifest.record_stop(reason)
        self.save()
