"""The driver's link to a Ray cluster, in words a user can act on (no Ray import here).

A head that is not there makes `ray.init` retry for minutes, so the address is probed with a
plain TCP connection first. What `ray.init` raises when the cluster refuses the driver (another
authentication token, another Ray or Python version) becomes one `ClusterError` naming the
cause and the fix; the CLI gives it its own exit status.
"""
from __future__ import annotations

import os
import re
import socket

from engine.errors import ClusterError

_PROBE_TIMEOUT_S = 10.0  # a head that does not accept a TCP connection within this is unreachable
_DOCS = "docs/cluster.md"


def host_port(address: str) -> tuple[str, int] | None:
    """HOST:PORT of a GCS address; None for forms that are not one (`auto`, `ray://...`)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or "/" in address or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def probe(address: str) -> None:
    """Fail at once when nothing listens at the head's address: `ray.init` would retry for minutes."""
    target = host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=_PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}. Start the head node there "
            f"(`ray start --head --port={target[1]}`, {_DOCS}) or give the head's address with --ray-address; "
            f"`ray status --address={address}` checks it"
        ) from None


def connection_error(address: str, exc: BaseException) -> ClusterError:
    """One message naming why the cluster refused this driver and what to do."""
    chain = _chain(exc)  # ray.init wraps the refusal (an AuthenticationError) in a ConnectionError
    text = "\n".join(str(e) for e in chain)
    cause = chain[-1]
    first = summary(cause)
    unreadable = re.search(r"RAY_AUTH_TOKEN_PATH is set but file cannot be opened or is empty: (.+?)\.?(?: |$)", text, re.M)
    if unreadable:
        return _unreadable_token(address, unreadable.group(1).strip())
    if "InvalidAuthToken" in text or "authentication token" in text.lower():
        found = re.search(r"InvalidAuthToken: [^.\n]*", text)
        return ClusterError(
            f"the Ray cluster at {address} refused this driver's authentication token "
            f"({found.group(0) if found else clip(first, 200)}). "
            "Run the driver with the cluster's token: export RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=<the token "
            "file every node was started with> (or RAY_AUTH_TOKEN); on a cluster started without token "
            f"authentication, export RAY_AUTH_MODE=disabled ({_DOCS}, \"The token\")"
        )
    if "Version mismatch" in text or "version mismatch" in text:
        found = re.search(r"[Vv]ersion mismatch:.*", text, re.S)
        versions = clip(found.group(0) if found else first, 300)
        return ClusterError(
            f"the Ray cluster at {address} runs another Ray or Python version than this driver ({versions}). "
            f"Run the driver with the installation the nodes run (same Python, same `make setup`; {_DOCS}), "
            "or start the cluster from this installation"
        )
    return ClusterError(
        f"cannot connect to the Ray cluster at {address} ({type(exc).__name__}: {clip(first, 300)}). Check that "
        f"the head node runs (`ray status --address={address}`) and that this driver has the cluster's "
        f"environment ({_DOCS})"
    )


def check_token_file(address: str) -> None:
    """With token authentication on and the token in a file, fail at once, naming the file,
    when it cannot be read or is empty (Ray would say so only after connecting, or abort)."""
    if os.environ.get("RAY_AUTH_MODE", "").strip().lower() != "token" or os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return
    path = os.environ.get("RAY_AUTH_TOKEN_PATH", "").strip()
    if not path:
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            readable = bool(handle.read().strip())
    except OSError:
        readable = False
    if not readable:
        raise _unreadable_token(address, path)


def _unreadable_token(address: str, path: str) -> ClusterError:
    return ClusterError(
        f"this driver's Ray authentication token file cannot be read: RAY_AUTH_TOKEN_PATH={path} is missing, "
        "empty or not a file. Point RAY_AUTH_TOKEN_PATH at the token file every node of the cluster at "
        f"{address} was started with (or export RAY_AUTH_TOKEN); on a cluster started without token "
        f"authentication, export RAY_AUTH_MODE=disabled ({_DOCS}, \"The token\")"
    )


_TRACEBACK = "Traceback (most recent call last):"


def summary(exc: BaseException) -> str:
    """The informative part of an error's text: its first line, and where that line only
    introduces a traceback (Ray puts one inside its messages), the exception line ending it."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    head = lines[0]
    if _TRACEBACK not in head and not (len(lines) > 1 and lines[1] == _TRACEBACK):
        return head
    head = head.replace(_TRACEBACK, "").strip()
    tail = lines[-1]
    return f"{head} {tail}" if head and tail != _TRACEBACK else head or tail


def clip(text: str, limit: int) -> str:
    """`text` on one line, at most about `limit` characters: cut at a sentence end or else a
    word boundary, never inside parentheses or backquotes, and marked with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = head.rfind(". ")
    head = head[: end + 1] if end >= limit // 2 else head.rsplit(" ", 1)[0]
    while head.count("(") > head.count(")"):
        head = head[: head.rfind("(")].rstrip()
    if head.count("`") % 2:
        head = head[: head.rfind("`")].rstrip()
    return head.rstrip(" ,;:") + " ..."


def _chain(exc: BaseException) -> list[BaseException]:
    chain = [exc]
    while len(chain) < 10:
        nxt = chain[-1].__cause__ or chain[-1].__context__
        if nxt is None or nxt in chain:
            break
        chain.append(nxt)
    return chain


def lost_error(address: str | None, exc: BaseException) -> ClusterError:
    return ClusterError(
        f"lost the Ray cluster{' at ' + address if address else ''} in the middle of the run "
        f"({type(exc).__name__}: {clip(summary(exc), 300)}). Committed parts are kept: start the cluster "
        "again (or give another with --ray-address), then rerun the same command with --resume"
    )
