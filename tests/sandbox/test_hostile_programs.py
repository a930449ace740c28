"""The sandbox stops hostile programs with the right reason and leaves nothing behind."""
from __future__ import annotations

import dataclasses
import glob
import os
import resource
import tempfile
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from engine.sandbox import process
from engine.sandbox.languages import run_tests
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits(cpu_seconds=1, wall_seconds=4.0, memory_mb=256, max_processes=8, file_size_mb=1)
BWRAP = process.unavailable(LIMITS)
MODES = ["hook", pytest.param("bwrap", marks=pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs"))]
OUTSIDE = os.path.join(tempfile.gettempdir(), f"babelscore-escape-{os.getpid()}.txt")

HOSTILE = {
    "infinite loop": ("while True:\n    pass\n", "timeout", "CPU-time"),
    "sleeping forever": ("import time\ntime.sleep(1000)\n", "timeout", "wall-clock"),
    "memory bomb": ("x = []\nwhile True:\n    x.append(bytearray(10**7))\n", "memory", "address-space"),
    "fork bomb": ("import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(1000)\n", "processes", "process-count"),
    "big file": ("open('big', 'wb').write(b'x' * (4 * 2**20))\n", "filesize", "file-size"),
}
# Under the hook the audit hook blocks these; under bwrap they are contained (tests/sandbox/test_escape.py).
HOOK_ONLY = {
    "write outside": (f"open({OUTSIDE!r}, 'w').write('escaped')\n", "blocked", "outside the sandbox directory"),
    "network": ("import socket\nsocket.socket().connect(('192.0.2.1', 80))\n", "blocked", "socket"),
    "starts a shell": ("import os\nos.system('echo hi')\n", "blocked", "os.system"),
}


def run_python(source: str, limits: SandboxLimits):
    """`source` as the tests of a Python task with no implementation: the harness's `tests` mode."""
    task = {"programming_language": "python", "tests": source, "entry_point": "", "context": ""}
    return run_tests(task, "", limits)


def _limits(mode: str) -> SandboxLimits:
    return dataclasses.replace(LIMITS, isolation=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_program_is_stopped_with_reason(mode, case):
    source, status, reason = HOSTILE[case]
    limits = _limits(mode)
    if case == "infinite loop":  # on a loaded machine 1 s of CPU can take longer than the wall limit
        limits = dataclasses.replace(limits, wall_seconds=60.0)
    result = run_python(source, limits)
    assert (result.status, result.isolation) == (status, mode), result
    assert reason in result.reason, result
    assert psutil.Process().children(recursive=True) == []


@pytest.mark.parametrize("case", sorted(HOOK_ONLY))
def test_audit_hook_blocks_with_reason(case):
    source, status, reason = HOOK_ONLY[case]
    result = run_python(source, _limits("hook"))
    assert (result.status, result.isolation) == (status, "hook"), result
    assert reason in result.reason, result
    assert not os.path.exists(OUTSIDE)


@pytest.mark.parametrize("mode", MODES)
def test_passing_and_failing_programs(mode):
    ok = run_python("assert sum([1, 2]) == 3\nprint('ok')\n", _limits(mode))
    assert (ok.status, ok.stdout.strip()) == ("passed", "ok"), ok
    failed = run_python("def f(x):\n    return x\nassert f(1) == 2, 'f(1) is wrong'\n", _limits(mode))
    assert failed.status == "failed" and "f(1) is wrong" in failed.reason
    inside = run_python("open('out.txt', 'w').write('x')\nprint(open('out.txt').read())\n", _limits(mode))
    assert (inside.status, inside.stdout.strip()) == ("passed", "x")


def test_output_is_cut_to_its_bound():
    limits = dataclasses.replace(LIMITS, output_bytes=1000)
    result = run_python("import sys\nfor _ in range(2000):\n    sys.stdout.write('y' * 100)\n", limits)
    assert result.status == "passed"
    assert result.stdout.startswith("y" * 1000) and "more bytes cut" in result.stdout and len(result.stdout) < 1100


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
def test_program_outside_python_is_bounded_by_the_namespaces():
    # A shell, not under any Python harness: only bubblewrap and the limits hold it.
    result = process.run_program(["/bin/sh", "-c", f"echo x > {OUTSIDE}; ls / > /work/root.txt; cat /work/root.txt"], {}, LIMITS)
    assert not os.path.exists(OUTSIDE)
    assert set(result.stdout.split()) <= {"bin", "dev", "etc", "lib", "lib64", "proc", "sbin", "tmp", "usr", "work"}
    # Exit status 0 without the harness's token is not a pass.
    assert result.status == "failed" and "without a verdict" in result.reason


def test_forty_runs_leave_no_process_or_file():
    # Work directories of this process only: other test runs on the machine share /tmp.
    pattern = os.path.join(tempfile.gettempdir(), f"{process.WORKDIR_PREFIX}{os.getpid()}-*")
    own_limits = {name: resource.getrlimit(getattr(resource, name)) for name in ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE")}
    own_uid, own_cwd = os.getuid(), os.getcwd()
    quick = [HOSTILE[c][0] for c in ("memory bomb", "fork bomb")] + ["print(1)\n", "import sys\nsys.exit(0)\n"]
    statuses = set()
    for i in range(40):
        limits = dataclasses.replace(LIMITS, wall_seconds=0.5) if i % 20 == 0 else LIMITS
        if i % 5 == 1:  # some runs under the hook, which has a host work directory to remove
            limits = dataclasses.replace(limits, isolation="hook")
        source = "import time\ntime.sleep(1000)\n" if i % 20 == 0 else quick[i % len(quick)]
        statuses.add(run_python(source, limits).status)
    assert statuses == {"timeout", "memory", "processes", "passed", "failed"}
    assert psutil.Process().children(recursive=True) == []
    sandbox_uids = range(LIMITS.uid, LIMITS.uid + LIMITS.uid_slots)
    live = [p.pid for p in psutil.process_iter(["uids", "status"])
            if p.info["uids"] and p.info["uids"].real in sandbox_uids and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert live == []
    assert glob.glob(pattern) == []
    # The engine's own process keeps its limits, identity and directory.
    assert {name: resource.getrlimit(getattr(resource, name)) for name in own_limits} == own_limits
    assert (os.getuid(), os.getcwd()) == (own_uid, own_cwd)


@pytest.mark.parametrize("mode", MODES)
def test_concurrent_runs_do_not_share_the_process_limit(mode):
    # Each run forks 3 children; 8 runs at once would far exceed a limit of 8 if they shared a uid.
    source = ("import os, time\npids = []\nfor _ in range(3):\n    pid = os.fork()\n    if pid == 0:\n"
              "        time.sleep(0.5)\n        os._exit(0)\n    pids.append(pid)\nfor pid in pids:\n    os.waitpid(pid, 0)\n")
    limits = dataclasses.replace(_limits(mode), max_processes=8, wall_seconds=20.0)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: run_python(source, limits), range(8)))
    assert [r.status for r in results] == ["passed"] * 8, [r.reason for r in results]
