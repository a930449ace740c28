"""Python's shared graph forgets what the tests cannot reach, and only that.

Honest programs that cost too much when every object that ever crossed stayed in the graph: a
function returning new lists on every call made each later message write all of them (300 calls
of 21 lists took about 10 s, 2000 calls of one list about 18 s, where one process takes
milliseconds). The proxy drops the objects the tests do not hold and tells the server in the next
call; the recording of the tests' calls shows it (the graph stays small). Honest controls: objects the tests still hold directly,
through a tuple, a dict view or a row of a dropped grid keep their identity with the candidate's,
and a memoising reference agrees with a candidate that makes a fresh list once the tests dropped
the first. Written as model completions through the stage's own path.
"""
from __future__ import annotations

import pytest

from engine.roundtrip import values
from engine.sandbox import plain
from tests.roundtrip.test_python_server_reach import ADD, LIMITS, needs_bwrap
from tests.support.stage_rows import completion_row, reference_completion


def _py(entry: str, body: str, tests: str, context: str = "") -> dict:
    signature = f"def {entry}(x):"
    return {**ADD, "context": context, "entry_point": entry, "signature": signature, "code": f"{signature}\n{body}",
            "tests": "def check(candidate):\n" + tests}


ONE = _py("one", "    return [x]\n", "    for k in range(2000):\n        assert candidate(k) == [k]\n")


def _live_after_each_call(recorded: values.Recorded) -> list[int]:
    """How many objects the graph holds when each call is sent: numbers given minus numbers forgotten."""
    given, forgotten, live = 0, set(), []
    for call, reply in zip(recorded.calls, recorded.replies):
        message = plain.parse(call)[0][1][1][1]
        if len(message) == 3:
            forgotten.update(number[1] for number in message[2][1])
        live.append(given - len(forgotten))
        for node in plain.reply(reply)[1][1][1][1]:
            given = max(given, node[1][0][1] + 1)
    return live


@needs_bwrap
def test_the_graph_holds_only_what_the_tests_still_reach():
    recorded = values.record(ONE, LIMITS)
    assert not recorded.error and len(recorded.calls) == 2000, recorded.error
    # Each call's list is dropped by the tests before the next call: at most it is still numbered.
    assert max(_live_after_each_call(recorded)) <= 1
    row = completion_row(ONE, reference_completion(ONE), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


# The candidate keeps a list and changes it on later calls: the tests, holding it by some route,
# see each change as in one process (a list forgotten while the tests hold it would not change).
MEMO = "MEMO = []\n"
HELD = {
    "directly": _py("grow", "    if x == 0:\n        MEMO.append([1])\n        return MEMO[0]\n    MEMO[0].append(x)\n    return x\n",
                    "    r = candidate(0)\n    assert candidate(2) == 2\n    assert candidate(3) == 3\n    assert r == [1, 2, 3]\n",
                    MEMO),
    "through a tuple": _py("grow", "    if x == 0:\n        MEMO.append([1])\n        return [(MEMO[0],)]\n    MEMO[0].append(x)\n"
                                   "    return x\n",
                           "    t = candidate(0)[0]\n    assert candidate(2) == 2\n    assert candidate(3) == 3\n"
                           "    assert t[0] == [1, 2, 3]\n", MEMO),
    "through a dict view": _py("grow", "    if x == 0:\n        MEMO.append([1])\n        return {'a': MEMO[0]}\n"
                                       "    MEMO[0].append(x)\n    return x\n",
                               "    v = candidate(0).values()\n    assert candidate(2) == 2\n    assert candidate(3) == 3\n"
                               "    assert list(v) == [[1, 2, 3]]\n", MEMO),
    "a row of a dropped grid": _py("grow", "    if x == 0:\n        MEMO.append([1])\n        return [[0], MEMO[0], ([5],)]\n"
                                           "    MEMO[0].append(x)\n    return x\n",
                                   "    row = candidate(0)[1]\n    assert candidate(2) == 2\n    assert candidate(3) == 3\n"
                                   "    assert row == [1, 2, 3]\n", MEMO),
    "inside a held grid": _py("grow", "    if x == 0:\n        MEMO.append([1])\n        return [[MEMO[0]]]\n"
                                      "    MEMO[0].append(x)\n    return x\n",
                              "    g = candidate(0)\n    assert candidate(2) == 2\n    assert candidate(3) == 3\n"
                              "    assert g == [[[1, 2, 3]]]\n", MEMO),
    "many results kept": _py("one", "    return [x]\n",
                             "    kept = [candidate(k) for k in range(50)]\n    kept[7].append(1)\n"
                             "    assert candidate(kept[7]) == [[7, 1]]\n    assert kept[7] == [7, 1] and kept[49] == [49]\n"),
}


@needs_bwrap
@pytest.mark.parametrize("control", sorted(HELD))
def test_objects_the_tests_still_hold_keep_their_identity(control):
    task = HELD[control]
    row = completion_row(task, reference_completion(task), LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


# A reference that memoises its lists, a candidate that makes a new one each time: once the tests
# dropped the first list, no test in one process can tell the two apart.
MEMOISED = _py("squares", "    if x not in CACHE:\n        CACHE[x] = [i * i for i in range(x)]\n    return CACHE[x]\n",
               "    assert candidate(3) == [0, 1, 4]\n    assert candidate(3) == [0, 1, 4]\n    assert candidate(4) == [0, 1, 4, 9]\n",
               "CACHE = {}\n")


@needs_bwrap
def test_a_fresh_list_agrees_with_a_memoised_one_the_tests_dropped():
    row = completion_row(MEMOISED, "    return [i * i for i in range(x)]\n", LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"]) == ("passed", "passed", "passed"), row


# The tests change an object and then drop it; the candidate still holds it. The change must reach
# the candidate before the object is forgotten, as it would in one process (wrong programs that
# passed when the object was forgotten first: the memoised list the tests appended to came back
# as it was cached, the kept argument summed as it was passed).
STALE = {
    "a memoised list the tests changed and dropped": (
        _py("squares", "    return [i * i for i in range(x)]\n",
            "    candidate(3).append(99)\n    assert candidate(3) == [0, 1, 4]\n"),
        "    c = squares.__dict__.setdefault('c', {})\n    if x not in c:\n        c[x] = [i * i for i in range(x)]\n"
        "    return c[x]\n"),
    "a kept argument the tests changed and dropped": (
        _py("total", "    t = total.__dict__.setdefault('t', [0])\n    t[0] += sum(x)\n    return t[0]\n",
            "    xs = [1, 2]\n    assert candidate(xs) == 3\n    xs.append(10)\n    del xs\n    assert candidate([4]) == 7\n"),
        "    kept = total.__dict__.setdefault('kept', [])\n    kept.append(x)\n    return sum(sum(k) for k in kept)\n"),
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(STALE))
def test_a_dropped_objects_last_change_reaches_the_candidate(attack):
    task, completion = STALE[attack]
    row = completion_row(task, completion, LIMITS)
    assert row["tests_verdict"] == "failed" and row["pass_at_1"] == 0.0, row
    honest = completion_row(task, reference_completion(task), LIMITS)
    assert (honest["status"], honest["tests_verdict"], honest["value_verdict"]) == ("passed", "passed", "passed"), honest
