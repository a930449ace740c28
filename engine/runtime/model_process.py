"""A model held by a worker process of its own, its methods called from the parent.

vLLM cannot free an engine in-process, so every vLLM engine (generator or judge) is built in
a child `python -m engine.runtime.model_process` and lives exactly as long as that process:
releasing the model ends it, and the operating system takes back all of its memory. The parent
never imports vllm. The child leads a process group of its own, so ending it ends everything it
started, and it kills its group itself when its parent dies.

Protocol: pickled `load` / `call` / `close` messages on the child's stdin, answers on its
original stdout (fd 1 points at stderr first, so library prints cannot corrupt them); the
messages, the peaks `close` returns and the worker's log: docs/hardware.md, "The model worker
process".
"""
from __future__ import annotations

import collections
import importlib
import logging
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from engine import faults
from engine.errors import ModelLoadError, TransientError
from engine.runtime.cuda import worker_environment

logger = logging.getLogger(__name__)

_REPO_ROOT = Path(__file__).resolve().parents[2]
_CLOSE_TIMEOUT_S = 60.0
# How long a released CUDA worker's device memory is waited for. The driver returns a killed
# process's memory some time after it exits, and vLLM 0.32.0's EngineCore is a child of the
# worker that exits on its own schedule; the next engine on that device requests
# gpu_memory_utilization x total and refuses to start while less is free
# (vllm/v1/worker/utils.py `request_memory`).
MEMORY_RETURN_TIMEOUT_S = 60.0
_MEMORY_POLL_S = 0.1
_LOG_TAIL_SHOWN = 25  # of the worker's last log lines, the non-blank ones put into a load error
_PARENT_WATCH_S = 0.5  # how often the child checks that its parent is still there
# Test hook (fault-injection tests only): the first call of this method, in any worker, kills
# the worker's whole process group (the vLLM EngineCore with it) while the parent waits for the
# answer; the marker file keeps it to one kill, so the part's retry, in a new worker, succeeds.


class ModelWorkerError(RuntimeError):
    """An exception of the worker that could not be sent back as itself."""


