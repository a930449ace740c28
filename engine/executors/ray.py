"""Ray executor: the parts of the local executor, computed on a Ray cluster (laptop or many nodes).

Model-free parts run as Ray tasks on any CPU; a model's parts run in a fixed-size pool of
actors that keep the model loaded, one model after another (model-major). Workers only
compute: every result comes back to this process (the driver), which alone commits part files
and the manifest, so a worker killed mid-part leaves nothing behind. Parts lost to a dead worker
or node are resubmitted up to `max_retries` times; an exception of the part's own code fails it
at once unless it is a `TransientError`. Workers read the run directory, so on several nodes it
must be on a shared filesystem. The layout, faults and options: docs/cluster.md.
"""
from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import ray
from ray.exceptions import AuthenticationError, RayActorError, RayError, RaySystemError, RayTaskError

from engine.errors import ClusterError
from engine.executors.base import CommitFn, FailFn, RetryPolicy
from engine.executors.cluster import check_token_file, connection_error, host_port, lost_error, probe, summary
from engine.executors.head_watch import HEAD_CHECK_EVERY_S, HeadWatch
from engine.executors.params import RayOptions
from engine.executors.ray_parts import PartCall, Queue, apply_env, driver_env, split_parts
from engine.part_execution import PartTask, execute_part
from engine.progress import progress_bar
from engine.stages.plan import RunPlan

logger = logging.getLogger(__name__)

_SETTLE_TIMEOUT_S = 60.0  # how long to wait for the other calls of an actor that just died


# ----- worker side ----------------------------------------------------------------------------
Result = tuple[pa.Table, dict[str, Any]]  # the part's table, and where it was computed


def _compute(run_root: str, plan: RunPlan, part: PartTask, prepass: dict[str, Any], env: dict[str, str]) -> Result:
    apply_env(env)
    table = execute_part(run_root, plan, part, prepass)
    where = {"node_id": ray.get_runtime_context().get_node_id(), "hostname": socket.gethostname(), "pid": os.getpid(),
             "gpu_ids": [str(g) for g in ray.get_gpu_ids()]}
    return table, where


@ray.remote(max_retries=0)
def _part_task(run_root: str, plan: RunPlan, part: PartTask, prepass: dict[str, Any], env: dict[str, str]) -> Result:
    return _compute(run_root, plan, part, prepass, env)


@ray.remote(max_restarts=0, max_task_retries=0)
class _ModelWorker:
    """Runs the parts of one model; the model stays loaded between parts."""

    def __init__(self, model_key: str):
        self.model_key = model_key

    def ready(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def run(self, run_root: str, plan: RunPlan, part: PartTask, prepass: dict[str, Any], env: dict[str, str]) -> Result:
        return _compute(run_root, plan, part, prepass, env)

    def release(self) -> list[dict[str, Any]]:
        """Free this actor's models (ending vLLM worker processes) and return their residency records."""
        from engine.runtime.model_registry import model_registry

        model_registry().release_all()
        return model_registry().take_records()


# ----- driver side ----------------------------------------------------------------------------
class _ActorPool:
    """A fixed number of actor slots for one model; a dead actor is replaced in its slot."""

    def __init__(self, model_key: str, size: int, options: dict[str, Any]):
        self.model_key = model_key
        self.options = options
        self.actors: list[Any] = [None] * size
        self.generation = [0] * size
        self.ready = [False] * size
        self.ready_refs: dict[Any, int] = {}
        self.in_flight = [0] * size
        self.creation_failures = 0
        for slot in range(size):
            self._start(slot)

    def _start(self, slot: int) -> None:
        actor = _ModelWorker.options(**self.options).remote(self.model_key)
        self.actors[slot] = actor
        self.ready[slot] = False
        self.ready_refs[actor.ready.remote()] = slot

    def replace(self, slot: int) -> None:
        ray.kill(self.actors[slot], no_restart=True)
        self.generation[slot] += 1
        self.in_flight[slot] = 0
        self._start(slot)

    def free_slot(self, limit: int) -> int | None:
        candidates = [s for s in range(len(self.actors)) if self.ready[s] and self.in_flight[s] < limit]
        return min(candidates, key=lambda s: self.in_flight[s]) if candidates else None

    def close(self, records: list[dict[str, Any]] | None = None) -> None:
        """Kill the actors; with `records`, first let the ready ones free their models and
        append what they report (a killed actor's worker processes die with it either way)."""
        if records is not None:
            refs = [actor.release.remote() for slot, actor in enumerate(self.actors) if self.ready[slot]]
            try:
                for result in ray.get(refs, timeout=_SETTLE_TIMEOUT_S):
                    records.extend(result)
            except RayError as exc:
                logger.warning("model %s: an actor did not report its models (%s)", self.model_key, _error_text(exc))
        for actor in self.actors:
            ray.kill(actor, no_restart=True)


def _check_token(address: str) -> None:
    """Ask the head once whether it accepts this driver's token: `ray.init` asks 20 times over
    20 s, each refusal a C++ warning on the console, before it gives up. Anything but a
    refusal (a GCS still starting, another service) is left to `ray.init` and its retries."""
    if host_port(address) is None:
        return
    try:
        from ray._raylet import GcsClient  # no public API connects without starting the driver
    except ImportError:
        return
    try:
        GcsClient(address=address)
    except AuthenticationError:
        raise
    except Exception:  # noqa: BLE001 - the real connection reports anything else
        return


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, RayTaskError) and exc.cause is not None:
        cause = exc.cause
        text = f"{type(cause).__name__}: {cause}"
        if isinstance(cause, FileNotFoundError):
            text += " (on several nodes, the run directory must be on a filesystem every node mounts at the same path)"
        return text
    return f"{type(exc).__name__}: {summary(exc)}"


