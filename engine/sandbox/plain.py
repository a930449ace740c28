"""The plain-value stream: how arguments and return values cross between the two sandboxes.

A candidate (the regenerated function) runs as a small server in one sandbox; the task's tests
run in another and call it through a proxy of the function's signature (engine.sandbox.relay).
Every value between them is text in this one format, written and read by a few lines of code in
each of the six languages (engine/sandbox/proxies/) and read here by the engine with limits, so
that no object of the candidate's ever reaches the tests: only values do.

Tokens (one space apart): `n`, `v` (undefined), `t`, `f`, `i<decimal>`, `d<float>`,
`s<bytes>:<UTF-8>`, `l<count>`/`u<count>`/`e<count>` (list, tuple, set), `m<count>` (pairs) and
`g <name> <value>` (a typed value: a type the language's equality tells apart from another of
the same shape). A message is `<length>\\n<payload>`; a reply is `o <value>`, `x s<n>:<type>` or
`z s<n>:<why>`. docs/sandbox.md ("The plain-value stream") has the table and the typed values.
"""
from __future__ import annotations

import math
import re
import threading
import time
from typing import Any

# Bytes of one call or reply: a large answer (a 3 MiB string) crosses whole. What a message costs
# the engine to parse and hold grows with its values, not its bytes (a string is one slice), so
# MAX_VALUES bounds that: as many as a 1 MiB message could hold at two bytes a value.
MAX_MESSAGE = 16 << 20
MAX_VALUES = 1 << 19
MAX_DEPTH = 32
# What one row may make the engine parse, over all its messages: bytes and CPU seconds of the
# parsing thread (a row that sends message after message is refused, never parsed without end).
ROW_BYTES = 128 << 20
ROW_PARSE_SECONDS = 20.0
# Digits of one integer (7**6000 has 5,073). Decimal conversion costs the square of the digits, so
# the limit keeps a 16 MiB message of such integers within seconds; conversions go in chunks under
# the interpreter's own int_max_str_digits (4,300), which the engine leaves as it is.
MAX_DIGITS = 10_000
_CHUNK = 4000
MAX_EXCEPTION_NAME = 128  # characters of an exception's type name kept from a reply
MAX_EXCEPTION_BASES = 16  # type names of an exception's chain (its own, then its bases) kept from a reply
MAX_EXCEPTION_MESSAGE = 4096  # characters of an exception's message kept from a reply
# What the proxies' type names use (Python identifiers, Java's `a.b.C$D`, Go's `*pkg.T`, `[]T`, C++'s `std::out_of_range`);
# any other character (spaces, quotes, newlines, markup) becomes `_` before the name goes anywhere.
_TAG_NAME = re.compile(r"[A-Za-z0-9_.\-\[\]*]{1,32}")  # `g`'s type names: Integer, Map, NegativeZero, Go's []int8, ...
_NAME_OTHER = re.compile(r"[^A-Za-z0-9_.:$*\[\]]")


class PlainError(ValueError):
    """A message that is not a well-formed plain value within the limits."""


# What one parsed value costs the engine's memory (a small tuple, its slot in a list, an int):
# a message is charged this per value when that is more than its bytes, so the row's budget holds
# for what the engine holds parsed (`l500000 i0 i1 ...` is 3.4 MB of text and 40 MB parsed).
PARSED_VALUE_BYTES = 80
_COUNTED = threading.local()  # values parsed by this thread since Budget.spend started


class Budget:
    """What one row has left to make the engine parse (ROW_BYTES, ROW_PARSE_SECONDS); each
    message is charged after it is parsed (its bytes, or PARSED_VALUE_BYTES per value parsed
    when that is more), and a message that arrives once either is spent is refused (PlainError)
    without being parsed."""

    def __init__(self) -> None:
        self.max_bytes, self.max_seconds = ROW_BYTES, ROW_PARSE_SECONDS
        self.bytes_left, self.seconds_left = self.max_bytes, self.max_seconds

    def reply(self, payload: bytes) -> tuple[str, Any]:
        return self.spend(payload, reply)

    def spend(self, payload: bytes, parser: Any) -> Any:
        if self.bytes_left < len(payload) or self.seconds_left <= 0:
            raise PlainError(f"the row's parse budget is spent ({self.max_bytes >> 20} MiB of messages or of their parsed "
                             f"values, {self.max_seconds:g} s of the engine's CPU over all its messages)")
        start = time.thread_time()
        _COUNTED.values = 0
        try:
            return parser(payload)
        finally:
            self.bytes_left -= max(len(payload), _COUNTED.values * PARSED_VALUE_BYTES)
            self.seconds_left -= time.thread_time() - start


