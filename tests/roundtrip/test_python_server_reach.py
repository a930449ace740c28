"""Python's server keeps its bookkeeping out of the candidate's reach by name: attacks written as
model completions, through the stage's own path, next to honest controls that must pass.

Wrong programs that passed: a "sorted copy" that sorts its argument in place and then marks the
argument unchanged in the server's graph (reached as `import __main__`, the server's own module,
or through `gc.get_objects()`), so the tests never saw the change one process shows them. Honest
programs that must keep passing: a context with `if __name__ == "__main__":` code, logging,
namedtuple, enum, warnings and inspect (which look at frames), a candidate that replaces a
built-in for itself.
"""
from __future__ import annotations

import pytest

from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row, reference_completion

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = next(t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add") and t["programming_language"] == "python")

SORTED = {**ADD, "entry_point": "sorted_copy", "signature": "def sorted_copy(xs: list) -> list:",
          "code": "def sorted_copy(xs: list) -> list:\n    return sorted(xs)\n",
          "tests": "def check(candidate):\n    xs = [3, 1, 2]\n    assert candidate(xs) == [1, 2, 3]\n    assert xs == [3, 1, 2]\n"}

# Each sorts its argument, then writes the argument's new state as the state last sent, wherever
# it finds the server's graph (the names of the graph's bookkeeping on the code before the fix).
_HIDE = ("    xs.sort()\n    try:\n{find}"
         "        space[\"_PG_LAST\"][space[\"_PG_IDS\"][id(xs)]] = space[\"_pg_node\"](xs)\n"
         "    except Exception:\n        pass\n    return list(xs)\n")
ATTACKS = {
    "import __main__": _HIDE.format(find="        import __main__\n        space = vars(__main__)\n"),
    "gc.get_objects": _HIDE.format(find="        import gc\n        space = next(o for o in gc.get_objects()"
                                        " if type(o) is dict and \"_PG_LAST\" in o)\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_candidate_cannot_mark_its_changed_argument_unchanged(attack):
    row = completion_row(SORTED, ATTACKS[attack], LIMITS)
    assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row


CONTEXT = ("import enum\nimport logging\nfrom collections import namedtuple\n\nPair = namedtuple('Pair', 'low high')\n"
           "LOG = logging.getLogger(__name__)\nMAIN = False\n\n\nclass Side(enum.Enum):\n    LOW = 1\n    HIGH = 2\n\n\n"
           "if __name__ == '__main__':\n    MAIN = True\n")
SPAN = {**ADD, "context": CONTEXT, "entry_point": "span", "signature": "def span(xs: list) -> list:",
        "code": "def span(xs: list) -> list:\n    import __main__\n    LOG.info('span of %d', len(xs))\n"
                "    found = Pair(min(xs), max(xs))\n    Local = namedtuple('Local', 'a')\n"
                "    assert MAIN and __main__.Pair is Pair and Side(1) is Side.LOW and Local(1).a == 1\n"
                "    import logging\n    logging.basicConfig(level=logging.INFO)\n    logging.getLogger('x').info('seen')\n"
                "    import inspect\n    import warnings\n    warnings.warn('a warning')\n"
                "    assert inspect.currentframe().f_code.co_name == 'span' and len(inspect.stack()) >= 2\n"
                "    return [found.low, found.high]\n",
        "tests": "def check(candidate):\n    xs = [3, 1, 2]\n    assert candidate(xs) == [1, 3]\n    assert xs == [3, 1, 2]\n"
                 "    assert candidate([5]) == [5, 5]\n"}
OWN_LEN = {**ADD, "entry_point": "count", "signature": "def count(xs: list) -> int:",
           "code": "def count(xs: list) -> int:\n    import builtins\n    real = builtins.len\n"
                   "    builtins.len = lambda v: real(v)\n    return len(xs)\n",
           "tests": "def check(candidate):\n    xs = [3, 1, 2]\n    assert candidate(xs) == 3\n    xs.append(4)\n"
                    "    assert candidate(xs) == 4\n"}
HONEST = {"main block, logging, namedtuple, enum": SPAN, "replaces a built-in for itself": OWN_LEN}


@needs_bwrap
@pytest.mark.parametrize("control", sorted(HONEST))
def test_honest_programs_that_use_their_main_module_pass(control):
    task = HONEST[control]
    row = completion_row(task, reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row
