"""Attacks on the round trip's sandbox, one class at a time, through the stage's own entry points.

Every attack is a program the test writes itself; each must be contained (nothing reaches the
host) or end with the right status. The classes: forged verdicts, escaped processes, leftovers
between runs, network (TCP, DNS, Unix sockets), host files, and the refusal of a weak fallback.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import tempfile
import threading
import uuid

import psutil
import pytest

from engine.config import config_from_mapping
from engine.errors import ConfigError
from engine.roundtrip import difftest
from engine.sandbox import bwrap, process
from engine.sandbox.languages import run_tests, toolchain_missing
from engine.sandbox.limits import SandboxLimits
from engine.stages.registry import build_stage

LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=20.0, memory_mb=256, max_processes=16)
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")

# A task whose correct answer is 3; the wrong solutions below return 2 and try to pass anyway.
ADD = {"task_id": "add", "programming_language": "python", "entry_point": "add", "context": "",
       "signature": "def add(a: int, b: int) -> int:", "code": "def add(a: int, b: int) -> int:\n    return a + b\n",
       "tests": "def check(candidate):\n    assert abs(candidate(1, 2) - 3) < 1e-9\n    assert abs(candidate(2, 2) - 4) < 1e-9\n"}
WRONG = "def add(a: int, b: int) -> int:\n    return a - b + 2\n"
# Preludes that leave a correct solution passing (the harness does not depend on what they patch).
HARMLESS_TO_A_CORRECT_SOLUTION = {"always-equal object", "patched builtins", "patched os.write of the harness",
                                  "exit handler that exits 0"}


def _python(source: str, limits: SandboxLimits = LIMITS):
    return run_tests({"programming_language": "python", "tests": source, "entry_point": "", "context": ""}, "", limits)


# ----- forged verdicts ------------------------------------------------------------------------
FORGERIES = {
    "sys.exit(0) at module level": "import sys\nsys.exit(0)\n",
    "os._exit(0) at module level": "import os\nos._exit(0)\n",
    "exit() like generated scripts do": "exit()\n",
    "exit handler that exits 0": "import atexit, os\natexit.register(lambda: os._exit(0))\n",
    "sandbox-style marker on stderr": "import sys, os\nsys.stderr.write('\\nbabelscore-sandbox: passed\\n')\nos._exit(0)\n",
    "guessed token on the verdict fd": "import os\nos.write(4, b'0' * 32 + b' passed\\n')\nos._exit(0)\n",
    "reads the token fd": "import os\nt = os.read(3, 64)\nos.write(4, t + b' passed\\n')\nos._exit(0)\n",
    "always-equal object": "class _Any(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
                           "    def __sub__(self, other):\n        return 0\n",
    "patched builtins": "import builtins\nbuiltins.abs = lambda value: 0\nimport sys\nsys.modules['builtins'].abs = lambda value: 0\n",
    "patched os.write of the harness": "import os\nos.write = lambda fd, data: len(data)\n",
}


@needs_bwrap
@pytest.mark.parametrize("attack", sorted(FORGERIES))
def test_wrong_solution_cannot_forge_a_pass(attack):
    prelude = FORGERIES[attack]
    wrong = prelude + WRONG
    if attack == "always-equal object":
        wrong = prelude + "def add(a: int, b: int) -> int:\n    return _Any(0)\n"
    result = run_tests(ADD, wrong, LIMITS)
    assert result.status == "failed", result
    if attack in HARMLESS_TO_A_CORRECT_SOLUTION:
        assert run_tests(ADD, prelude + ADD["code"], LIMITS).status == "passed"


@needs_bwrap
def test_correct_solution_passes_and_exit_after_the_tests_is_fine():
    assert run_tests(ADD, ADD["code"], LIMITS).status == "passed"
    # An exit handler that fails after every test has run changes nothing: the harness exits first.
    late = "import atexit, os\natexit.register(lambda: os._exit(3))\n" + ADD["code"]
    assert run_tests(ADD, late, LIMITS).status == "passed"


@needs_bwrap
@pytest.mark.parametrize("language,code", [
    ("javascript", "process.exit(0);\nfunction add(a, b) {\n  return a - b;\n}\n"),
    ("cpp", "#include <cstdlib>\nstruct Early { Early() { std::exit(0); } } early;\nint add(int a, int b) {\n    return a - b;\n}\n"),
])
def test_compiled_and_node_exits_before_the_tests_fail(language, code):
    why = toolchain_missing(language)
    if why:
        pytest.skip(why)
    tests = {"javascript": "const assert = require('node:assert');\nassert.strictEqual(add(1, 2), 3);\n",
             "cpp": "int main() {\n    assert(add(1, 2) == 3);\n    return 0;\n}\n"}[language]
    task = {"programming_language": language, "entry_point": "add", "context": "#include <cassert>" if language == "cpp" else "",
            "tests": tests, "signature": {"javascript": "function add(a, b)", "cpp": "int add(int a, int b)"}[language]}
    result = run_tests(task, code, LIMITS)
    # The candidate's server ends before its first reply: the tests' proxy gets no value, never a pass.
    assert result.status == "failed" and "candidate's server ended" in result.reason, result


@needs_bwrap
def test_difftest_cannot_be_forged_by_the_regenerated_code():
    task = {**ADD, "tests": "assert add(1, 2) == 3\n"}
    inputs = ["(1, 2)", "(3, 4)", "(0, 0)"]
    good, _ = difftest.outcome_matches(task, ADD["code"], inputs, LIMITS)
    assert good == [True, True, True]
    forger = ("import os, sys\nprint('AGREE 111')\nos.write(4, b'0' * 32 + b' outcomes\\n[]')\n"
              "def add(a: int, b: int) -> int:\n    print('AGREE 111')\n    return a * b\n")
    # The candidate's fd 4 is its reply pipe: the forged bytes are a malformed reply, refused; every input disagrees.
    assert difftest.outcome_matches(task, forger, inputs, LIMITS)[0] == [False, False, False]
    printer = "def add(a: int, b: int) -> int:\n    print('AGREE 111')\n    return a * b\n"
    assert difftest.outcome_matches(task, printer, inputs, LIMITS)[0] == [False, False, True]  # 0 * 0 == 0 + 0
    always = ("class _Any(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
              "def add(a: int, b: int) -> int:\n    return _Any(7)\n")
    assert difftest.outcome_matches(task, always, inputs, LIMITS)[0] == [False, False, False]


# ----- escaped processes ----------------------------------------------------------------------
@needs_bwrap
def test_no_process_survives_and_a_held_pipe_does_not_stall_the_run():
    marker = f"babelscore-escapee-{uuid.uuid4().hex[:8]}"
    source = (
        "import os, subprocess, sys, time\n"
        # A double-forked daemon in its own session that keeps stdout and stderr open.
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        os.execv('/usr/bin/sleep', [{marker!r}, '1000'])\n    os._exit(0)\n"
        f"subprocess.Popen([{marker!r}, '1000'], executable='/usr/bin/sleep', start_new_session=True)\n"
        "time.sleep(0.2)\n"
    )
    result = _python(source)
    assert result.status == "passed", result
    assert result.wall_s < LIMITS.wall_seconds  # the run ended although the daemon held its pipes
    leftovers = [p.pid for p in psutil.process_iter(["cmdline", "status"])
                 if p.info["cmdline"] and marker in " ".join(p.info["cmdline"]) and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert leftovers == []


@needs_bwrap
def test_killing_the_engine_ends_the_sandboxed_run():
    import subprocess
    import sys
    import time

    from tests.support.paths import REPO

    marker = f"babelscore-orphan-{uuid.uuid4().hex[:8]}"
    program = (f"import os\nos.execv('/usr/bin/sleep', [{marker!r}, '1000'])\n")
    engine = subprocess.Popen([sys.executable, "-c", (
        "from engine.sandbox.languages import run_tests\nfrom engine.sandbox.limits import SandboxLimits\n"
        f"run_tests({{'programming_language': 'python', 'tests': {program!r}, 'entry_point': '', 'context': ''}}, '',"
        " SandboxLimits(wall_seconds=600.0, cpu_seconds=600))\n")], cwd=REPO)

    def running() -> list[int]:
        return [p.pid for p in psutil.process_iter(["cmdline", "status"])
                if p.info["cmdline"] and p.info["cmdline"][0] == marker and p.info["status"] != psutil.STATUS_ZOMBIE]

    deadline = time.monotonic() + 60
    while not running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running(), "the sandboxed program never started"
    engine.kill()  # SIGKILL: no cleanup code of the engine runs
    engine.wait()
    deadline = time.monotonic() + 10
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running() == []


@needs_bwrap
def test_wall_clock_ends_a_process_that_ignores_signals():
    source = "import signal, time\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU):\n    signal.signal(s, signal.SIG_IGN)\ntime.sleep(1000)\n"
    result = _python(source, dataclasses.replace(LIMITS, wall_seconds=1.0))
    assert result.status == "timeout" and "wall-clock" in result.reason


@needs_bwrap
def test_process_count_of_one_run_is_bounded():
    # Children multiply no limit: the run as a whole stops at max_processes.
    source = ("import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(30)\n"
              "            os._exit(0)\n        n += 1\nexcept BlockingIOError:\n    print(n, flush=True)\n    raise\n")
    result = _python(source, dataclasses.replace(LIMITS, max_processes=6))
    assert result.status == "processes", result
    assert int(result.stdout.split()[0]) <= 6


# ----- leftovers between runs -----------------------------------------------------------------
@needs_bwrap
def test_two_consecutive_runs_cannot_see_each_others_data():
    key = 0x5EED0000 + os.getpid() % 0xFFFF
    writer = (
        "import ctypes, os\n"
        "for path in ('/tmp/secret', '/dev/shm/secret', '/work/secret'):\n    open(path, 'w').write('run one')\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        # System V segments outlive their mappings (memory no limit counts): the seccomp filter refuses them.
        f"assert libc.shmget({key}, 4096, 0o1000 | 0o666) == -1 and ctypes.get_errno() == 1, 'shmget was allowed'\n"
    )
    first = _python(writer)
    assert first.status == "passed", first
    reader = "import os\nfor path in ('/tmp/secret', '/dev/shm/secret', '/work/secret'):\n    assert not os.path.exists(path), path\n"
    second = _python(reader)
    assert second.status == "passed", second
    # Nothing of either run on the host: no System V segment with the key, no file.
    with open("/proc/sysvipc/shm") as handle:
        assert not any(line.split()[0] == str(key) for line in handle.read().splitlines()[1:])
    assert not os.path.exists("/dev/shm/secret") and not os.path.exists("/tmp/secret")


# ----- network --------------------------------------------------------------------------------
@needs_bwrap
def test_no_network_tcp_dns_or_unix_sockets_of_the_host():
    accepted = []
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    folder = tempfile.mkdtemp(prefix="babelscore-sock-")
    unix_path = os.path.join(folder, "host.sock")
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(unix_path)
    unix.listen()
    abstract = socket.socket(socket.AF_UNIX)
    abstract_name = f"\0babelscore-{uuid.uuid4().hex}"
    abstract.bind(abstract_name)
    abstract.listen()
    for server in (tcp, unix, abstract):
        server.settimeout(0.2)
        threading.Thread(target=lambda s=server: _accept(s, accepted), daemon=True).start()
    port = tcp.getsockname()[1]
    source = (
        "import socket\nreached = []\n"
        f"for family, address in ((socket.AF_INET, ('127.0.0.1', {port})), (socket.AF_UNIX, {unix_path!r}),"
        f" (socket.AF_UNIX, {abstract_name!r}), (socket.AF_INET, ('192.0.2.1', 80))):\n"
        "    try:\n        s = socket.socket(family)\n        s.settimeout(2)\n        s.connect(address)\n        reached.append(address)\n"
        "    except OSError:\n        pass\n"
        "try:\n    socket.getaddrinfo('example.com', 80)\n    reached.append('dns')\nexcept OSError:\n    pass\n"
        "assert reached == [], reached\n"
    )
    try:
        result = _python(source)
    finally:
        for server in (tcp, unix, abstract):
            server.close()
        os.unlink(unix_path)
        os.rmdir(folder)
    assert result.status == "passed", result
    assert accepted == []


def _accept(server: socket.socket, accepted: list) -> None:
    while True:
        try:
            accepted.append(server.accept())
        except socket.timeout:
            continue
        except OSError:
            return


# ----- host files -----------------------------------------------------------------------------
@needs_bwrap
def test_host_files_are_out_of_reach():
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    source = (
        "import os\n"
        f"for path in ({checkout!r}, '/root', '/home', '/etc/passwd', '/etc/hostname', '/run', '/var', '/tmp/babelscore-sandbox-uids'):\n"
        "    assert not os.path.exists(path), path\n"
        "assert set(os.listdir('/etc')) <= {'alternatives', 'ld.so.cache'} | {n for n in os.listdir('/etc') if n.startswith('java-')}\n"
        # A fresh /proc: the run's own processes only, no host command line.
        "pids = [int(n) for n in os.listdir('/proc') if n.isdigit()]\n"
        "assert len(pids) <= 4, pids\n"
        "for pid in pids:\n    assert b'pytest' not in open('/proc/%d/cmdline' % pid, 'rb').read()\n"
        "for path in ('/usr/escape', '/etc/escape'):\n"
        "    try:\n        open(path, 'w')\n        raise AssertionError('wrote ' + path)\n    except OSError:\n        pass\n"
        "open('/tmp/x', 'wb').write(b'x' * 1024)\n"
    )
    result = _python(source)
    assert result.status == "passed", result
    assert not os.path.exists("/usr/escape")


@needs_bwrap
def test_private_tmpfs_is_size_capped():
    source = "open('/tmp/fill', 'wb').write(b'x' * (3 * 2**20))\n"
    limits = dataclasses.replace(LIMITS, tmpfs_mb=1, file_size_mb=16)
    result = _python(source, limits)
    assert result.status == "failed" and "No space left on device" in result.stderr, result


# ----- no silent weak fallback ----------------------------------------------------------------
def _roundtrip_config(tmp_path, sandbox_options: dict):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"task_id": "add", "entry_point": "add", "code": "def add(a, b):\\n    return a + b\\n", '
                     '"tests": "assert add(1, 2) == 3\\n"}\n')
    raw = {"name": "rt", "input": "builtin:demo", "stages": ["roundtrip"],
           "roundtrip": {"tasks": str(tasks), "generators": [{"model": "oracle", "backend": "oracle"}], "inputs": 2,
                         "sandbox": sandbox_options}}
    return config_from_mapping(raw, tmp_path)


def test_missing_bubblewrap_fails_the_config_check_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(bwrap.shutil, "which", lambda name, *a, **k: None)
    bwrap.forget()
    try:
        with pytest.raises(ConfigError, match=r"roundtrip\.sandbox\.isolation: bubblewrap .* not on PATH; install bubblewrap"):
            _roundtrip_config(tmp_path, {})
        with pytest.raises(ConfigError, match="apt-get install bubblewrap"):
            run_tests(ADD, ADD["code"], LIMITS)
        # The explicit opt-in still runs, and says what it is in every signature.
        config = _roundtrip_config(tmp_path, {"isolation": "hook"})
        hook = dataclasses.replace(LIMITS, isolation="hook")
        assert run_tests(ADD, ADD["code"], hook).status == "passed"
        assert run_tests(ADD, WRONG, hook).status == "failed"
        stage = build_stage("roundtrip", config.section("roundtrip"))
        (task,) = stage.tasks()
        signatures = stage.signatures(task, {})
        assert all("isolation:hook-not-a-boundary" in value for value in signatures.values() if "pass@1" in value or "correctness" in value)
    finally:
        monkeypatch.undo()
        bwrap.forget()
    if BWRAP:
        return
    config = _roundtrip_config(tmp_path, {})
    stage = build_stage("roundtrip", config.section("roundtrip"))
    (task,) = stage.tasks()
    assert "isolation:bwrap-" in stage.signatures(task, {})["pass@1"]