def parse(payload: bytes, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> tuple[Any, int]:
    """(value, end offset) of the value at the start of `payload`; iterative, so depth costs no stack."""
    pos, n = 0, len(payload)
    values = 0
    # Each frame: [kind, remaining count, items]; the value under construction goes to the top frame.
    stack: list[list] = []
    while True:
        if pos >= n:
            raise PlainError("message ends inside a value")
        values += 1
        if values > max_values:
            raise PlainError(f"more than {max_values} values in one message")
        tag = payload[pos:pos + 1]
        if tag == b"s":
            colon = payload.find(b":", pos, pos + 12)
            if colon < 0:
                raise PlainError("string without a length")
            size = _count(payload[pos + 1:colon])
            start, pos = colon + 1, colon + 1 + size
            if pos > n:
                raise PlainError("string runs past the message")
            try:
                value: Any = ("s", payload[start:pos].decode("utf-8"))
            except UnicodeDecodeError:
                raise PlainError("string is not UTF-8") from None
        else:
            end = payload.find(b" ", pos)
            end = n if end < 0 else end
            raw = payload[pos:end]
            if not raw.isascii():
                raise PlainError(f"a token with a byte that is not ASCII: {raw[:20]!r}")
            token = raw.decode("ascii")
            pos = end
            if token in ("n", "v", "t", "f"):
                value = (token,)
            elif token[:1] == "i":
                digits = token[1:].removeprefix("-")
                if len(digits) > MAX_DIGITS:
                    raise PlainError(f"integer of more than {MAX_DIGITS} digits")
                if not digits.isdigit() or not digits.isascii():
                    raise PlainError(f"bad integer {token[:20]!r}")
                number = _from_digits(digits)
                value = ("i", -number if token[1:2] == "-" else number)
            elif token[:1] == "d":
                try:
                    value = ("d", float(token[1:]))
                except ValueError:
                    raise PlainError(f"bad float {token[:20]!r}") from None
            elif token == "g":
                if len(stack) >= max_depth:
                    raise PlainError(f"values nest deeper than {max_depth} levels")
                stack.append(["g", 2, []])
                pos = _space(payload, pos)
                continue
            elif token[:1] in ("l", "u", "e", "m"):
                count = _count(raw[1:])
                # Every value takes at least two bytes: a count beyond what is left is a lie.
                if count * (4 if token[0] == "m" else 2) > n - pos + 1:
                    raise PlainError(f"{token[0]}{count} announces more values than the message holds")
                if len(stack) >= max_depth:
                    raise PlainError(f"values nest deeper than {max_depth} levels")
                stack.append([token[0], count * (2 if token[0] == "m" else 1), []])
                if stack[-1][1] > 0:
                    pos = _space(payload, pos)
                    continue
                kind, _, items = stack.pop()
                value = (kind, items)
            else:
                raise PlainError(f"unknown token {token[:20]!r}")
        # Hand the finished value up through every frame it completes.
        while True:
            if not stack:
                _COUNTED.values = getattr(_COUNTED, "values", 0) + values
                return value, pos
            frame = stack[-1]
            if frame[0] == "g" and frame[1] == 2:
                _tag_name(value)
            frame[2].append(value)
            frame[1] -= 1
            if frame[1] > 0:
                break
            stack.pop()
            value = (frame[0], frame[2] if frame[0] != "m" else list(zip(frame[2][::2], frame[2][1::2])))
        pos = _space(payload, pos)


def _tag_name(value: Any) -> None:
    """PlainError unless `value` is a typed value's name: a short string of a type name's alphabet."""
    if value[0] != "s" or not _TAG_NAME.fullmatch(value[1]):
        raise PlainError("a typed value's name must be a string of at most 32 letters, digits or '_.-[]*'")


def _from_digits(digits: str) -> int:
    """int(digits) for up to MAX_DIGITS decimal digits, in chunks the interpreter converts."""
    number = 0
    for start in range(0, len(digits), _CHUNK):
        chunk = digits[start:start + _CHUNK]
        number = number * 10 ** len(chunk) + int(chunk)
    return number


def int_text(number: int) -> bytes:
    """b"%d" % number, in chunks the interpreter converts (an integer of more digits than its limit crosses too)."""
    if number.bit_length() < 13_000:  # under 3,914 digits
        return b"%d" % number
    sign, number = (b"-", -number) if number < 0 else (b"", number)
    parts = []
    base = 10 ** _CHUNK
    while number >= base:
        number, low = divmod(number, base)
        parts.append(b"%0*d" % (_CHUNK, low))
    return sign + b"%d" % number + b"".join(reversed(parts))


def _count(text: bytes) -> int:
    if not text or not text.isdigit() or len(text) > 9:
        raise PlainError(f"bad count {text[:20]!r}")
    return int(text)


def _space(payload: bytes, pos: int) -> int:
    if payload[pos:pos + 1] != b" ":
        raise PlainError("values must be separated by one space")
    return pos + 1


def write(value: Any) -> bytes:
    """The stream form of a parsed value (the engine re-writes every reply it forwards)."""
    out: list[bytes] = []
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, bytes):
            out.append(item)
            continue
        kind = item[0]
        if kind in ("n", "v", "t", "f"):
            out.append(kind.encode())
        elif kind == "g":
            out.append(b"g")
            for child in reversed(item[1]):
                todo.append(child)
                todo.append(b" ")
        elif kind == "i":
            out.append(b"i" + int_text(item[1]))
        elif kind == "d":
            x = item[1]
            out.append(b"d" + (b"nan" if math.isnan(x) else repr(x).encode()))
        elif kind == "s":
            data = item[1].encode("utf-8")
            out.append(b"s%d:" % len(data) + data)
        else:
            children = [v for pair in item[1] for v in pair] if kind == "m" else list(item[1])
            count = len(item[1])
            out.append(b"%s%d" % (kind.encode(), count))
            for child in reversed(children):
                todo.append(child)
                todo.append(b" ")
    return b"".join(out)


