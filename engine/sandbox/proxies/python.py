"""Python's side of the split run: the candidate's server and the tests' proxy.

Both are small programs run with `python -I -B`; they share only `CODEC` (the plain-value
stream of engine.sandbox.plain, in Python). The server executes the task's context and the
candidate, then answers calls: the return value when it is plain data (bool, int, float, str,
None, list, tuple, set, frozenset, dict of those: exact types, no subclasses), the exception's
type name when the call raised, `z` otherwise. Lists, dicts and sets cross as one graph shared
by the proxy and the server (`_pg_message`): the tests' objects keep their identity, a value the
candidate returned from its arguments or kept from an earlier call is the tests' own object, and
every change a call makes to any object the tests can still reach is applied to theirs. A reply is
`a l2 <returned value> <changed objects>` (engine.sandbox.arguments). The tests' harness (the verdict channel of
engine.sandbox.harness) executes the context, binds the entry point to a proxy that sends
each call to the server, and runs the tests against it.
"""
from __future__ import annotations

from engine.sandbox import plain
from engine.sandbox.harness import AUDIT_HOOK, python_harness
from engine.sandbox.proxies.python_graph import GRAPH

CODEC = r'''
import os as _os
MAX_DIGITS = @MAX_DIGITS@

# Bound before the candidate loads: a candidate that patches `os` breaks nothing but its own calls.
_pv_os_write, _pv_os_read, _pv_os_exit = _os.write, _os.read, _os._exit
# Integers cross up to the engine's limit (engine.sandbox.plain.MAX_DIGITS), beyond the interpreter's 4,300 digits.
getattr(__import__("sys"), "set_int_max_str_digits", lambda _: None)(MAX_DIGITS)


class _NotPlain(Exception):
    pass


def _pv_write(value, out, depth=0):
    kind = type(value)
    if depth > 32:
        raise _NotPlain("nested deeper than 32 levels")
    if value is None:
        out.append(b"n")
    elif kind is bool:
        out.append(b"t" if value else b"f")
    elif kind is int:
        try:
            out.append(b"i%d" % value)
        except ValueError:
            raise _NotPlain("integer too long")
    elif kind is float:
        out.append(b"dnan" if value != value else b"d" + repr(value).encode("ascii"))
    elif kind is str:
        try:
            data = value.encode("utf-8")
        except UnicodeError:
            raise _NotPlain("string is not valid Unicode")
        out.append(b"s%d:" % len(data) + data)
    elif kind in (list, tuple, set, frozenset, dict):
        tag = {list: b"l", tuple: b"u", dict: b"m"}.get(kind, b"e")
        out.append(tag + b"%d" % len(value))
        items = [x for pair in value.items() for x in pair] if kind is dict else list(value)
        for item in items:
            out.append(b" ")
            _pv_write(item, out, depth + 1)
    else:
        raise _NotPlain("a %s is not plain data" % kind.__name__)


def _pv_read(data, pos=0, frozen=False):
    """(value, end); `frozen`: a set's element or a map's key, so a set there is a frozenset."""
    tag = data[pos:pos + 1]
    if tag == b"s":
        colon = data.index(b":", pos)
        end = colon + 1 + int(data[pos + 1:colon])
        return data[colon + 1:end].decode("utf-8"), end
    end = data.find(b" ", pos)
    end = len(data) if end < 0 else end
    token = data[pos:end].decode("ascii")
    if token in ("n", "t", "f"):
        return {"n": None, "t": True, "f": False}[token], end
    if token == "g":
        name, pos = _pv_read(data, end + 1)
        value, pos = _pv_read(data, pos + 1)
        if name != "r" or type(value) is not int:
            raise ValueError("a typed value other than a reference")
        return _PvRef(value), pos
    if token[0] == "i":
        return int(token[1:]), end
    if token[0] == "d":
        return float(token[1:]), end
    count = int(token[1:]) * (2 if token[0] == "m" else 1)
    items, pos = [], end
    for index in range(count):
        inner = token[0] == "e" or (token[0] == "m" and index % 2 == 0) or (token[0] == "u" and frozen)
        value, pos = _pv_read(data, pos + 1, inner)
        items.append(value)
    if token[0] == "m":
        return dict(zip(items[::2], items[1::2])), pos
    return {"l": list, "u": tuple, "e": frozenset if frozen else set}[token[0]](items), pos


@GRAPH@

def _pv_send(fd, payload):
    data = b"%d\n" % len(payload) + payload
    while data:
        data = data[_pv_os_write(fd, data):]


def _pv_recv(fd):
    header = b""
    while not header.endswith(b"\n"):
        byte = _pv_os_read(fd, 1)
        if not byte:
            return None
        header += byte
    size, data = int(header), b""
    while len(data) < size:
        chunk = _pv_os_read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data
'''.replace("@MAX_DIGITS@", str(plain.MAX_DIGITS)).replace("@GRAPH@", GRAPH)

