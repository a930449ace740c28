"""The earlier runs a run takes results from, and what each of them finished.

Only committed parts count (`RunDirectory.part_files`): a failed, blocked or absent part of an
earlier run has no file there, so nothing of it is ever reused. Error rows are left out when
the index is built: their cause may be fixed, so they are computed again.

The driver opens the earlier runs once (refusing one whose writer's lock is held, and holding
a shared lock on each for the whole run); workers, local or Ray, read them through the same
paths (a shared filesystem under Ray) and build each index once per process.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow.parquet as pq

from engine.errors import RunDirectoryError
from engine.io.lock import ReaderLock
from engine.io.rundir import RunDirectory
from engine.reuse.keys import generation_input_hash, item_hash

logger = logging.getLogger(__name__)


# Reopens an earlier run directory with its plan attached (engine.stages.plan.reopen_run,
# handed in by part execution: reuse sits below the plan).
Reopen = Callable[[Path], RunDirectory]


@dataclass(frozen=True)
class ScoreHit:
    value: float
    signature: str
    run: str  # the earlier run, as the config or command line named it


def _part_index(path: Path) -> int:
    """Part index from a part file name `<task>__part-00003.parquet`."""
    return int(path.stem.rsplit("__part-", 1)[1])


def _task_of(path: Path) -> str:
    return path.stem.rsplit("__part-", 1)[0]


class EarlierRun:
    """One earlier run directory, read only."""

    def __init__(self, label: str, root: Path, reopen: Reopen | None = None):
        """reopen: opens that run with its plan (None: only its manifest and committed files are
        read, as the driver's checks do)."""
        self.label = label
        self.root = root
        self.run = reopen(root) if reopen is not None else RunDirectory.open_existing(root)
        self._item_hashes: dict[tuple[str, str], str | None] | None = None

    @property
    def identities(self) -> dict[str, dict[str, str]]:
        """task -> {stage, identity}, as that run recorded them (empty for runs made before reuse)."""
        return self.run.manifest.reuse_identities

    def tasks_with_identity(self, identity: str) -> list[str]:
        """That run's tasks of this identity (an identity digest covers its stage too)."""
        return sorted(t for t, d in self.identities.items() if d.get("identity") == identity)

    def committed_files(self, task: str) -> list[Path]:
        stage = self.identities[task]["stage"]
        return self.run.part_files(f"{stage}/{task}/")

    # ----- the scored items of that run, by (sample_id, noise) ------------------------------
    def item_hashes(self, items_of: Any) -> dict[tuple[str, str], str | None]:
        """(sample_id, noise) -> content hash of the item that run scored (None: ambiguous).

        Rebuilt from that run's own committed inputs: its samples (or generated rows), noise
        and perturbation parts, exactly as its score stage built its items (`items_of`: the
        score stage's item builder, `(samples, extra predictions) -> items`).
        """
        if self._item_hashes is None:
            out: dict[tuple[str, str], str | None] = {}
            extra = self._extra_predictions()
            for table in self.run.sample_tables():
                for item in items_of(table, extra):
                    if item.prediction is None:
                        continue
                    key = (item.sample_id, item.noise)
                    out[key] = None if key in out else item_hash(item)
            self._item_hashes = out
        return self._item_hashes

    def _extra_predictions(self) -> dict[str, list[dict[str, Any]]]:
        """That run's scored candidates (noise, perturbations, ...) by sample_id, read from the
        stages its config listed that provide candidates (that run's plan)."""
        by_sample: dict[str, list[dict[str, Any]]] = {}
        for provider in self.run.plan.candidate_stages():
            for path in self.run.part_files(f"{provider.name}/"):
                table = provider.as_candidates(pq.read_table(path, schema=provider.schema))
                for row in table.to_pylist():
                    by_sample.setdefault(row["sample_id"], []).append(row)
        return by_sample

    def score_rows(self, task: str) -> Iterator[dict[str, Any]]:
        """Every finished, non-error row of a score task of that run."""
        from engine.records import SCORE_SCHEMA

        columns = ["sample_id", "noise", "metric", "context", "variant", "value", "signature", "error"]
        for path in self.committed_files(task):
            for row in pq.read_table(path, schema=SCORE_SCHEMA, columns=columns).to_pylist():
                if row["error"] is None:
                    yield row

    def generation_rows(self, task: str) -> Iterator[dict[str, Any]]:
        """Every finished generation of a generate task of that run without a generation error."""
        from engine.records import GENERATION_SCHEMA

        for path in self.committed_files(task):
            for row in pq.read_table(path, schema=GENERATION_SCHEMA).to_pylist():
                if row["generation_error"] is None:
                    yield row


class ReuseSources:
    """The earlier runs of one run, with per-process indexes over their finished rows."""

    def __init__(self, runs: list[EarlierRun]):
        self.runs = runs
        self._lock = threading.Lock()
        self._score: dict[str, dict[tuple[str, str, str, str], ScoreHit]] = {}
        self._generate: dict[str, dict[str, tuple[dict[str, Any], str]]] = {}

    @classmethod
    def open(cls, paths: tuple[str, ...], reopen: Reopen) -> "ReuseSources":
        return cls([EarlierRun(p, Path(p), reopen) for p in paths])

    def rows_with_identity(self, identity: str, schema: Any) -> Iterator[tuple[dict[str, Any], str]]:
        """(row, earlier run's label) of every committed row of that identity's tasks, earlier
        runs in the order given: the generic reader a stage's own row matching starts from."""
        for earlier in self.runs:
            for task in earlier.tasks_with_identity(identity):
                for path in earlier.committed_files(task):
                    for row in pq.read_table(path, schema=schema).to_pylist():
                        yield row, earlier.label

    def score_index(self, identity: str, items_of: Any) -> dict[tuple[str, str, str, str], ScoreHit]:
        """(item hash, metric, context, variant) -> the earlier value and its signature
        (`items_of`: the score stage's item builder, see `EarlierRun.item_hashes`).

        The first earlier run (in the order given) that has a row wins; an ambiguous item
        (two items of one sample_id and noise in that run) is never indexed.
        """
        with self._lock:
            if identity in self._score:
                return self._score[identity]
        index: dict[tuple[str, str, str, str], ScoreHit] = {}
        for earlier in self.runs:
            tasks = earlier.tasks_with_identity(identity)
            if not tasks:
                continue
            hashes = earlier.item_hashes(items_of)
            for task in tasks:
                for row in earlier.score_rows(task):
                    content = hashes.get((row["sample_id"], row["noise"]))
                    if content is None:
                        continue
                    index.setdefault(
                        (content, row["metric"], row["context"], row["variant"]),
                        ScoreHit(row["value"], row["signature"], earlier.label),
                    )
        with self._lock:
            self._score[identity] = index
        return index

    def generation_index(self, identity: str) -> dict[str, tuple[dict[str, Any], str]]:
        """Input-row hash -> (the earlier generated row, the earlier run) for one generator identity."""
        with self._lock:
            if identity in self._generate:
                return self._generate[identity]
        index: dict[str, tuple[dict[str, Any], str]] = {}
        for earlier in self.runs:
            for task in earlier.tasks_with_identity(identity):
                for row in earlier.generation_rows(task):
                    index.setdefault(generation_input_hash(row), (row, earlier.label))
        with self._lock:
            self._generate[identity] = index
        return index


# Per process: workers (local or Ray actors) build each earlier run's index once.
_SOURCES: dict[tuple[str, ...], ReuseSources] = {}
_SOURCES_LOCK = threading.Lock()


def sources_for(paths: tuple[str, ...], reopen: Reopen) -> ReuseSources:
    with _SOURCES_LOCK:
        if paths not in _SOURCES:
            _SOURCES[paths] = ReuseSources.open(paths, reopen)
        return _SOURCES[paths]


def forget_sources() -> None:
    """Drop the cached indexes (a driver that runs several runs in one process, tests)."""
    with _SOURCES_LOCK:
        _SOURCES.clear()


def hold_earlier_runs(paths: tuple[str, ...], out: str | Path) -> list[ReaderLock]:
    """Driver side: check every earlier run and hold a shared lock on each (released by the caller)."""
    out_root = Path(out).resolve()
    locks: list[ReaderLock] = []
    try:
        for path in paths:
            root = Path(path)
            if root.resolve() == out_root:
                raise RunDirectoryError(f"--reuse {path}: that is this run's own --out; name earlier runs only")
            if not (root / "manifest.json").is_file():
                raise RunDirectoryError(f"--reuse {path}: not a babelscore run directory (no manifest.json); give an earlier run's --out")
            lock = ReaderLock(root, f"--reuse {path}")
            lock.acquire()
            locks.append(lock)
            earlier = EarlierRun(path, root)
            if not earlier.identities:
                logger.warning("--reuse %s: that run records no task identities (made before reuse existed, or it "
                               "stopped before its first stage ended); nothing of it can be reused", path)
    except BaseException:
        for lock in locks:
            lock.release()
        raise
    return locks
