"""The run's manifest (`manifest.json`): what a run recorded, with one method per kind of record.

The driver is its only writer (engine.io.rundir holds the lock); readers open it through
`RunDirectory.open_existing`, which also writes it (atomically). It is a dict underneath so that `json` writes it as it is and a
pickled run directory travels to workers unchanged; the methods below are the interface, and
nothing outside this module indexes it or calls its dict methods (tests/stages/test_protocol_use.py):
identity (config, hash), status, committed parts, failures, stages, counts, signatures, models,
throughput. The file's layout is docs/running.md's "The run directory".
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

MANIFEST_FORMAT = 1
IDENTITIES_KEY = "reuse_identities"


def now() -> str:
    """The manifest's timestamps: UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Manifest(dict):
    """A run's manifest. Build one with `new` (a fresh run) or `load` (an existing file)."""

    @classmethod
    def new(cls, config: dict[str, Any], config_hash: str, extra: dict[str, Any] | None = None) -> "Manifest":
        return cls({
            "format": MANIFEST_FORMAT,
            "config": config,
            "config_hash": config_hash,
            "status": "running",
            "created": now(),
            "updated": now(),
            "parts": {},
            "failed_parts": {},
            "blocked_parts": {},
            "stages": {},
            "prepass": {},
            "counts": {},
            "signatures": {},
            **(extra or {}),
        })

    @classmethod
    def load(cls, path: Path) -> "Manifest":
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def touch(self) -> None:
        """Stamp the time of this write (RunDirectory.save writes the file)."""
        self["updated"] = now()

    # ----- identity -------------------------------------------------------------------------
    @property
    def config(self) -> dict[str, Any]:
        """The resolved config the run was started with ({} for a hand-written run directory)."""
        return self.get("config") or {}

    @property
    def config_hash(self) -> str | None:
        return self.get("config_hash")

    @property
    def config_stages(self) -> tuple[str, ...]:
        return tuple(self.config.get("stages", ()))

    @property
    def created(self) -> str | None:
        return self.get("created")

    @property
    def versions(self) -> dict[str, Any]:
        """The library versions the run was made with ({} for a hand-written run directory)."""
        return self.get("versions") or {}

    # ----- status ---------------------------------------------------------------------------
    @property
    def status(self) -> str | None:
        return self.get("status")

    def set_status(self, status: str) -> None:
        self["status"] = status
        if status != "failed":
            self.pop("failure", None)

    def record_stop(self, reason: str) -> None:
        """The driver stopped on an error before the run ended: the status says failed, and why."""
        self["failure"] = {"error": reason, "at": now()}
        self.set_status("failed")

    def status_text(self) -> str:
        """The status of a run found on disk, with why it failed, for a message that refuses to overwrite it."""
        status = self.get("status")
        failure = self.get("failure")
        if status == "failed" and failure:
            return f"status failed: {str(failure.get('error', ''))[:300]}"
        if status == "running":  # the caller holds the writer's lock, so the driver that wrote "running" is gone
            return "status running, but its driver stopped without finishing it"
        return f"status {status}"

    def start_resume(self) -> int:
        """Begin another attempt: earlier failures go to `failure_history`, every failed or
        blocked part is retried. Returns how many parts failed or waited last time."""
        earlier = {**self.failed_parts, **self.blocked_parts}
        if earlier:
            history = self.setdefault("failure_history", [])
            history.extend({"part": key, **info} for key, info in sorted(self.failed_parts.items()))
        self["failed_parts"] = {}
        self["blocked_parts"] = {}
        stopped = self.pop("failure", None)  # why the last attempt stopped: history too
        if stopped:
            self.setdefault("failure_history", []).append({"part": None, **stopped})
        self["status"] = "running"
        self["resumed"] = self.get("resumed", 0) + 1
        return len(earlier)

    # ----- committed parts ------------------------------------------------------------------
    @property
    def parts(self) -> dict[str, dict[str, Any]]:
        """Part key -> its commit record (`file`, `rows`, `at`, ...), as the markers say."""
        return self.setdefault("parts", {})

    def is_committed(self, part_key: str) -> bool:
        return part_key in self.parts

    def record_part(self, part_key: str, record: dict[str, Any]) -> None:
        """A committed part (its marker is written first: the marker is the commit point)."""
        self.parts[part_key] = record
        self.failed_parts.pop(part_key, None)

    def forget_part(self, part_key: str) -> None:
        self.parts.pop(part_key, None)

    def committed(self, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
        """(key, record) of the committed parts whose key starts with `prefix`, in key order."""
        return ((key, info) for key, info in sorted(self.parts.items()) if key.startswith(prefix))

    def committed_files(self) -> set[str]:
        """The run-relative files of every committed part."""
        return {info["file"] for info in self.parts.values() if "file" in info}

    def committed_rows(self, prefix: str) -> int:
        return sum(info["rows"] for _, info in self.committed(prefix))

    # ----- failures -------------------------------------------------------------------------
    @property
    def failed_parts(self) -> dict[str, dict[str, Any]]:
        return self.setdefault("failed_parts", {})

    @property
    def blocked_parts(self) -> dict[str, dict[str, Any]]:
        return self.setdefault("blocked_parts", {})

    def record_failure(self, part_key: str, error: str, attempts: int) -> None:
        self.failed_parts[part_key] = {"error": error, "attempts": attempts, "at": now()}

    def record_blocked(self, part_key: str, waits_for: list[str]) -> None:
        """A part that could not start because a part it reads failed; redone on resume."""
        self.blocked_parts[part_key] = {"waits_for": waits_for, "at": now()}

    # ----- stages and counts ----------------------------------------------------------------
    def stage_done(self, stage: str) -> bool:
        return bool(self.setdefault("stages", {}).get(stage, {}).get("done"))

    @property
    def stage_records(self) -> dict[str, dict[str, Any]]:
        """Stage -> what marking it done recorded (`done`, `at`, ...)."""
        return self.get("stages") or {}

    def mark_stage(self, stage: str, **info: Any) -> None:
        self.setdefault("stages", {})[stage] = {"done": True, "at": now(), **info}

    @property
    def counts(self) -> dict[str, int]:
        return self.setdefault("counts", {})

    def record_placement(self, part_key: str, where: dict[str, Any]) -> None:
        """Where a committed part was computed: node, host, process, attempts."""
        self.setdefault("placements", {})[part_key] = where

    def record_budget_stop(self, parts: list[str], reasons: list[str]) -> None:
        """The judges stopped at their spending caps: the parts left and why."""
        self["budget_stop"] = {"parts": parts, "reasons": reasons}

    @property
    def part_rows(self) -> list[int]:
        """Rows per input part, as prepare cut them."""
        return self.get("part_rows", [])

    def set_part_rows(self, sizes: list[int]) -> None:
        self["part_rows"] = sizes

    # ----- provenance: signatures, models, throughput ----------------------------------------
    @property
    def signatures(self) -> dict[str, Any]:
        """Task (`<task>` of a part key `<stage>/<task>/<index>`) -> its signatures."""
        return self.setdefault("signatures", {})

    def record_signatures(self, task: str, signatures: dict[str, Any]) -> None:
        self.signatures[task] = signatures

    def unsigned_tasks(self) -> list[str]:
        """`stage/task` of every task with committed rows and no signature."""
        with_rows = {key.rsplit("/", 1)[0] for key, info in self.parts.items() if info.get("rows")}
        return sorted(key for key in with_rows if not self.signatures.get(key.split("/", 1)[1]))

    @property
    def models(self) -> list[dict[str, Any]]:
        """Residency records: what was loaded, for which stage, in which process, when, its peak."""
        return self.get("models", [])

    def record_models(self, records: Iterable[dict[str, Any]]) -> None:
        self.setdefault("models", []).extend(records)

    @property
    def throughput(self) -> dict[str, Any]:
        """What the run measured: {stages, tasks, steps} ({} before any part was metered)."""
        return self.get("throughput") or {}

    def throughput_section(self) -> dict[str, Any]:
        """The throughput section to add to (kept across `--resume`), made on first use."""
        section = self.setdefault("throughput", {"stages": {}, "tasks": {}, "steps": {}})
        for key in ("stages", "tasks", "steps"):
            section.setdefault(key, {})
        return section

    def record_model_plan(self, plan: list[dict[str, Any]]) -> None:
        """Which models the run loads, where, and what each is estimated to need (before any work)."""
        self["model_plan"] = plan

    # ----- how the run was computed and what it lost -------------------------------------------
    def record_numerics(self, numerics: dict[str, Any]) -> None:
        """The resolved determinism settings every worker ran with."""
        self["numerics"] = numerics

    def record_thread_plan(self, plan: dict[str, Any]) -> None:
        """How the driver's thread pools were set up (sizes, wait policy): changes no number, explains speed."""
        self["thread_plan"] = plan

    @property
    def data_loss(self) -> dict[str, Any]:
        """How many input rows the run rejected, against its limit ({} before prepare)."""
        return self.get("data_loss") or {}

    def record_data_loss(self, record: dict[str, Any]) -> None:
        self["data_loss"] = record

    # ----- what stages and steps record --------------------------------------------------------
    def prepass_record(self, task: str) -> dict[str, Any] | None:
        """{file, hash} of a task's corpus prepass, once it ran."""
        return self.get("prepass", {}).get(task)

    def record_prepass(self, task: str, record: dict[str, Any]) -> None:
        self.setdefault("prepass", {})[task] = record

    @property
    def reuse_identities(self) -> dict[str, dict[str, str]]:
        """task -> {stage, identity}: what later runs reuse this run's rows by."""
        return dict(self.get(IDENTITIES_KEY, {}))

    def record_reuse_identities(self, identities: dict[str, dict[str, str]]) -> None:
        self[IDENTITIES_KEY] = identities

    @property
    def reuse(self) -> dict[str, Any] | None:
        """What this run reused from earlier runs (None without `reuse`)."""
        return self.get("reuse")

    def record_reuse(self, summary: dict[str, Any]) -> None:
        self["reuse"] = summary

    def stage_record(self, stage: str, default: dict[str, Any]) -> dict[str, Any]:
        """A driver stage's own section (named after the stage) to add to, made from `default`
        on first use; its contents are the stage's business."""
        return self.setdefault(stage, default)

    def recorded_by(self, stage: str) -> dict[str, Any]:
        """What a stage recorded in its own section ({} when it has not run)."""
        return self.get(stage) or {}