# The server's own code looks names up in a copy of the built-ins taken before the candidate
# runs: a candidate that replaces `builtins.type` or `len` changes its own code, not the codec's.
SERVER = "__builtins__ = dict(vars(__import__('builtins')))\n" + CODEC + r'''

def _serve():
    import sys
    import types
    impl, entry = sys.argv[1:3]
    import builtins
    built = {name: kind for name, kind in vars(builtins).items() if isinstance(kind, type)}  # before the candidate runs
    # The candidate's `__main__` is a module of its own, as in one process, where it is never this
    # server: `import __main__` must not reach the graph's bookkeeping (an argument the candidate
    # changed could be marked unchanged). This module leaves sys.modules; its functions keep its globals.
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    space = module.__dict__
    space["__builtins__"] = builtins
    sys.argv = [impl]
    sys.addaudithook(_pv_guard)
    try:
        with open(impl, encoding="utf-8") as handle:
            exec(compile(handle.read(), impl, "exec"), space)
        fn = space.get(entry)
    except BaseException as exc:
        fn = None
        sys.stderr.write("the candidate did not load: %s: %s\n" % (type(exc).__name__, exc))
    while True:
        call = _pv_recv(3)
        if call is None:
            _pv_os_exit(0)
        if not callable(fn):
            _pv_send(4, b"z " + _pv_text("no function named %s" % entry))
            continue
        try:
            if call[:7] == b"g s1:c ":
                # The tests' call: their objects' changes since the last reply, then the arguments.
                arguments = _pg_apply(_pv_read(call, 7)[0])
            else:
                # A bare argument list (generated inputs): a graph of its own.
                _pg_reset()
                arguments = tuple(_pv_read(call)[0])
                _pg_message(arguments)
        except (ValueError, TypeError, IndexError, RecursionError) as exc:
            _pv_send(4, b"z " + _pv_text("the call does not decode: %s" % exc))
            continue
        try:
            value = fn(*arguments)
        except BaseException as exc:
            _pv_send(4, b"x " + _pv_text(_pv_exception_text(exc, built)))
            continue
        try:
            # The returned value and every crossed object the call changed (arguments, earlier
            # returns), as one graph: what the tests' objects become (engine.sandbox.arguments).
            reply = b"a " + _pg_message(value)
        except (_NotPlain, RecursionError) as exc:
            _pv_send(4, b"z " + _pv_text(str(exc)))
            continue
        _pv_send(4, reply)


# What no honest function needs and what would reach the server's objects by another name than
# its own: every object of the process (gc) and every thread's frames. A frame's `f_back` has no
# audit event, so the server's frames stay reachable from the candidate's (docs/sandbox.md, limits).
_PV_REFUSED = frozenset(("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames"))


def _pv_guard(event, args):
    if event in _PV_REFUSED:
        raise RuntimeError("%s is not available to the candidate" % event)


def _pv_exception_name(kind, built):
    """A built-in type by its bare name, any other by module and qualified name: a candidate's own
    `class ZeroDivisionError(Exception)` crosses as `__main__.ZeroDivisionError`, which no `except
    ZeroDivisionError` in the tests catches and no reference's built-in one agrees with."""
    if built.get(kind.__name__) is kind:
        return kind.__name__
    return "%s.%s" % (kind.__module__, kind.__qualname__)


def _pv_exception_text(exc, built):
    """`<own name> <built-in base>...\n<message>` (engine.sandbox.plain.exception_text): the bases
    let the tests' `except ValueError` take a subclass of it, the message is what `str(e)` shows."""
    try:
        kind = type(exc)
        names = [_pv_exception_name(kind, built)]
        names += [base.__name__ for base in kind.__mro__[1:] if built.get(base.__name__) is base]
        # Spaces separate the names: one inside a name (a `__qualname__` of "Oops ValueError") would add a base.
        names = ["_".join(name.split()) or "_" for name in names]
    except BaseException:  # noqa: BLE001 - a metaclass's own attributes may raise anything
        names = ["?"]
    try:
        message = str(exc)
        message = message if type(message) is str else ""
    except BaseException:  # noqa: BLE001 - the candidate's __str__ may raise anything
        message = ""
    return " ".join(names) + "\n" + message[:4096]


def _pv_text(text):
    data = text.encode("utf-8", "replace")
    return b"s%d:" % len(data) + data


_serve()
'''

