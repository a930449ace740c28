"""A model held by a worker process of its own, its methods called from the parent.

vLLM cannot free an engine in-process, so every vLLM engine (generator or judge) is built in
a child `python -m engine.runtime.model_process` and lives exactly as long as that process:
releasing the model ends it, and the operating system (and the CUDA driver) take back all of
its memory. The parent never imports vllm.

Protocol: pickled messages, requests on the child's stdin, answers on its original stdout
(the child points fd 1 at stderr first, so whatever a library prints cannot corrupt them).
    ("load", "module:Class", args, kwargs, attrs) -> ("ok", {attr: value}) | ("error", exception)
    ("call", method, args, kwargs)               -> ("ok", result) | ("error", exception)
    ("close",)                                   -> ("ok", peak_bytes), then the child exits
The child's stderr comes to the parent through a pipe (`WorkerLog`): library start-up noise is
shown only with `-v`, and the last lines of a worker that failed always.
"""
from __future__ import annotations

import collections
import importlib
import logging
import os
import pickle
import re
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from engine.errors import ModelLoadError, TransientError

logger = logging.getLogger(__name__)

_REPO_ROOT = Path(__file__).resolve().parents[2]
_CLOSE_TIMEOUT_S = 60.0


class ModelWorkerError(RuntimeError):
    """An exception of the worker that could not be sent back as itself."""


class ProcessModel:
    """Proxy of one object built in a worker process; `name(...)` calls run there.

    attrs: attribute names read once after the object is built (e.g. `max_model_len`), served
    locally afterwards.
    """

    def __init__(self, factory: str, *args: Any, attrs: tuple[str, ...] = (), label: str = "", **kwargs: Any):
        self.label = label or factory
        env = dict(os.environ)
        # The child imports this tree's `engine`, even when it is not installed.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen([sys.executable, "-m", "engine.runtime.model_process"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.worker_pid = self._proc.pid
        self._log = WorkerLog(self._proc.stderr, self.label)
        _LIVE_WORKERS[self._proc.pid] = self._proc
        self.peak_bytes: int | None = None
        self._attrs: dict[str, Any] = {}
        try:
            self._attrs = self._ask(("load", factory, args, kwargs, tuple(attrs)), loading=True)
        except BaseException:
            self._kill()
            raise

    # ----- talking to the child ----------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def _ask(self, message: tuple, loading: bool = False) -> Any:
        if not self.alive:
            raise TransientError(f"the worker process of {self.label} exited with code {self._proc.returncode}; "
                                 "the part is retried with a new worker")
        try:
            pickle.dump(message, self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self._proc.stdin.flush()
            answer = pickle.load(self._proc.stdout)
        except (EOFError, BrokenPipeError, OSError) as exc:
            code = self._proc.wait(timeout=_CLOSE_TIMEOUT_S)
            self._log.show_tail()
            if loading:
                raise ModelLoadError(f"the worker process loading {self.label} exited with code {code} "
                                     "(its log is above); check the model files and the device memory") from exc
            raise TransientError(f"the worker process of {self.label} exited with code {code} (killed, or out of "
                                 "memory?); the part is retried with a new worker") from exc
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
        """End the worker (its model with it) and keep the peak memory it reported."""
        if self.alive:
            try:
                self.peak_bytes = self._ask(("close",))
                self._proc.wait(timeout=_CLOSE_TIMEOUT_S)
            except (TransientError, subprocess.TimeoutExpired, ModelWorkerError) as exc:
                logger.warning("worker of %s did not close cleanly (%s); killing it", self.label, exc)
        self._kill()

    def _kill(self) -> None:
        _LIVE_WORKERS.pop(self._proc.pid, None)  # reaped below: its CPU moves into RUSAGE_CHILDREN
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
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
def _peak_bytes() -> int:
    """Peak device memory on CUDA (what torch's allocator reserved), else peak RSS."""
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(max(torch.cuda.max_memory_reserved(i) for i in range(torch.cuda.device_count())))
    except Exception:  # noqa: BLE001 - fall back to RSS
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _sendable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling, else its text in a ModelWorkerError."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - e.g. an exception class whose __init__ takes other arguments
        return ModelWorkerError(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-3000:]}")


def serve() -> int:
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
            send(("ok", _peak_bytes()))
            return 0
        try:
            if kind == "load":
                _kind, factory, args, kwargs, attrs = message
                module, _, cls = factory.partition(":")
                obj = getattr(importlib.import_module(module), cls)(*args, **kwargs)
                send(("ok", {name: getattr(obj, name) for name in attrs}))
            elif kind == "call":
                _kind, method, args, kwargs = message
                send(("ok", getattr(obj, method)(*args, **kwargs)))
            else:
                send(("error", ModelWorkerError(f"unknown message {kind!r}")))
        except Exception as exc:  # noqa: BLE001 - sent back, raised in the parent
            traceback.print_exc()
            send(("error", _sendable(exc)))


if __name__ == "__main__":
    sys.exit(serve())
