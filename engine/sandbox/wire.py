"""Text that came from a sandboxed program, as the engine quotes it in a row's `reason`.

Values from a sandbox are read by engine.sandbox.plain (with limits) and compared by
engine.sandbox.compare; the one thing left here is the program's own text (stdout, stderr,
a server's reason), which is cut and marked so that it never passes for the engine's words.
"""
from __future__ import annotations


def program_text(text: str, limit: int = 200) -> str:
    """Text that came from a sandboxed program, cut to `limit` characters and marked as such."""
    text = " ".join(text.split())
    cut = text[:limit] + (f"... [{len(text) - limit} more characters cut]" if len(text) > limit else "")
    return f"[program output] {cut!r}"
