"""What the driver says when a Ray cluster refuses it, from the errors Ray raises.

The exceptions are Ray's own classes with the texts Ray puts in them (an AuthenticationError
for an unreadable token file; a connection error whose text embeds a formatted traceback),
so these check only our reading of them; the real refusals run in test_ray_user_cluster.py.
"""
from __future__ import annotations

import traceback

import pytest
from ray.exceptions import AuthenticationError

from engine.errors import ClusterError
from engine.executors.cluster import check_token_file, clip, connection_error, summary


def _with_traceback(message: str) -> ConnectionError:
    try:
        raise RuntimeError("Received http2 header with status: 404 rpc_code: 12")
    except RuntimeError:
        last = traceback.format_exc()  # how Ray reports its last failed GCS connection
    return ConnectionError(f"{message} Last connection error: {last}")


def test_a_traceback_inside_the_error_gives_its_exception_line():
    exc = _with_traceback("Failed to connect to GCS.")
    assert str(exc).splitlines()[0].endswith("Traceback (most recent call last):")
    text = str(connection_error("10.0.0.1:6379", exc))
    assert "Traceback" not in text
    assert "Failed to connect to GCS. Last connection error: RuntimeError: Received http2 header with status: 404" in text
    assert "ray status --address=10.0.0.1:6379" in text


def test_an_unreadable_token_file_is_named_with_its_fix(tmp_path):
    for path in (tmp_path / "empty_token", tmp_path / "missing", tmp_path):
        exc = AuthenticationError(f"RAY_AUTH_TOKEN_PATH is set but file cannot be opened or is empty: {path}")
        text = str(connection_error("127.0.0.1:6379", _wrapped(exc)))
        assert text.startswith(f"this driver's Ray authentication token file cannot be read: RAY_AUTH_TOKEN_PATH={path} ")
        assert "cannot connect" not in text and "Check that the head node runs" not in text
        assert "RAY_AUTH_MODE=disabled" in text and text.count("(") == text.count(")")


def _wrapped(cause: BaseException) -> ConnectionError:
    try:
        try:
            raise cause
        except AuthenticationError as inner:
            raise ConnectionError("ray.init failed") from inner
    except ConnectionError as outer:
        return outer


def test_clip_cuts_at_a_boundary_outside_brackets():
    text = ("RAY_AUTH_TOKEN_PATH is set but file cannot be opened. Ensure that the token is in a local file "
            "(e.g., ~/.ray/auth_token or via RAY_AUTH_TOKEN_PATH) or as the `RAY_AUTH_TOKEN` environment variable.")
    for limit in range(20, len(text)):
        cut = clip(text, limit)
        assert cut.endswith(" ...") and len(cut) <= limit + 4, (limit, cut)
        kept = cut[: -len(" ...")]
        assert text.startswith(kept) and text[len(kept)] in " .", (limit, cut)  # whole words only
        assert kept.count("(") == kept.count(")") and kept.count("`") % 2 == 0, (limit, cut)
    assert clip(text, len(text)) == text


def test_summary_keeps_a_plain_first_line():
    assert summary(RuntimeError("head gone\nmore detail")) == "head gone"
    assert summary(RuntimeError("")) == "RuntimeError"


def test_an_unreadable_token_file_is_refused_before_connecting(tmp_path, monkeypatch):
    good, empty, blank = tmp_path / "auth_token", tmp_path / "empty", tmp_path / "blank"
    good.write_text("0123abcd\n")
    empty.write_text("")
    blank.write_text("\n \n")
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    for path in (empty, blank, tmp_path / "missing", tmp_path):
        monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(path))
        with pytest.raises(ClusterError, match=f"token file cannot be read: RAY_AUTH_TOKEN_PATH={path} is missing"):
            check_token_file("127.0.0.1:6379")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(good))
    check_token_file("127.0.0.1:6379")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(empty))
    monkeypatch.setenv("RAY_AUTH_TOKEN", "0123abcd")  # the token itself wins over the file
    check_token_file("127.0.0.1:6379")
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # no token is read at all
    check_token_file("127.0.0.1:6379")