class RayExecutor:
    """Executor protocol (engine.executors.base) on Ray. `placements` records where parts ran."""

    name = "ray"

    def __init__(self, address: str | None = None, options: RayOptions | None = None, **option_values: Any):
        if options is not None and option_values:
            raise TypeError("give RayOptions or keyword options, not both")
        self.address = address
        self.options = options or RayOptions(**option_values)
        self.retry = RetryPolicy(self.options.max_retries + 1, self.options.retry_exceptions)
        self.placements: dict[str, dict[str, Any]] = {}
        self.models_started: list[str] = []  # model keys in the order their pools were made
        self.model_records: list[dict[str, Any]] = []  # residency records the actors reported
        self._owns_ray = False

    # ----- connection ------------------------------------------------------------------------
    def _connect(self) -> None:
        if ray.is_initialized():
            return
        opts = self.options
        try:
            if self.address:
                probe(self.address)
                check_token_file(self.address)  # before _check_token: Ray aborts the process on a bad file
                _check_token(self.address)
                logger.info("connecting to the Ray cluster at %s", self.address)
                ray.init(address=self.address, logging_level=logging.WARNING)
            else:  # a new local instance, or the cluster named by RAY_ADDRESS (set by `ray job submit`)
                local = {} if os.environ.get("RAY_ADDRESS") else {
                    "num_cpus": opts.num_cpus, "object_store_memory": opts.object_store_memory,
                    "include_dashboard": opts.include_dashboard,
                }
                ray.init(logging_level=logging.WARNING, **local)
        except ClusterError:
            raise
        except (AuthenticationError, ConnectionError, RuntimeError, RayError, OSError) as exc:
            if ray.is_initialized():
                ray.shutdown()
            raise connection_error(self.address or os.environ.get("RAY_ADDRESS") or "a local Ray", exc) from None
        self._owns_ray = True
        resources = ray.cluster_resources()
        nodes = len([n for n in ray.nodes() if n.get("Alive")])
        gpus = resources.get(opts.gpu_resource, 0)
        logger.info("Ray: %d node(s), %g CPU, %g %s", nodes, resources.get("CPU", 0), gpus, opts.gpu_resource)

    def _task_options(self) -> dict[str, Any]:
        return {"num_cpus": self.options.num_cpus_per_task}

    def _actor_options(self) -> tuple[dict[str, Any], int]:
        """Ray options of a model actor and the pool size."""
        units = ray.cluster_resources().get(self.options.gpu_resource, 0.0)
        if units <= 0:
            logger.info("the cluster has no %r resource: model actors run on CPUs", self.options.gpu_resource)
        return self.options.actor_request(units)

    def _max_tasks_in_flight(self) -> int:
        if self.options.max_tasks_in_flight:
            return self.options.max_tasks_in_flight
        return self.options.task_limit(ray.cluster_resources().get("CPU", 1.0))

    # ----- the protocol ----------------------------------------------------------------------
    def run_parts(
        self,
        run_root: str,
        plan: RunPlan,
        parts: Sequence[PartTask],
        prepass: dict[str, Any],
        commit: CommitFn,
        fail: FailFn,
        rows_per_part: Sequence[int],
    ) -> None:
        if not parts:
            return
        self._connect()
        try:
            run = StageRun(self, os.path.abspath(run_root), plan, parts, prepass, commit, fail, rows_per_part)
            with progress_bar(parts[0].stage, sum(rows_per_part[p.index] for p in parts), len(parts)) as bar:
                run.bar = bar
                try:
                    run.loop()
                finally:
                    run.abandon()
        except (RaySystemError, ConnectionError, AuthenticationError) as exc:  # the driver's own link to the cluster
            raise lost_error(self.address, exc) from None

    def take_model_records(self) -> list[dict[str, Any]]:
        records, self.model_records = self.model_records, []
        return records

    def close(self) -> None:
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
        self._owns_ray = False


