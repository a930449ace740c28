"""Four small Python round-trip tasks (one never returns) and a round-trip config over them."""
from __future__ import annotations

import json
from pathlib import Path

TASKS = [
    {"task_id": "add", "entry_point": "add", "code": 'def add(a: int, b: int) -> int:\n    """Sum of a and b."""\n    return a + b\n',
     "tests": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"},
    {"task_id": "rev", "entry_point": "rev", "code": 'def rev(s: str) -> str:\n    """The string reversed."""\n    return s[::-1]\n',
     "tests": "assert rev('abc') == 'cba'\n"},
    {"task_id": "evens", "entry_point": "evens",
     "code": 'from typing import List\n\ndef evens(xs: List[int]) -> List[int]:\n    """The even numbers of xs, in order."""\n'
             '    return [x for x in xs if x % 2 == 0]\n',
     "tests": "def check(candidate):\n    assert candidate([1, 2, 3, 4]) == [2, 4]\n"},
    {"task_id": "loops", "entry_point": "loops", "code": 'def loops(n: int) -> int:\n    """Never returns."""\n    while True:\n        n += 1\n',
     "tests": "def check(candidate):\n    assert candidate(1) == 2\n"},
]
ORACLE = {"model": "oracle", "backend": "oracle"}
# A generous wall limit: on a loaded machine the CPU limit, not the wall clock, must stop `loops`.
SANDBOX = {"cpu_seconds": 1, "wall_seconds": 30.0}
CALL_SECONDS = 0.1  # per call in differential testing: `loops` costs 0.1 s per input


def _tasks_file(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return path


def roundtrip_config(tmp_path: Path, roundtrip: dict, part_size: int = 1):
    raw = {"name": "rt", "input": "builtin:demo", "stages": ["roundtrip"],
           "roundtrip": {"tasks": str(_tasks_file(tmp_path)), "tasks_per_part": part_size, "sandbox": SANDBOX, "inputs": 10,
                         "call_seconds": CALL_SECONDS, **roundtrip}}
    return raw