class ProcessModel:
    """Proxy of one object built in a worker process; `name(...)` calls run there.

    attrs: attribute names read once after the object is built (e.g. `max_model_len`), served
    locally afterwards. device: where the model runs (`cpu`, `cuda:N` of this process); on CUDA
    the child sees only that device, or `devices` consecutive ones from it (tensor parallelism).
    The child's stderr passes through to this process's stderr; its last lines are kept, so a
    model that fails to load names the cause its libraries logged (vLLM's engine core logs the
    root cause and raises only "Engine core initialization failed. See root cause above.").
    """

    def __init__(self, factory: str, *args: Any, attrs: tuple[str, ...] = (), label: str = "", device: str = "cpu",
                 devices: int = 1, **kwargs: Any):
        self.label = label or factory
        env = worker_environment(device, count=devices)
        # The child imports this tree's `engine`, even when it is not installed.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        self.cuda_visible_devices = env.get("CUDA_VISIBLE_DEVICES")
        self._proc = subprocess.Popen([sys.executable, "-m", "engine.runtime.model_process"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        self.worker_pid = self._proc.pid
        self._log = WorkerLog(self._proc.stderr, self.label)
        _LIVE_WORKERS[self._proc.pid] = self._proc
        self.peaks: dict[str, Any] = {}
        self._attrs: dict[str, Any] = {}
        self._broken = False  # a reply may still be on its way: the channel is out of step
        self._killed = False
        self._group: list[int] = []  # the worker's process group as last seen (its device memory is waited for)
        try:
            self._attrs = self._ask(("load", factory, args, kwargs, tuple(attrs)), loading=True)
        except ModelLoadError as exc:
            self._kill()
            raise ModelLoadError(f"{exc}{self._tail_text()}") from exc
        except BaseException:
            self._kill()
            raise

    # ----- talking to the child ----------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def _tail_text(self) -> str:
        self._log.join(timeout=2.0)  # the child's last lines, once it has exited
        lines = [line for line in self._log.tail if line.strip()][-_LOG_TAIL_SHOWN:]
        return ("\nlast lines of the worker's log:\n  " + "\n  ".join(lines)) if lines else ""

    def _ask(self, message: tuple, loading: bool = False, timeout: float | None = None) -> Any:
        if self._broken:
            raise TransientError(f"the worker of {self.label} was interrupted in the middle of a call; "
                                 "the part is retried with a new worker")
        if not self.alive:
            raise TransientError(f"the worker process of {self.label} exited with code {self._proc.returncode}; "
                                 "the part is retried with a new worker")
        self._broken = True  # until the whole answer is read: an interrupt in between leaves it so
        try:
            pickle.dump(message, self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._proc.stdin.flush()
            if timeout is not None and not select.select([self._proc.stdout], [], [], timeout)[0]:
                raise TimeoutError(f"no answer from the worker of {self.label} in {timeout:.0f} s")
            answer = pickle.load(self._proc.stdout)
        except (EOFError, BrokenPipeError, OSError) as exc:
            if isinstance(exc, TimeoutError):
                raise
            code = self._proc.wait(timeout=_CLOSE_TIMEOUT_S)
            self._log.show_tail()
            if loading:
                raise ModelLoadError(f"the worker process loading {self.label} exited with code {code}; "
                                     "check the model files and the device memory") from exc
            raise TransientError(f"the worker process of {self.label} exited with code {code} (killed, or out of "
                                 "memory?); the part is retried with a new worker") from exc
        self._broken = False
        if answer[0] == "error":
            self._log.show_tail()
            raise answer[1]
        return answer[1]

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self._ask(("call", method, args, kwargs))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._attrs:
            return self._attrs[name]
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)

    def close(self) -> None:
        """End the worker (its model with it) and keep the peak memory it reported. The worker's
        whole process group is killed afterwards in every case: a worker that does not answer
        within the close timeout, or whose channel an interrupted call left out of step, too."""
        if self.cuda_visible_devices is not None and not self._killed:
            self._group = _group_pids(self._proc.pid)  # before the worker ends its EngineCore itself
        try:
            if self.alive and not self._broken:
                self.peaks = dict(self._ask(("close",), timeout=_CLOSE_TIMEOUT_S))
                self._proc.wait(timeout=_CLOSE_TIMEOUT_S)
        except (TransientError, TimeoutError, subprocess.TimeoutExpired, ModelWorkerError) as exc:
            logger.warning("worker of %s did not close cleanly (%s); killing it", self.label, exc)
        finally:
            self._kill()

    def _kill(self) -> None:
        """SIGKILL to the worker's whole process group: the worker and whatever it started
        (an EngineCore that outlived its worker would keep its share of the GPU). Once only: the
        group id is the worker's pid, which the system may give to another process later."""
        if self._killed:
            return
        self._killed = True
        _LIVE_WORKERS.pop(self._proc.pid, None)  # reaped below: its CPU moves into RUSAGE_CHILDREN
        group = sorted({*self._group, *_group_pids(self._proc.pid)}) if self.cuda_visible_devices is not None else []
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)  # the child leads its group (start_new_session)
        except (ProcessLookupError, PermissionError):
            pass
        if self._proc.returncode is None:
            self._proc.wait()
        if group:
            wait_for_device_memory(group, self.label)
        self._log.join()
        for stream in (self._proc.stdin, self._proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def __del__(self) -> None:  # a proxy dropped without release must not leave its process behind
        try:
            self._kill()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _group_pids(pgid: int) -> list[int]:
    """The processes of a worker's process group (the worker, its EngineCore, their children)."""
    import psutil

    pids = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid:
                pids.append(proc.pid)
        except (ProcessLookupError, PermissionError):
            continue
    return pids


def _running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_for_device_memory(pids: list[int], label: str, timeout: float = MEMORY_RETURN_TIMEOUT_S) -> bool:
    """Wait until none of `pids` runs and NVML lists none of them holding device memory (without
    NVML, or where NVML's pids are another namespace's, until they are gone). False, with a
    warning, after `timeout`: the next load then meets vLLM's own free-memory check."""
    from engine.runtime.cuda import device_bytes_by_pid

    deadline = time.monotonic() + timeout
    stop = threading.Event()
    while True:
        running = [pid for pid in pids if _running(pid)]
        held = device_bytes_by_pid(pids) or {}
        if not running and not held:
            return True
        if time.monotonic() >= deadline:
            logger.warning("the device memory of %s was not returned within %.0f s (still running: %s; held: %s)",
                           label, timeout, running or "none", held or "none")
            return False
        stop.wait(_MEMORY_POLL_S)


# ----- the worker's log and CPU, seen from the parent ---------------------------------------------
# Live workers by pid. A worker's CPU reaches the parent's RUSAGE_CHILDREN only once it is reaped,
# so throughput reads the live ones here (engine/throughput.py): a judge's vLLM engine works in
# its worker, not in the process that waits for its answers.
_LIVE_WORKERS: dict[int, subprocess.Popen] = {}
VERBOSE_ENV = "BABELSCORE_VERBOSE"  # set by `babelscore -v`; passed on to Ray workers
_TAIL_LINES = 60
# The worker's own (babelscore) log lines and errors are always shown; the rest of what the
# libraries print (vLLM's start-up, Triton and tcmalloc notices) only with -v, or after a failure.
_ALWAYS = re.compile(r"^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) engine\.|(?:ERROR|CRITICAL)\b|Traceback )")


def live_workers_cpu_seconds() -> float:
    """User + system CPU of the live worker processes and their children (0 without psutil)."""
    try:
        import psutil
    except ImportError:
        return 0.0
    total = 0.0
    for pid in list(_LIVE_WORKERS):
        try:
            proc = psutil.Process(pid)
            for p in (proc, *proc.children(recursive=True)):
                times = p.cpu_times()
                total += times.user + times.system
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return total


class WorkerLog:
    """Relays a worker's stderr: babelscore's lines and errors always, library noise only with -v;
    the last lines are kept, and shown when the worker fails."""

    def __init__(self, stream: Any, label: str):
        self.label = label
        self.verbose = os.environ.get(VERBOSE_ENV) == "1" or logger.isEnabledFor(logging.DEBUG)
        self.tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self.hidden = 0
        self._thread = threading.Thread(target=self._relay, args=(stream,), name=f"worker-log-{label}", daemon=True)
        self._thread.start()

    def _relay(self, stream: Any) -> None:
        from engine.progress import write_line

        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.tail.append(line)
            if self.verbose or _ALWAYS.match(line):
                write_line(line)
            else:
                self.hidden += 1

    def show_tail(self) -> None:
        """After a failure: the hidden lines matter now."""
        if self.verbose or not self.hidden:
            return
        self.join(timeout=2)
        logger.error("last lines of the worker of %s:\n%s", self.label, "\n".join(self.tail))

    def join(self, timeout: float = 5) -> None:
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout)


# ----- the child -------------------------------------------------------------------------------
def _watch_parent() -> None:
    """End this process group when the parent is gone (killed with -9 included): the parent id
    changes when an orphan is re-parented. Polling, because PR_SET_PDEATHSIG follows the parent
    *thread*, and the thread that started this worker may end long before its process."""
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            threading.Event().wait(_PARENT_WATCH_S)
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _sendable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling, else its text in a ModelWorkerError."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - e.g. an exception class whose __init__ takes other arguments
        return ModelWorkerError(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}")


def serve() -> int:
    from engine.runtime.process_usage import UsageSampler

    _watch_parent()
    usage = UsageSampler()
    usage.start()
    channel_in = sys.stdin.buffer
    channel_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints of any library go to stderr, never into the channel
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s[worker]: %(message)s")

    def send(answer: tuple) -> None:
        pickle.dump(answer, channel_out, protocol=pickle.HIGHEST_PROTOCOL)
        channel_out.flush()

    obj: Any = None
    while True:
        try:
            message = pickle.load(channel_in)
        except EOFError:  # the parent is gone: so is the model
            return 0
        kind = message[0]
        if kind == "close":
            send(("ok", usage.stop()))
            return 0
        try:
            if kind == "load":
                _kind, factory, args, kwargs, attrs = message
                module, _, cls = factory.partition(":")
                obj = getattr(importlib.import_module(module), cls)(*args, **kwargs)
                usage.sample()
                send(("ok", {name: getattr(obj, name) for name in attrs}))
            elif kind == "call":
                _kind, method, args, kwargs = message
                faults.before_worker_call(method)
                result = getattr(obj, method)(*args, **kwargs)
                usage.sample()  # a short call's peak is seen even between two periodic samples
                send(("ok", result))
            else:
                send(("error", ModelWorkerError(f"unknown message {kind!r}")))
        except Exception as exc:  # noqa: BLE001 - sent back, raised in the parent
            traceback.print_exc()
            send(("error", _sendable(exc)))


if __name__ == "__main__":
    sys.exit(serve())
