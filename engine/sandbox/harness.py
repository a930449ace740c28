"""The Python test harness that runs inside the sandbox and reports over the verdict channel.

The harness reads the run's token from fd 3 before any code under test runs, keeps its own
references to the few functions it needs (so patching `os` cannot silence or fake it), and
writes `<token> <word>` to fd 4 only at the end. Mode `proxied` (every task with an entry point)
runs the tests against a proxy of the entry point (engine.sandbox.proxies.python) that calls the
candidate in a sandbox of its own (engine.sandbox.relay); its `assert x == y` and `x != y` are
decided by the engine's typed comparison. Mode `tests` runs the candidate in this process,
guarded, for whole programs without an entry point (docs/sandbox.md has both modes).
Differential testing runs no harness of this module (engine.sandbox.caller).
"""
from __future__ import annotations

PYTHON_HARNESS = r'''
import builtins, os, sys
_read, _write, _close, _exit = os.read, os.write, os.close, os._exit
_TOKEN = _read(3, 64)
_close(3)
_CLEAN_BUILTINS = dict(vars(builtins))


def _report(word, text=""):
    data = _TOKEN + b" " + word.encode("ascii") + b"\n" + text.encode("utf-8", "replace")
    while data:
        data = data[_write(4, data):]


def _stop(word, why):
    try:
        _report(word, why)
    finally:
        _exit(1)

__HOOK__

_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def _plain(value, depth=0):
    kind = type(value)
    if kind in _PLAIN:
        return True
    if depth > 100:
        return False
    if kind in (list, tuple, set, frozenset):
        return all(_plain(v, depth + 1) for v in value)
    if kind is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _guard(fn):
    def candidate(*args, **kwargs):
        value = fn(*args, **kwargs)
        if not _plain(value):
            raise TypeError("the function returned a %s, not a value of built-in types" % type(value).__name__)
        return value
    return candidate


def _load(path, space):
    with open(path, encoding="utf-8") as handle:
        exec(compile(handle.read(), path, "exec"), space)


def _main():
    import traceback
    mode, impl, tests, entry, extra = sys.argv[1:6]
    sys.argv = [impl]
    sys.path.insert(0, os.getcwd())
    space = {"__name__": "__main__", "__builtins__": builtins}
    try:
        _load(impl, space)
        checked = dict(space)
        checked["__builtins__"] = dict(_CLEAN_BUILTINS)
        if mode == "proxied":
            # The candidate is in another sandbox (engine.sandbox.relay): only values come back,
            # and the engine compares them with the tests' expected values.
            checked[entry] = _proxy_for(entry)
            checked["_bs_same"], checked["_bs_chain"] = _bs_same, _bs_chain
            with open(tests, encoding="utf-8") as handle:
                exec(_bs_typed(handle.read(), tests), checked)
        else:
            if entry and callable(space.get(entry)):
                checked[entry] = _guard(space[entry])
            _load(tests, checked)
        if extra == "check":
            checked["check"](checked[entry])
    except SystemExit as exc:
        # The tests' own sys.exit(0) after their checks is a pass, as in one process, in the
        # proxied mode only: there the candidate is in another process (its exit ends its server,
        # which the engine refuses) and the proxy never raises SystemExit. In the `tests` mode the
        # candidate shares this process, so any exit before the end stays a failure.
        if mode != "proxied" or not (exc.code is None or (type(exc.code) in (int, bool) and exc.code == 0)):
            traceback.print_exc()
            sys.stderr.flush()
            _exit(1)
    except MemoryError:
        _stop("memory", "memory: MemoryError (address-space limit)")
    except BlockingIOError as exc:
        _stop("processes", "processes: %s (process-count limit)" % exc)
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        _exit(1)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    _report("passed")
    _exit(0)


_main()
'''

# The audit hook of `isolation: hook` (not a security boundary: code that knows it can switch it off).
AUDIT_HOOK = r'''
_ROOT = os.path.realpath(os.getcwd())
_busy = [False]


def _inside(path):
    if isinstance(path, int):
        return True
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    full = os.path.realpath(os.path.join(_ROOT, os.fspath(path)))
    return full == _ROOT or full.startswith(_ROOT + os.sep) or full == os.devnull

_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {"os.remove", "os.rename", "os.replace", "os.mkdir", "os.rmdir", "os.chmod", "os.chown",
                "os.symlink", "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.move",
                "os.mkfifo", "os.mknod"}
_NEVER = ("socket.", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
          "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "os.startfile", "os.kill", "os.killpg")


def _hook(event, args):
    if _busy[0]:
        return
    _busy[0] = True
    try:
        if event.startswith(_NEVER):
            _stop("blocked", "blocked: %s" % event)
        if event == "open" and len(args) >= 3:
            path, mode, flags = args[0], args[1], args[2]
            writes = (mode is not None and any(c in str(mode) for c in "wax+")) or (
                mode is None and isinstance(flags, int) and flags & _WRITE)
            if writes and path is not None and not _inside(path):
                _stop("blocked", "blocked: write outside the sandbox directory: %r" % (path,))
        elif event in _PATH_EVENTS:
            for p in args:
                if isinstance(p, (str, bytes, os.PathLike)) and not _inside(p):
                    _stop("blocked", "blocked: %s outside the sandbox directory: %r" % (event, p))
    finally:
        _busy[0] = False

sys.addaudithook(_hook)
'''


def python_harness(hook: bool, proxy: str = "") -> str:
    """The harness; `proxy` is the code of the proxied mode's `_proxy_for` (engine.sandbox.proxies.python)."""
    return PYTHON_HARNESS.replace("__HOOK__", (AUDIT_HOOK if hook else "") + "\n" + proxy)
