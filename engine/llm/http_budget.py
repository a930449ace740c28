"""Spending caps of HTTP judges, and the answer cache that keeps every paid answer.

Caps (`max_prompt_tokens`, `max_completion_tokens`, `max_cost`, per judge and in `judge.budget`
for the run): every attempt reserves its worst case before it is sent (prompt tokens bounded
by its UTF-8 bytes plus a per-message allowance, completion by `max_tokens`) and settles it to
the reported usage when answered; one that may have been billed without an answer is charged its
worst case, one that cannot have been is released. A request that would pass a cap is not sent:
the part raises `BudgetExhaustedError` once the requests in flight are answered.

The cache: every answer (and a `charged` record per attempt billed without one) is appended to
RUN/judge_cache/<task>/p<part>-<id>.jsonl, keyed by the sha256 of the request body, before the
request counts as done; a part that runs again takes its answers from there. Caps and prices are
not part of the run's identity, so `--resume` with a raised cap continues. Details: docs/judges.md.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import threading
import uuid
from pathlib import Path
from typing import Any, Mapping

from engine.llm.requests import ChatRequest, ChatResponse

logger = logging.getLogger(__name__)
CACHE_DIR = "judge_cache"
CAP_KEYS = ("max_prompt_tokens", "max_completion_tokens", "max_cost")
TEMPLATE_TOKENS_PER_MESSAGE = 16  # role markers and separators a chat template adds around a message
TEMPLATE_TOKENS = 32  # the template's start and the generation prompt


@dataclasses.dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.cost + other.cost)

    def __sub__(self, other: "Usage") -> "Usage":
        return Usage(self.prompt_tokens - other.prompt_tokens, self.completion_tokens - other.completion_tokens,
                     self.cost - other.cost)


def cost_of(prompt_tokens: int, completion_tokens: int, price: Mapping[str, float] | None) -> float:
    """Cost at `price_per_million` ({input, output}); 0 without prices."""
    if not price:
        return 0.0
    return (prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1e6


def prompt_token_bound(messages: Any) -> int:
    """An upper bound of a chat prompt's tokens: UTF-8 bytes plus the template's allowance."""
    return TEMPLATE_TOKENS + sum(len(m["content"].encode("utf-8")) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages)


def request_hash(body: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclasses.dataclass(frozen=True)
class Caps:
    """Limits (None: none) and where they were set, for the message."""

    max_prompt_tokens: int | None = None
    max_completion_tokens: int | None = None
    max_cost: float | None = None
    where: str = ""

    @classmethod
    def of(cls, options: Any, where: str) -> "Caps":
        return cls(*(getattr(options, key) for key in CAP_KEYS), where=where)

    def passed_by(self, total: Usage) -> str | None:
        """The first cap `total` passes, as `max_cost 2.5 (at 2.61)`; None within all."""
        for key, value in zip(CAP_KEYS, (total.prompt_tokens, total.completion_tokens, total.cost)):
            cap = getattr(self, key)
            if cap is not None and value > cap:
                shown = f"{value:.4f}" if key == "max_cost" else f"{value:,}"
                return f"{self.where}.{key} {cap:g} (would reach {shown})"
        return None

    @property
    def any(self) -> bool:
        return any(getattr(self, key) is not None for key in CAP_KEYS)


class Ledger:
    """The spend of one run in this process: settled (the cache files), reserved (in flight)."""

    def __init__(self, root: Path):
        self.root = root
        self._lock = threading.Condition()
        self._files: dict[Path, tuple[int, dict[str, Usage]]] = {}  # file -> (size read, usage per task)
        self._since: dict[str, Usage] = {}  # per task: settled in this process since the last refresh
        self._reserved: dict[str, Usage] = {}
        self._in_flight = 0  # reservations not settled yet
        self.stopped: dict[tuple[str, Caps, Caps], str] = {}  # (task, its caps, run caps) -> why

    def refresh(self) -> None:
        """Re-read the cache files that are new or grew (other parts, other processes)."""
        with self._lock:
            for path in sorted((self.root / CACHE_DIR).glob("*/*.jsonl")):
                size = path.stat().st_size
                if self._files.get(path, (-1, {}))[0] == size:
                    continue
                per_task: dict[str, Usage] = {}
                for record in _records(path):
                    task = path.parent.name
                    prompt, completion = record.get("spent") or (record["prompt_tokens"], record["completion_tokens"])
                    per_task[task] = per_task.get(task, Usage()) + Usage(prompt, completion, record.get("cost", 0.0))
                self._files[path] = (size, per_task)
            self._since = {}

    def spent(self, task: str | None = None) -> Usage:
        """Settled spend of one task, or of every task (None)."""
        with self._lock:
            return self._settled(task)

    def _settled(self, task: str | None) -> Usage:
        total = Usage()
        for _size, per_task in self._files.values():
            for name, usage in per_task.items():
                if task is None or name == task:
                    total += usage
        for name, usage in self._since.items():
            if task is None or name == task:
                total += usage
        return total

    def reserve(self, task: str, need: Usage, caps: Caps, run_caps: Caps) -> str | None:
        """Reserve `need` for `task`; the cap it would pass instead (nothing reserved). While
        other requests hold reservations it waits for their answers (which cost less than their
        worst case) before it says no, so a judge stops only when the request does not fit at all."""
        with self._lock:
            while True:
                reserved_all = sum(self._reserved.values(), Usage())
                why = (caps.passed_by(self._settled(task) + self._reserved.get(task, Usage()) + need)
                       or run_caps.passed_by(self._settled(None) + reserved_all + need))
                if why is None:
                    self._reserved[task] = self._reserved.get(task, Usage()) + need
                    self._in_flight += 1
                    return None
                if not self._in_flight:
                    return why
                self._lock.wait()

    def settle(self, task: str, reserved: Usage, actual: Usage | None) -> None:
        """Replace a reservation by what the answer cost (None: nothing was paid)."""
        with self._lock:
            self._reserved[task] = self._reserved.get(task, Usage()) - reserved
            self._in_flight -= 1
            if actual is not None:
                self._since[task] = self._since.get(task, Usage()) + actual
            self._lock.notify_all()


_LEDGERS: dict[Path, Ledger] = {}
_LEDGERS_LOCK = threading.Lock()


def ledger_of(run_root: str | Path) -> Ledger:
    root = Path(run_root).resolve()
    with _LEDGERS_LOCK:
        ledger = _LEDGERS.setdefault(root, Ledger(root))
    ledger.refresh()
    return ledger


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                out.append(json.loads(line))
            except ValueError:  # a line cut by a crash: that answer is paid again, never misread
                continue
    return out


class AnswerCache:
    """One part's view of a task's cache: the answers earlier attempts of this part were paid for,
    and an append-only file of its own (flushed and synced per answer)."""

    def __init__(self, run_root: str | Path, task: str, part: int):
        self.folder = Path(run_root) / CACHE_DIR / task
        self.prefix = f"p{part:06d}-"
        self._lock = threading.Lock()
        self._handle = None
        self.answers: dict[str, dict[str, Any]] = {}
        if self.folder.is_dir():
            for path in sorted(self.folder.glob(f"{self.prefix}*.jsonl")):
                for record in _records(path):
                    if "charged" not in record:  # a charge without an answer: paid, nothing to reuse
                        self.answers[record["hash"]] = record

    def put(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            if self._handle is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._handle = open(self.folder / f"{self.prefix}{uuid.uuid4().hex[:12]}.jsonl", "a", encoding="utf-8")
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


@dataclasses.dataclass
class JudgeBudget:
    """What an HTTP judge part needs to spend within its caps and keep what it paid for."""

    run_root: Path
    task: str
    part: int
    caps: Caps
    run_caps: Caps
    price: Mapping[str, float] | None

    def __post_init__(self) -> None:
        self.ledger = ledger_of(self.run_root)
        self.cache = AnswerCache(self.run_root, self.task, self.part)
        self.refused: list[str] = []

    @property
    def key(self) -> tuple[str, Caps, Caps]:
        return self.task, self.caps, self.run_caps

    def worst_case(self, messages: Any, max_tokens: int) -> Usage:
        prompt = prompt_token_bound(messages)
        return Usage(prompt, max_tokens, cost_of(prompt, max_tokens, self.price))

    def reserve(self, need: Usage) -> bool:
        """Whether the request may be sent (its worst case is then reserved)."""
        if self.key in self.ledger.stopped:
            return False
        why = self.ledger.reserve(self.task, need, self.caps, self.run_caps)
        if why is not None:
            whose = "this judge" if why.startswith(self.caps.where + ".") else "all judges"
            spent = self.ledger.spent(self.task if whose == "this judge" else None)
            message = (f"the next request would pass {why} with its worst case reserved; spent so far by {whose}: "
                       f"{spent.prompt_tokens:,} prompt and {spent.completion_tokens:,} completion tokens"
                       + (f", cost {spent.cost:.4f}" if self.price else ""))
            self.ledger.stopped.setdefault(self.key, message)
            logger.warning("judge %s: stopping: %s", self.task, message)
            return False
        return True

    def settle(self, reserved: Usage, actual: Usage | None) -> None:
        self.ledger.settle(self.task, reserved, actual)
        if actual is not None and (actual.prompt_tokens > reserved.prompt_tokens
                                   or actual.completion_tokens > reserved.completion_tokens or actual.cost > reserved.cost):
            # the bound is bytes plus the template's allowance: a server that counts more is said loudly
            logger.error("judge %s: the server reported more than the worst case reserved (%s > %s)", self.task, actual,
                         reserved)

    def stop_reason(self) -> str | None:
        return self.ledger.stopped.get(self.key)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return cost_of(prompt_tokens, completion_tokens, self.price)

    def cached(self, request: ChatRequest, key: str) -> ChatResponse | None:
        """The answer an earlier attempt of this part paid for (body hash `key`), or None."""
        cached = self.cache.answers.get(key)
        if cached is None:
            return None
        return ChatResponse(request.request_id, cached["text"], cached["finish_reason"], cached["prompt_tokens"],
                            cached["completion_tokens"], cached["latency_s"])

    def charge(self, need: Usage, prompt_tokens: int | None, completion_tokens: int | None) -> Usage:
        """What an answer costs: its reported usage, each field it did not report at its worst case."""
        prompt = need.prompt_tokens if prompt_tokens is None else prompt_tokens
        completion = need.completion_tokens if completion_tokens is None else completion_tokens
        return Usage(prompt, completion, self.cost(prompt, completion))

    def keep(self, request: ChatRequest, key: str, need: Usage, answer: ChatResponse,
             reported: tuple[int | None, int | None]) -> None:
        """An answer the server gave: on disk before it counts as done (a crash loses no paid
        answer), then its reservation is settled at what it cost."""
        actual = self.charge(need, *reported)
        try:
            self.cache.put({"hash": key, "request_id": request.request_id, "text": answer.text,
                            "finish_reason": answer.finish_reason, "prompt_tokens": answer.prompt_tokens,
                            "completion_tokens": answer.completion_tokens, "latency_s": answer.latency_s,
                            "cost": actual.cost, "spent": [actual.prompt_tokens, actual.completion_tokens]})
        finally:
            self.settle(need, actual)

    def charge_unanswered(self, request: ChatRequest, key: str, need: Usage, why: str) -> None:
        """An attempt that may have reached the server (and be billed) but left no answer to keep
        (a dropped connection, a timeout after sending, an unreadable 200): charged its worst case,
        recorded in the cache folder (not as an answer) so a resumed run counts it too."""
        try:
            self.cache.put({"hash": key, "request_id": request.request_id, "charged": why, "cost": need.cost,
                            "spent": [need.prompt_tokens, need.completion_tokens]})
        finally:
            self.settle(need, need)

    def unsent(self, need: Usage) -> None:
        """An attempt that cannot have been billed (no connection, an HTTP error answer): its reservation goes."""
        self.settle(need, None)
