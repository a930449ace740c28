"""The shared graph of Python's split run, in Python: part of the codec the server and the proxy share.

Every list, dict and set that crossed is numbered on both sides, so identity crosses as it would
in one process (docs/sandbox.md, "The shared graph"). The proxy forgets the objects the tests
cannot reach (`_pg_unreachable`: held by nothing but the graph itself, counted with
CPython's reference counts) and the next call tells the server to forget them too, so a message
costs in proportion to what the tests still hold, not to every object that ever crossed.
"""
from __future__ import annotations

GRAPH = r'''
_pv_refcount = __import__("sys").getrefcount


class _PvRef:
    """A reference to the object the shared graph numbers `rid` (resolved by _pg_resolve)."""
    __slots__ = ("rid",)

    def __init__(self, rid):
        self.rid = rid


# The shared graph: the lists, dicts and sets that crossed and are still reachable by the tests, by
# number, on both sides. A message is `l2 <value> <nodes>` (a call of the tests' proxy: `l3 <value>
# <nodes> <forgotten numbers>` when it forgets some): in the value each such container is a
# reference `g s1:r i<number>`, and each node `l2 i<number> <content>` is the shallow state
# (references inside) of a container that is new or changed since the last message. Numbers are
# given in order of first appearance and never again after an object is forgotten, so a sender
# and a receiver agree on them, and so do a reference and a candidate that return the same
# sharing structure.
_PG_OBJS, _PG_IDS, _PG_LAST, _PG_NEXT = {}, {}, {}, [0]


def _pg_reset():
    _PG_OBJS.clear(), _PG_IDS.clear(), _PG_LAST.clear()
    _PG_NEXT[0] = 0


def _pg_id(obj):
    rid = _PG_IDS.get(id(obj))
    if rid is None:
        rid = _PG_NEXT[0]
        _PG_NEXT[0] += 1
        _PG_IDS[id(obj)] = rid
        _PG_OBJS[rid] = obj  # kept alive until forgotten: an id is never another object's while numbered
        _PG_LAST[rid] = None
    return rid


def _pg_forget(numbers):
    for rid in numbers:
        del _PG_IDS[id(_PG_OBJS.pop(rid))], _PG_LAST[rid]


def _pg_write(value, out, depth=0):
    kind = type(value)
    if kind in (list, dict, set):
        out.append(b"g s1:r i%d" % _pg_id(value))
    elif kind is tuple or kind is frozenset:
        if depth > 32:
            raise _NotPlain("nested deeper than 32 levels")
        parts = []
        for item in value:
            part = []
            _pg_write(item, part, depth + 1)
            parts.append(b"".join(part))
        if kind is frozenset:
            parts.sort()
        out.append((b"u%d" if kind is tuple else b"e%d") % len(parts) + b"".join(b" " + part for part in parts))
    else:
        _pv_write(value, out, depth)


def _pg_node(obj):
    """The shallow state of a graph container; a set's elements in a fixed order (no change seen
    where none was made)."""
    out = []
    if type(obj) is dict:
        out.append(b"m%d" % len(obj))
        for key, item in obj.items():
            out.append(b" ")
            _pg_write(key, out)
            out.append(b" ")
            _pg_write(item, out)
        return b"".join(out)
    parts = []
    for item in obj:
        part = []
        _pg_write(item, part)
        parts.append(b"".join(part))
    if type(obj) is set:
        parts.sort()
    return (b"l%d" if type(obj) is list else b"e%d") % len(parts) + b"".join(b" " + part for part in parts)


def _pg_message(value, forgotten=()):
    """`l2 <value> <nodes>`: the value with every container that is new or changed since the last
    message (`l3 ... <forgotten numbers>` when `forgotten`)."""
    out = []
    _pg_write(value, out)
    nodes, todo = [], list(_PG_OBJS)
    while todo:  # nodes met while writing get the next numbers: each is written once, in order
        fresh = _PG_NEXT[0]
        for rid in todo:
            text = _pg_node(_PG_OBJS[rid])
            if text != _PG_LAST[rid]:
                _PG_LAST[rid] = text
                nodes.append(b" l2 i%d " % rid + text)
        todo = range(fresh, _PG_NEXT[0])
    tail = b" l%d" % len(forgotten) + b"".join(b" i%d" % rid for rid in forgotten) if forgotten else b""
    return b"l%d " % (3 if forgotten else 2) + b"".join(out) + b" l%d" % len(nodes) + b"".join(nodes) + tail


def _pg_resolve(value):
    kind = type(value)
    if kind is _PvRef:
        obj = _PG_OBJS.get(value.rid) if type(value.rid) is int else None
        if obj is None:
            raise ValueError("a reference to no object")
        return obj
    if kind is tuple:
        return tuple(_pg_resolve(item) for item in value)
    return value


def _pg_apply(message):
    """The value of a message read by _pv_read, after its nodes are applied in place to the graph's
    objects (each keeps its identity; new ones are made) and the numbers it forgets are dropped
    (after: a forgotten object's last change still reaches a candidate that holds it)."""
    if type(message) is not list or len(message) not in (2, 3):
        raise ValueError("a message is a value, its nodes and the numbers it forgets")
    value, nodes = message[:2]
    forgotten = message[2] if len(message) == 3 else []
    if any(type(rid) is not int or rid not in _PG_OBJS for rid in forgotten) or len(set(forgotten)) != len(forgotten):
        raise ValueError("a forgotten number that is no object of the graph")
    for rid, content in nodes:
        if type(content) not in (list, dict, set):
            raise ValueError("a node that is not a list, dict or set")
        if rid == _PG_NEXT[0]:
            _pg_id(type(content)())
        elif type(rid) is not int or rid not in _PG_OBJS or type(_PG_OBJS[rid]) is not type(content):
            raise ValueError("a node that is no object of the graph")
    for rid, content in nodes:
        obj = _PG_OBJS[rid]
        if type(obj) is list:
            obj[:] = [_pg_resolve(item) for item in content]
        elif type(obj) is dict:
            items = [(_pg_resolve(key), _pg_resolve(item)) for key, item in content.items()]
            obj.clear()
            obj.update(items)
        else:
            items = [_pg_resolve(item) for item in content]
            obj.clear()
            obj.update(items)
    for rid, _ in nodes:
        _PG_LAST[rid] = _pg_node(_PG_OBJS[rid])
    _pg_forget(forgotten)
    return _pg_resolve(value)


def _pg_holders():
    """How often each graph object and each tuple reachable from the graph's contents is held by
    the graph's own structures: {id: [object, count]} (tuples only through list items and dict
    values: a list, dict or set is never a key or a set's element)."""
    held = {id(obj): [obj, 1] for obj in _PG_OBJS.values()}  # _PG_OBJS's own reference (the entry's is not counted)
    todo = list(_PG_OBJS.values())
    while todo:
        obj = todo.pop()
        for item in (obj.values() if type(obj) is dict else obj if type(obj) is not set else ()):
            kind = type(item)
            if kind in (list, dict, set) or kind is tuple:
                entry = held.get(id(item))
                if entry is None:
                    # A tuple met for the first time: its items are counted once.
                    held[id(item)] = entry = [item, 0]
                    todo.append(item)
                entry[1] += 1
    return held


def _pg_counts(held):
    return {key: _pv_refcount(entry[0]) for key, entry in held.items()}


def _pg_unreachable():
    """The numbers of the graph's objects the tests cannot reach, in order. An object or a
    tuple whose reference count is more than the graph's own references to it is held from outside
    (the tests, the arguments of this call); everything reachable from those stays. CPython counts
    references exactly, so this depends only on the tests and the answers they got, never on the
    collector's timing (the graph holds its objects strongly)."""
    held = _pg_holders()
    counts = _pg_counts(held)
    # What the entry's own reference reads as in _pg_counts (the call's own references added).
    unit = _pg_counts({0: [[]]})[0]
    todo = [entry[0] for key, entry in held.items() if counts[key] - unit > entry[1]]
    reached = set()
    while todo:
        obj = todo.pop()
        if id(obj) in reached:
            continue
        reached.add(id(obj))
        kind = type(obj)
        todo.extend(item for item in (obj.values() if kind is dict else obj if kind is not set else ())
                    if type(item) in (list, dict, set, tuple))
    return [rid for rid, obj in _PG_OBJS.items() if id(obj) not in reached]
'''