def reply(payload: bytes) -> tuple[str, Any]:
    """('o', value) / ('x', exception name) / ('z', why) / ('a', l2 of the value and the argument
    list after the call, or l3 with the earlier calls' arguments it changed: engine.sandbox.arguments)
    of a server's reply; PlainError otherwise."""
    if len(payload) > MAX_MESSAGE:
        raise PlainError(f"reply of {len(payload)} bytes is longer than {MAX_MESSAGE}")
    kind = payload[:2]
    if kind not in (b"o ", b"x ", b"z ", b"a "):
        raise PlainError("a reply starts with 'o ', 'x ', 'z ' or 'a '")
    # An `a` reply's value and arguments sit two lists deeper than an `o` reply's value.
    value, end = parse(payload[2:], max_depth=MAX_DEPTH + (2 if kind == b"a " else 0))
    if end != len(payload) - 2:
        raise PlainError("bytes after the reply's value")
    if kind == b"a " and (value[0] != "l" or len(value[1]) not in (2, 3) or any(part[0] != "l" for part in value[1][1:])):
        raise PlainError("an 'a' reply is a list of the returned value, the argument list and the earlier arguments' changes")
    if kind in (b"x ", b"z ") and value[0] != "s":
        raise PlainError("an exception's name must be a string")
    _refuse_repeats(value)
    if kind == b"x ":
        value = ("s", exception_text(value[1]))
    return kind[:1].decode(), value


def exception_text(text: str) -> str:
    """A candidate's exception as the engine keeps, relays and compares it. A server that knows its
    exception's bases (Python, JavaScript) writes `<own name> <base> <base>...\n<message>`: each
    name goes through `exception_name`, at most MAX_EXCEPTION_BASES of them, the message is cut to
    MAX_EXCEPTION_MESSAGE characters. Any other text (Java, C++, Go, Rust) is one name."""
    head, newline, message = text.partition("\n")
    if not newline:
        return exception_name(text)
    names = [exception_name(name) for name in head.split(" ")[:MAX_EXCEPTION_BASES]]
    return " ".join(names) + "\n" + message[:MAX_EXCEPTION_MESSAGE]


def exception_chain(text: str) -> list[str]:
    """The type names of an `exception_text`: the exception's own first, then its bases."""
    return text.partition("\n")[0].split(" ")


def exception_name(name: str) -> str:
    """A candidate's exception type name as the engine keeps and shows it: at most
    MAX_EXCEPTION_NAME characters, each outside a type name's alphabet replaced by `_`. Both
    sides' names pass through here before they are compared, so equal names stay equal; a
    program can choose its name freely anyway, so no name it could not have raised agrees."""
    return _NAME_OTHER.sub("_", name[:MAX_EXCEPTION_NAME]) or "_"


def _refuse_repeats(value: Any) -> None:
    """PlainError for a map with a repeated key or a set with a repeated element: no server's codec
    writes one from a real map or set, and a proxy would keep only one of them (`{1: 5, 1: 3}`
    would pass for `{1: 3}` where the engine's comparison says they differ).

    Each container's stream text is built once, from its children's texts (post-order), so sets
    nested in sets cost the bytes of each level once, not a re-write of every subtree per level."""
    texts: list[bytes] = []
    todo: list[tuple[Any, bool]] = [(value, False)]
    while todo:
        node, ready = todo.pop()
        kind = node[0]
        if kind not in ("l", "u", "e", "m", "g"):
            texts.append(write(node))
            continue
        children = [v for pair in node[1] for v in pair] if kind == "m" else node[1]
        if not ready:
            todo.append((node, True))
            todo.extend((child, False) for child in reversed(children))
            continue
        parts = texts[len(texts) - len(children):] if children else []
        del texts[len(texts) - len(children):]
        if kind == "e" and len(set(parts)) != len(parts):
            raise PlainError("a set with a repeated element")
        if kind == "m" and len(set(parts[0::2])) != len(node[1]):
            raise PlainError("a map with a repeated key")
        head = b"g" if kind == "g" else b"%s%d" % (kind.encode(), len(node[1]))
        texts.append(b" ".join([head, *parts]))


def frame(payload: bytes) -> bytes:
    return b"%d\n" % len(payload) + payload