# `isolation: hook` (no namespaces): the audit hook of the harness guards the server too; a
# blocked event ends the server, so the tests get no reply and fail.
HOOKED_SERVER_PRELUDE = r'''
import os, sys


def _stop(word, why):
    sys.stderr.write("%s: %s\\n" % (word, why))
    os._exit(1)
'''

# Inserted into the verdict harness: the entry point the tests see.
PROXY = CODEC + r'''

class _CandidateBroken(BaseException):
    """The candidate's reply was refused: no `except Exception` in the tests can swallow it."""


def _proxy_for(entry):
    def candidate(*args, **kwargs):
        try:
            if kwargs:
                raise _NotPlain("keyword arguments")
            # The objects the tests cannot reach leave the graph on both sides: the server
            # forgets them on this call (a later return of one crosses as a new object). Their
            # last changes are sent first: the candidate may still hold them (a memoised list).
            forgotten = _pg_unreachable()
            call = b"g s1:c " + _pg_message(args, forgotten)
            _pg_forget(forgotten)
        except (_NotPlain, RecursionError) as exc:
            # Never the proxy's own error inside the tests (an `except Exception` there would take
            # it for the candidate's): the engine makes the run an error (`u <why>`).
            _pv_send(5, b"u " + str(exc).encode("utf-8", "replace"))
            _pv_recv(6)
            raise _CandidateBroken("the tests pass a value the wire cannot carry: %s" % exc) from None
        _pv_send(5, call)
        reply = _pv_recv(6)
        if reply is None:
            raise _CandidateBroken("the engine closed the call channel")
        try:
            value = _pv_read(reply, 2)[0]
            if reply[:1] == b"a":
                # The returned value and the changes to the tests' objects, identity kept: a list the
                # candidate returned from its arguments or kept from an earlier call is the tests' own.
                return _pg_apply(value)
        except Exception as exc:
            # Never the proxy's own error inside the tests (an `except TypeError` there would take it).
            raise _CandidateBroken("the reply does not decode: %s: %s" % (type(exc).__name__, exc)) from None
        # No graph came back (the call raised or answered no plain data): the server may have changed
        # objects it did not report, so the next call sends every object's state again.
        _PG_LAST.update(dict.fromkeys(_PG_LAST))
        if reply[:1] == b"x":
            raise _pv_raised(value)
        raise _CandidateBroken(value)

    candidate.__name__ = entry
    return candidate


def _pv_builtin_exception(name):
    import builtins

    kind = getattr(builtins, name, None)
    # StopIteration would end the tests' own iteration (`zip(map(candidate, xs), ys)`,
    # `all(map(...))`) as if every case had been checked: it is never raised as itself.
    if isinstance(kind, type) and issubclass(kind, Exception) and not issubclass(kind, (StopIteration, StopAsyncIteration)):
        return kind
    return None


# The Unicode errors take their codec's arguments: raised with placeholders, showing the candidate's message.
_PV_UNICODE = ((UnicodeDecodeError, ("utf-8", b"", 0, 0)), (UnicodeEncodeError, ("utf-8", "", 0, 0)),
               (UnicodeTranslateError, ("", 0, 0)))


def _pv_raised(text):
    """The candidate's exception (`<own name> <bases>...\n<message>`) as the tests see it in one
    process: a built-in as itself, a class of the candidate's as a class of its name deriving from
    its nearest built-in base (so `except ValueError` takes a subclass of it), with its message."""
    head, _, message = text.partition("\n")
    names = head.split(" ")
    kind = _pv_builtin_exception(names[0])
    if kind is None and names[0] not in dir(__import__("builtins")):
        base = next((b for b in map(_pv_builtin_exception, names[1:]) if b is not None), None)
        if base is not None:
            module, _, short = names[0].rpartition(".")
            kind = type(short or "_", (base,), {"__module__": module or "candidate"})
    if kind is None:
        return RuntimeError("the candidate raised %s: %s" % (names[0], message))
    for unicode_kind, placeholders in _PV_UNICODE:
        if issubclass(kind, unicode_kind):
            stand_in = type(kind.__name__, (kind,), {"__module__": kind.__module__, "__str__": lambda self: message})
            return stand_in(*placeholders, message)
    if issubclass(kind, KeyError):
        # KeyError's str() quotes its argument: the stand-in shows the candidate's own str(e).
        return type(kind.__name__, (kind,), {"__module__": kind.__module__, "__str__": lambda self: message})(message)
    try:
        return kind(message)
    except Exception:  # noqa: BLE001 - a built-in that takes other arguments
        return RuntimeError("the candidate raised %s: %s" % (names[0], message))


def _bs_chain(operands, negations):
    """`a == b != c ...` of an assert, each link decided by the engine (operands evaluated first)."""
    return all(_bs_same(left, right, negated) for left, right, negated in zip(operands, operands[1:], negations))


def _bs_same(left, right, negated):
    """`left == right` (or `!=`) of an assert, decided by the engine's typed comparison."""
    if left is right:
        # One object on both sides: Python's `==` on it (a container holding NaN equals itself by identity).
        return (left != right) if negated else (left == right)
    a, b = [], []
    try:
        _pv_write(left, a)
        _pv_write(right, b)
    except (_NotPlain, RecursionError):
        # Not plain data: objects of the tests' own (the candidate's values are always plain here).
        return (left != right) if negated else (left == right)
    _pv_send(5, b"c py l2 " + b"".join(a) + b" " + b"".join(b))  # Python's rule: NaN equals nothing
    reply = _pv_recv(6)
    if reply is None:
        raise _CandidateBroken("the engine closed the call channel")
    return (reply != b"o t") if negated else (reply == b"o t")


def _bs_typed(source, path):
    """The tests compiled with every `==` / `!=` comparison inside an `assert` sent to the engine:
    `assert x == y`, but also chained (`a == f(x) == b`), negated, joined with `and`/`or` or inside
    a generator (`assert all(f(x) == y for ...)`), where Python's `==` would take True for 1."""
    import ast

    class _Links(ast.NodeTransformer):
        def visit_Compare(self, node):
            self.generic_visit(node)
            if not all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                return node
            operands = ast.List([node.left, *node.comparators], ast.Load())
            negations = ast.List([ast.Constant(isinstance(op, ast.NotEq)) for op in node.ops], ast.Load())
            return ast.copy_location(ast.Call(ast.Name("_bs_chain", ast.Load()), [operands, negations], []), node)

    class _Typed(ast.NodeTransformer):
        def visit_Assert(self, node):
            node.test = _Links().visit(node.test)
            return node

    tree = ast.fix_missing_locations(_Typed().visit(ast.parse(source, path)))
    return compile(tree, path, "exec")
'''


def jobs(task: dict, code: str, python: str, hook: bool) -> tuple[dict, list[str], dict, list[str]]:
    """(server files, server argv, tests files, tests argv)."""
    context = task.get("context") or ""
    entry = task["entry_point"]
    call = "check" if "def check(" in task["tests"] else "plain"
    server_files = {"_server.py": (HOOKED_SERVER_PRELUDE + AUDIT_HOOK if hook else "") + SERVER,
                    "impl.py": f"{context}\n\n{code}\n"}
    tests_files = {"_harness.py": python_harness(hook, proxy=PROXY), "impl.py": f"{context}\n", "tests.py": task["tests"]}
    argv = [python, "-I", "-B", "_harness.py", "proxied", "impl.py", "tests.py", entry, call]
    return server_files, [python, "-I", "-B", "_server.py", "impl.py", entry], tests_files, argv