class StageRun:
    """The driver loop of one stage: submit, wait, commit or retry, model group by model group."""

    def __init__(self, executor: RayExecutor, run_root: str, plan: RunPlan, parts: Sequence[PartTask],
                 prepass: dict[str, Any], commit: CommitFn, fail: FailFn, rows_per_part: Sequence[int]):
        self.ex = executor
        self.opts = executor.options
        self.retry = executor.retry
        self.run_root = run_root
        self.commit = commit
        self.fail = fail
        self.rows_per_part = rows_per_part
        self.bar: Any = None
        # Shared by every call: put once, not serialised per part.
        self.plan_ref = ray.put(plan)  # the RunPlan travels in place of the config
        self.info_ref = ray.put(prepass)
        self.tasks, self.groups = split_parts(parts)
        self.pool: _ActorPool | None = None
        self.pool_queue: Queue = deque()
        self.calls: dict[Any, PartCall] = {}
        self.task_limit = executor._max_tasks_in_flight()
        self.task_options = executor._task_options()
        self.env = driver_env()
        self.seq = 0
        self.finished: set[str] = set()
        self.watch = HeadWatch(executor.address)

    # ----- submitting ------------------------------------------------------------------------
    def _next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def _submit(self) -> None:
        running_tasks = sum(1 for c in self.calls.values() if c.slot is None)
        while self.tasks and running_tasks < self.task_limit:
            part, attempt = self.tasks.popleft()
            ref = _part_task.options(**self.task_options).remote(self.run_root, self.plan_ref, part, self.info_ref, self.env)
            self.calls[ref] = PartCall(part, attempt, self._next_seq())
            running_tasks += 1
        if self.pool is None and self.groups:
            model_key, queue = self.groups.popleft()
            options, size = self.ex._actor_options()
            size = min(size, len(queue))
            logger.info("model %s: %d part(s) on %d actor(s)", model_key, len(queue), size)
            self.pool = _ActorPool(model_key, size, options)
            self.pool_queue = queue
            self.ex.models_started.append(model_key)
        pool = self.pool
        while pool is not None and self.pool_queue:
            slot = pool.free_slot(self.opts.max_in_flight_per_actor)
            if slot is None:
                break
            part, attempt = self.pool_queue.popleft()
            ref = pool.actors[slot].run.remote(self.run_root, self.plan_ref, part, self.info_ref, self.env)
            self.calls[ref] = PartCall(part, attempt, self._next_seq(), slot, pool.generation[slot])
            pool.in_flight[slot] += 1

    def _maybe_close_pool(self) -> None:
        if self.pool is not None and not self.pool_queue and not any(c.slot is not None for c in self.calls.values()):
            self.pool.close(self.ex.model_records)
            self.pool = None

    # ----- the loop --------------------------------------------------------------------------
    def loop(self) -> None:
        while True:
            self._submit()
            self._maybe_close_pool()
            if self.pool is None and self.groups:
                continue
            waiting = list(self.calls) + (list(self.pool.ready_refs) if self.pool else [])
            if not waiting:
                return
            ready, _ = ray.wait(waiting, num_returns=1, timeout=HEAD_CHECK_EVERY_S)
            # Checked on a clock, not only when nothing finished: actors on a node that survives
            # keep finishing parts after the head is gone, and Ray ends the driver a minute later.
            self.watch.check_due(force=not ready)
            if not ready:
                if self.watch.idle():  # nothing finished for a while (the head was checked above)
                    self._log_waiting()
                continue
            self.watch.busy()
            for ref in ready:
                if self.pool is not None and ref in self.pool.ready_refs:
                    self._actor_ready(ref)
                elif ref in self.calls:
                    self._result(ref)

    def _log_waiting(self) -> None:
        """Nothing finished for a while: say what is outstanding (e.g. actors waiting for GPUs)."""
        pool = self.pool
        starting = len(pool.ready_refs) if pool else 0
        logger.warning(
            "still waiting: %d part(s) running, %d queued%s", len(self.calls), len(self.tasks) + len(self.pool_queue),
            f"; {starting} actor(s) of model {pool.model_key} not started yet (is enough "
            f"{self.opts.gpu_resource!r} free in the cluster? `ray status` shows it)" if pool and starting else "",
        )

    def _actor_ready(self, ref: Any) -> None:
        pool = self.pool
        assert pool is not None
        slot = pool.ready_refs.pop(ref)
        try:
            ray.get(ref)
        except RayError as exc:
            self.watch.check()
            pool.creation_failures += 1
            logger.warning("model %s: an actor could not start (%s)", pool.model_key, _error_text(exc))
            if self.retry.try_again(pool.creation_failures, retried=True):
                pool.generation[slot] += 1
                pool._start(slot)
            elif not any(pool.ready) and not pool.ready_refs:  # no actor left to run this model's parts
                for part, attempt in self.pool_queue:
                    self._give_up(part, f"no actor of this model could start: {_error_text(exc)}", attempt)
                self.pool_queue.clear()
            return
        pool.ready[slot] = True

    def _result(self, ref: Any) -> None:
        call = self.calls.pop(ref)
        if call.slot is not None and self.pool is not None and call.generation == self.pool.generation[call.slot]:
            self.pool.in_flight[call.slot] -= 1
        try:
            table, where = ray.get(ref)
        except RayActorError as exc:
            self.watch.check()  # an actor that died with the head is no part's fault
            self._actor_died(call, exc)
            return
        except RayTaskError as exc:  # the part's own code raised; a TransientError is worth another try
            self._retry_or_fail(call, exc, charged=True, retried=self.retry.is_retried(exc.cause))
            return
        except RayError as exc:  # worker crashed, node died, object lost: system failures
            self.watch.check()
            self._retry_or_fail(call, exc, charged=True, retried=True)
            return
        self._done(call, table, where)

    def _done(self, call: PartCall, table: pa.Table, where: dict[str, Any]) -> None:
        key = call.part.key
        if key in self.finished:  # cannot happen with one call per part; never commit twice
            logger.warning("part %s came back twice; the second result is dropped", key)
            return
        self.commit(call.part, table)
        self.finished.add(key)
        self.ex.placements[key] = {**where, "attempts": call.attempt, "actor": call.slot is not None}
        self.bar.update(self.rows_per_part[call.part.index])

    def _actor_died(self, first: PartCall, exc: RayActorError) -> None:
        """Settle every call of the dead actor; charge an attempt only to the one it was running."""
        assert first.slot is not None and self.pool is not None
        pool, slot, generation = self.pool, first.slot, first.generation
        if generation == pool.generation[slot]:
            logger.warning("model %s: actor %d died (%s); replacing it", pool.model_key, slot, _error_text(exc))
            pool.replace(slot)
        siblings = {r: c for r, c in self.calls.items() if c.slot == slot and c.generation == generation}
        for r in siblings:
            del self.calls[r]
        done, _ = ray.wait(list(siblings), num_returns=len(siblings), timeout=_SETTLE_TIMEOUT_S) if siblings else ([], [])
        failed = [first]
        for r, call in siblings.items():
            if r in done:
                try:
                    table, where = ray.get(r)
                except RayError:
                    failed.append(call)
                    continue
                self._done(call, table, where)
            else:
                failed.append(call)
        running = min(failed, key=lambda c: c.seq)  # an actor runs its calls in submission order
        for call in sorted(failed, key=lambda c: c.seq, reverse=True):  # requeued at the front, in order
            self._retry_or_fail(call, exc, charged=call is running, retried=True)

    def _retry_or_fail(self, call: PartCall, exc: BaseException, charged: bool, retried: bool) -> None:
        """retried: whether the failure is one the retry policy tries again (system failures are)."""
        error = _error_text(exc)
        if charged and not self.retry.try_again(call.attempt, retried):
            self._give_up(call.part, error, call.attempt)
            return
        attempt = call.attempt + 1 if charged else call.attempt
        logger.warning("part %s: attempt %d lost (%s); resubmitting", call.part.key, call.attempt, error)
        (self.pool_queue if call.slot is not None else self.tasks).appendleft((call.part, attempt))

    def _give_up(self, part: PartTask, error: str, attempts: int) -> None:
        self.fail(part, error, attempts)
        self.bar.update(self.rows_per_part[part.index])

    def abandon(self) -> None:
        """After an interrupt: stop what is still running; nothing of it is ever committed.
        With the head gone there is nobody to ask (the nodes' processes end with their raylets)."""
        if self.watch.lost:
            self.calls.clear()
            return
        for ref, call in self.calls.items():
            if call.slot is None:
                try:
                    ray.cancel(ref, force=True)
                except RayError:
                    pass
        self.calls.clear()
        if self.pool is not None:
            self.pool.close()
            self.pool = None
