"""The run's manifest (`manifest.json`): what a run recorded, with one method per kind of record.

The driver is its only writer (engine.io.rundir holds the lock); readers open it through
`RunDirectory.open_existing`, which also writes it (atomically). `Manifest` holds the JSON
payload privately: every write goes through a `record_*`/`set_*` method and every read returns
a copy, so no caller changes what a run recorded behind the manifest's back (a section handed
out and changed later would reach the file at the next save, unannounced). `as_dict` is the
payload `json` writes; `Manifest(payload)` reads it back, so the file round-trips unchanged and a
pickled run directory travels to workers as it is. The records: identity (config, hash),
status, committed parts, failures, stages, counts, signatures, models, throughput. The file's
layout is docs/running.md's "The run directory".
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

MANIFEST_FORMAT = 1
IDENTITIES_KEY = "reuse_identities"
THROUGHPUT_KEYS = ("stages", "tasks", "steps")


def now() -> str:
    """The manifest's timestamps: UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _copy(value: Any) -> Any:
    """A copy of JSON data that shares no dict or list with `value` (tuples become lists, as in the file)."""
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(item) for item in value]
    return value


class Manifest:
    """A run's manifest. Build one with `new` (a fresh run) or `load` (an existing file);
    `Manifest(payload)` wraps a copy of a payload read elsewhere (a test's hand-written run)."""

    __slots__ = ("_payload",)

    def __init__(self, payload: Mapping[str, Any] | None = None) -> None:
        self._payload: dict[str, Any] = _copy(payload or {})

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

    def as_dict(self) -> dict[str, Any]:
        """The whole payload as the file holds it (a copy): what `RunDirectory.save` writes."""
        return _copy(self._payload)

    def __getstate__(self) -> dict[str, Any]:
        return self._payload

    def __setstate__(self, payload: dict[str, Any]) -> None:
        self._payload = payload

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Manifest) and other._payload == self._payload

    __hash__ = None  # type: ignore[assignment]  # it changes as the run records

    def __repr__(self) -> str:
        return f"Manifest(status={self.status!r}, parts={len(self._section('parts'))})"

    def _section(self, key: str) -> dict[str, Any]:
        """The payload's own mapping under `key` (made on first use): for this module's writers only."""
        return self._payload.setdefault(key, {})

    def touch(self) -> None:
        """Stamp the time of this write (RunDirectory.save writes the file)."""
        self._payload["updated"] = now()

    # ----- identity -------------------------------------------------------------------------
    @property
    def config(self) -> dict[str, Any]:
        """The resolved config the run was started with ({} for a hand-written run directory)."""
        return _copy(self._payload.get("config") or {})

    @property
    def config_hash(self) -> str | None:
        return self._payload.get("config_hash")

    @property
    def config_stages(self) -> tuple[str, ...]:
        return tuple((self._payload.get("config") or {}).get("stages", ()))

    @property
    def created(self) -> str | None:
        return self._payload.get("created")

    @property
    def versions(self) -> dict[str, Any]:
        """The library versions the run was made with ({} for a hand-written run directory)."""
        return _copy(self._payload.get("versions") or {})

    # ----- status ---------------------------------------------------------------------------
    @property
    def status(self) -> str | None:
        return self._payload.get("status")

    @property
    def failure(self) -> dict[str, Any] | None:
        """Why the driver stopped the run (`error`, `at`), while its status says failed."""
        return _copy(self._payload.get("failure"))

    @property
    def failure_history(self) -> list[dict[str, Any]]:
        """The failures of earlier attempts, kept by `start_resume`."""
        return _copy(self._payload.get("failure_history", []))

    @property
    def resumed(self) -> int:
        """How many times the run was resumed."""
        return self._payload.get("resumed", 0)

    def set_status(self, status: str) -> None:
        self._payload["status"] = status
        if status != "failed":
            self._payload.pop("failure", None)

    def record_stop(self, reason: str) -> None:
        """The driver stopped on an error before the run ended: the status says failed, and why."""
        self._payload["failure"] = {"error": reason, "at": now()}
        self.set_status("failed")

    def status_text(self) -> str:
        """The status of a run found on disk, with why it failed, for a message that refuses to overwrite it."""
        status = self._payload.get("status")
        failure = self._payload.get("failure")
        if status == "failed" and failure:
            return f"status failed: {str(failure.get('error', ''))[:300]}"
        if status == "running":  # the caller holds the writer's lock, so the driver that wrote "running" is gone
            return "status running, but its driver stopped without finishing it"
        return f"status {status}"

    def start_resume(self) -> int:
        """Begin another attempt: earlier failures go to `failure_history`, every failed or
        blocked part is retried. Returns how many parts failed or waited last time."""
        failed, blocked = self._section("failed_parts"), self._section("blocked_parts")
        earlier = {**failed, **blocked}
        if earlier:
            history = self._payload.setdefault("failure_history", [])
            history.extend({"part": key, **info} for key, info in sorted(failed.items()))
        self._payload["failed_parts"] = {}
        self._payload["blocked_parts"] = {}
        stopped = self._payload.pop("failure", None)  # why the last attempt stopped: history too
        if stopped:
            self._payload.setdefault("failure_history", []).append({"part": None, **stopped})
        self._payload["status"] = "running"
        self._payload["resumed"] = self._payload.get("resumed", 0) + 1
        return len(earlier)

    # ----- committed parts ------------------------------------------------------------------
    @property
    def parts(self) -> dict[str, dict[str, Any]]:
        """Part key -> its commit record (`file`, `rows`, `at`, ...), as the markers say."""
        return _copy(self._payload.get("parts") or {})

    def is_committed(self, part_key: str) -> bool:
        return part_key in self._section("parts")

    def record_part(self, part_key: str, record: Mapping[str, Any]) -> None:
        """A committed part (its marker is written first: the marker is the commit point)."""
        self._section("parts")[part_key] = _copy(record)
        self._section("failed_parts").pop(part_key, None)

    def forget_part(self, part_key: str) -> None:
        self._section("parts").pop(part_key, None)

    def committed(self, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
        """(key, record) of the committed parts whose key starts with `prefix`, in key order."""
        return ((key, _copy(info)) for key, info in sorted(self._section("parts").items()) if key.startswith(prefix))

    def committed_files(self) -> set[str]:
        """The run-relative files of every committed part."""
        return {info["file"] for info in self._section("parts").values() if "file" in info}

    def committed_rows(self, prefix: str) -> int:
        return sum(info["rows"] for key, info in self._section("parts").items() if key.startswith(prefix))

    # ----- failures -------------------------------------------------------------------------
    @property
    def failed_parts(self) -> dict[str, dict[str, Any]]:
        return _copy(self._payload.get("failed_parts") or {})

    @property
    def blocked_parts(self) -> dict[str, dict[str, Any]]:
        return _copy(self._payload.get("blocked_parts") or {})

    def record_failure(self, part_key: str, error: str, attempts: int) -> None:
        self._section("failed_parts")[part_key] = {"error": error, "attempts": attempts, "at": now()}

    def record_blocked(self, part_key: str, waits_for: list[str]) -> None:
        """A part that could not start because a part it reads failed; redone on resume."""
        self._section("blocked_parts")[part_key] = {"waits_for": list(waits_for), "at": now()}

    # ----- stages and counts ----------------------------------------------------------------
    def stage_done(self, stage: str) -> bool:
        return bool(self._section("stages").get(stage, {}).get("done"))

    @property
    def stage_records(self) -> dict[str, dict[str, Any]]:
        """Stage -> what marking it done recorded (`done`, `at`, ...)."""
        return _copy(self._payload.get("stages") or {})

    def mark_stage(self, stage: str, **info: Any) -> None:
        self._section("stages")[stage] = {"done": True, "at": now(), **_copy(info)}

    @property
    def counts(self) -> dict[str, Any]:
        """Row counts: prepare's (`input_rows`, `parts`, `rejected_by_reason`, ...) and each stage's `<stage>_rows`."""
        return _copy(self._payload.get("counts") or {})

    def record_counts(self, counts: Mapping[str, Any]) -> None:
        """Add or replace the counts named in `counts`; the others stay."""
        self._section("counts").update(_copy(counts))

    @property
    def placements(self) -> dict[str, dict[str, Any]]:
        """Part key -> where it was computed (node, host, process, attempts)."""
        return _copy(self._payload.get("placements") or {})

    def record_placement(self, part_key: str, where: Mapping[str, Any]) -> None:
        """Where a committed part was computed: node, host, process, attempts."""
        self._section("placements")[part_key] = _copy(where)

    @property
    def budget_stop(self) -> dict[str, Any] | None:
        """The parts the judges' spending caps left, and why (None: no cap stopped the run)."""
        return _copy(self._payload.get("budget_stop"))

    def record_budget_stop(self, parts: list[str], reasons: list[str]) -> None:
        """The judges stopped at their spending caps: the parts left and why."""
        self._payload["budget_stop"] = {"parts": list(parts), "reasons": list(reasons)}

    @property
    def part_rows(self) -> list[int]:
        """Rows per input part, as prepare cut them."""
        return list(self._payload.get("part_rows", []))

    def set_part_rows(self, sizes: list[int]) -> None:
        self._payload["part_rows"] = list(sizes)

    # ----- provenance: signatures, models, throughput ----------------------------------------
    @property
    def signatures(self) -> dict[str, Any]:
        """Task (`<task>` of a part key `<stage>/<task>/<index>`) -> its signatures."""
        return _copy(self._payload.get("signatures") or {})

    def record_signatures(self, task: str, signatures: Mapping[str, Any]) -> None:
        self._section("signatures")[task] = _copy(signatures)

    def unsigned_tasks(self) -> list[str]:
        """`stage/task` of every task with committed rows and no signature."""
        signatures = self._section("signatures")
        with_rows = {key.rsplit("/", 1)[0] for key, info in self._section("parts").items() if info.get("rows")}
        return sorted(key for key in with_rows if not signatures.get(key.split("/", 1)[1]))

    @property
    def models(self) -> list[dict[str, Any]]:
        """Residency records: what was loaded, for which stage, in which process, when, its peak."""
        return _copy(self._payload.get("models", []))

    def record_models(self, records: Iterable[Mapping[str, Any]]) -> None:
        self._payload.setdefault("models", []).extend(_copy(record) for record in records)

    @property
    def model_plan(self) -> list[dict[str, Any]]:
        """Which models the run loads, where, and their estimated needs ([] before the plan is recorded)."""
        return _copy(self._payload.get("model_plan", []))

    def record_model_plan(self, plan: list[dict[str, Any]]) -> None:
        """Which models the run loads, where, and what each is estimated to need (before any work)."""
        self._payload["model_plan"] = _copy(plan)

    @property
    def throughput(self) -> dict[str, Any]:
        """What the run measured: {stages, tasks, steps} ({} before any part was metered)."""
        return _copy(self._payload.get("throughput") or {})

    def throughput_section(self) -> dict[str, Any]:
        """The throughput recorded so far (kept across `--resume`) with its three sections, to add
        to and give back to `record_throughput`."""
        section = self.throughput
        for key in THROUGHPUT_KEYS:
            section.setdefault(key, {})
        return section

    def record_throughput(self, section: Mapping[str, Any]) -> None:
        """The run's throughput totals (engine.throughput.Recorder sums them)."""
        self._payload["throughput"] = _copy(section)

    # ----- how the run was computed and what it lost -------------------------------------------
    @property
    def numerics(self) -> dict[str, Any]:
        """The determinism settings every worker ran with ({} before the run started)."""
        return _copy(self._payload.get("numerics") or {})

    def record_numerics(self, numerics: Mapping[str, Any]) -> None:
        """The resolved determinism settings every worker ran with."""
        self._payload["numerics"] = _copy(numerics)

    @property
    def thread_plan(self) -> dict[str, Any]:
        """How the driver's thread pools were set up ({} before the run started)."""
        return _copy(self._payload.get("thread_plan") or {})

    def record_thread_plan(self, plan: Mapping[str, Any]) -> None:
        """How the driver's thread pools were set up (sizes, wait policy): changes no number, explains speed."""
        self._payload["thread_plan"] = _copy(plan)

    @property
    def data_loss(self) -> dict[str, Any]:
        """How many input rows the run rejected, against its limit ({} before prepare)."""
        return _copy(self._payload.get("data_loss") or {})

    def record_data_loss(self, record: Mapping[str, Any]) -> None:
        self._payload["data_loss"] = _copy(record)

    # ----- what stages and steps record --------------------------------------------------------
    def prepass_record(self, task: str) -> dict[str, Any] | None:
        """{file, hash} of a task's corpus prepass, once it ran."""
        return _copy(self._payload.get("prepass", {}).get(task))

    def record_prepass(self, task: str, record: Mapping[str, Any]) -> None:
        self._section("prepass")[task] = _copy(record)

    @property
    def reuse_identities(self) -> dict[str, dict[str, str]]:
        """task -> {stage, identity}: what later runs reuse this run's rows by."""
        return _copy(self._payload.get(IDENTITIES_KEY, {}))

    def record_reuse_identities(self, identities: Mapping[str, Mapping[str, str]]) -> None:
        self._payload[IDENTITIES_KEY] = _copy(identities)

    @property
    def reuse(self) -> dict[str, Any] | None:
        """What this run reused from earlier runs (None without `reuse`)."""
        return _copy(self._payload.get("reuse"))

    def record_reuse(self, summary: Mapping[str, Any] | None) -> None:
        self._payload["reuse"] = _copy(summary)

    def stage_record(self, stage: str, default: Mapping[str, Any]) -> dict[str, Any]:
        """A driver stage's own section (named after the stage), recorded from `default` on first
        use; a copy to add to and give back to `record_stage_section`. Its contents are the stage's business."""
        if stage not in self._payload:
            self._payload[stage] = _copy(default)
        return _copy(self._payload[stage])

    def record_stage_section(self, stage: str, section: Mapping[str, Any]) -> None:
        """Replace a driver stage's own section (see `stage_record`)."""
        self._payload[stage] = _copy(section)

    def recorded_by(self, stage: str) -> dict[str, Any]:
        """What a stage recorded in its own section ({} when it has not run)."""
        return _copy(self._payload.get(stage) or {})
