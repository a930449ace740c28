"""Round-trip result rows in the table schema, for the tests of the round trip's report section."""
from __future__ import annotations

import math


def _row(task, lang, gen, p, c, a=0.5, error=None):
    return {"task_id": task, "programming_language": "python", "language": lang, "generator": gen, "sample": 0,
            "comment_source": "given", "comment": "x", "code": "def f(): pass", "status": "error" if error else ("passed" if p else "failed"),
            "reason": "", "pass_at_1": p, "correctness": c, "n_inputs": 4, "abstraction": a, "conciseness": None,
            "fluency": None, "error": error}


ROWS = [
    _row("t1", "en", "g", 1.0, 1.0), _row("t2", "en", "g", 1.0, 0.5),
    _row("t1", "zh", "g", 0.0, 0.25), _row("t2", "zh", "g", 1.0, 0.75, a=0.9),
    _row("t3", "zh", "g", math.nan, math.nan, error="comment generation failed: x"),
]
