"""The six programming languages of the round trip: how a task's code and tests become one run.

A task with an entry point is tested as a split run (engine.sandbox.relay, one module per
language in engine.sandbox.proxies); whole programs without one (`build` below) run in one
sandboxed run. Either way a small harness in the language reads the run's token from fd 3
before the tests start and writes `<token> passed` to fd 4 after the tests' `main` returned
normally (JavaScript: when the process ends with status 0, after its event loop emptied); for
C++, Go and Rust the tests' `main` is renamed (`babelscore_tests_main`) and called from the
harness's own. Compiled languages compile and run within each sandboxed run; a
compiler that rejects the code ends the run with EXIT_COMPILE (`compile_error`). Toolchains
(Debian packages): python3, default-jdk-headless, nodejs, g++, golang-go, rustc; the tests are
HumanEval's `check(candidate)` or asserts, a Java class `entry_point` whose `main` throws,
node:assert statements, and a `main` that returns non-zero, aborts or panics.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from engine.sandbox.harness import python_harness
from engine.sandbox.limits import SandboxLimits
from engine.sandbox.process import SandboxResult, python_for, run_program
from engine.sandbox.programs import (
    CPP_HARNESS,
    JAVA_HARNESS,
    RUST_HARNESS,
    RUSTC_FLAGS,
    go_file,
    java_class_name,
    join_sources,
    rename_main,
    shell_script,
)

if TYPE_CHECKING:
    from engine.sandbox.relay import Recording

LANGUAGES = ("python", "java", "javascript", "cpp", "go", "rust")
TOOLS = {"python": (), "java": ("javac", "java"), "javascript": ("node",), "cpp": ("g++",), "go": ("go",), "rust": ("rustc",)}
PACKAGES = {"java": "default-jdk-headless", "javascript": "nodejs", "cpp": "g++", "go": "golang-go", "rust": "rustc"}
# Inside the sandbox only the Debian toolchains under /usr are bound.
SANDBOX_PATH = "/usr/bin:/bin"


@dataclass(frozen=True)
class Build:
    files: dict[str, str]
    argv: list[str]
    env: dict[str, str]


def toolchain_missing(language: str) -> str:
    """'' when the language's toolchain is installed under /usr/bin; otherwise why it is skipped."""
    missing = [tool for tool in TOOLS[language] if shutil.which(tool, path=SANDBOX_PATH) is None]
    if not missing:
        return ""
    return (f"no {language} toolchain: {', '.join(missing)} not in /usr/bin "
            f"(install the Debian package {PACKAGES[language]}, or run `make setup`)")


JS_HARNESS = """'use strict';
const fs = require('fs');
const token = fs.readFileSync(3);
fs.closeSync(3);
const write = fs.writeSync;
const emit = process.emit, reallyExit = process.reallyExit, exit = process.exit;
let ended = false, explicit = false;
// The candidate shares this process: an explicit process.exit (its own, or the tests') ends the
// run without the verdict, as before the tests' end.
process.exit = function (...args) { explicit = true; return exit.apply(process, args); };
process.emit = function (event, ...rest) {
  const result = emit.call(this, event, ...rest);
  if (event !== 'exit' || ended) return result;
  ended = true;
  if (!explicit && rest[0] === 0 && (process.exitCode === undefined || process.exitCode === 0)) {
    write(4, Buffer.concat([token, Buffer.from(' passed\\n')]));
    reallyExit.call(process, 0);
  }
  return result;
};
require('./program.js');
"""

GO_HARNESS = """package main

import "os"

func main() {
\ttokenFile := os.NewFile(3, "token")
\ttoken := make([]byte, 64)
\tn, _ := tokenFile.Read(token)
\ttokenFile.Close()
\tbabelscoreTestsMain()
\tos.NewFile(4, "verdict").Write(append(token[:n], []byte(" passed\\n")...))
\tos.Exit(0)
}
"""

def build(task: Mapping[str, str], implementation: str, limits: SandboxLimits) -> Build:
    """The files and command of one test run of `implementation` against the task's tests."""
    language, tests, entry = task["programming_language"], task["tests"], task["entry_point"]
    context = task.get("context") or ""
    if language == "python":
        call = "check" if "def check(" in tests else "plain"
        files = {"_harness.py": python_harness(limits.isolation == "hook"), "impl.py": join_sources(context, implementation),
                 "tests.py": tests}
        return Build(files, [python_for(limits), "-I", "-B", "_harness.py", "tests", "impl.py", "tests.py", entry, call], {})
    if language == "java":
        files = {f"{java_class_name(implementation)}.java": implementation, f"{entry}.java": tests,
                 "BabelscoreHarness.java": JAVA_HARNESS.replace("ENTRY", entry)}
        return Build(files, java_command("BabelscoreHarness", limits), {})
    if language == "javascript":
        files = {"harness.js": JS_HARNESS, "program.js": join_sources(context, implementation, tests)}
        heap = max(16, limits.memory_mb // 2)
        return Build(files, shell_script("", f"/usr/bin/node --max-old-space-size={heap} harness.js"), {})
    if language == "cpp":
        renamed = rename_main(tests, r"\bint\s+main\s*\(\s*(?:void\s*)?\)", "int babelscore_tests_main()", language)
        files = {"program.cpp": join_sources(context, implementation, renamed), "harness.cpp": CPP_HARNESS}
        return Build(files, shell_script("g++ -std=c++17 -O1 -w -o program program.cpp harness.cpp", "./program"), {})
    if language == "go":
        renamed = rename_main(tests, r"\bfunc\s+main\s*\(\s*\)", "func babelscoreTestsMain()", language)
        files = {"solution.go": go_file(join_sources(context, implementation)), "tests.go": go_file(renamed),
                 "harness.go": GO_HARNESS}
        env = {"GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go", "GO111MODULE": "off", "GOTOOLCHAIN": "local",
               "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
        return Build(files, shell_script("go build -o program solution.go tests.go harness.go", "./program"), env)
    if language == "rust":
        renamed = rename_main(tests, r"\bfn\s+main\s*\(\s*\)", "fn babelscore_tests_main()", language)
        files = {"main.rs": join_sources(context, implementation, renamed, RUST_HARNESS)}
        return Build(files, shell_script(f"rustc {RUSTC_FLAGS} -o program main.rs", "./program"), {})
    raise ValueError(f"unknown programming language {language!r}; allowed: {list(LANGUAGES)}")


def java_command(main_class: str, limits: SandboxLimits) -> list[str]:
    """Compile every .java file of the work directory, then run `main_class` (one sandboxed run)."""
    heap = max(16, limits.memory_mb // 2)
    jvm = f"-Xmx{heap}m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto"
    javac = " ".join(f"-J{flag}" for flag in jvm.split())
    # -ea: tests written with Java's `assert` run them (without it the JVM skips every one).
    return shell_script(f"javac {javac} -encoding UTF-8 -nowarn -d . *.java", f"java -ea {jvm} -cp . {main_class}")


def run_toolchain(argv: list[str], files: Mapping[str, str], limits: SandboxLimits, env: Mapping[str, str] | None = None,
                  cpu_seconds: int = 0, wall_seconds: float = 0.0, **kwargs) -> SandboxResult:
    """A compiled language's run: the toolchain allowances on top of the limits (`kwargs`: run_program's relay options)."""
    return run_program(
        argv, files, limits, env=env, **kwargs,
        memory_mb=limits.memory_mb + limits.toolchain_memory_mb, max_processes=limits.toolchain_max_processes,
        cpu_seconds=max(limits.cpu_seconds, limits.toolchain_seconds, cpu_seconds),
        wall_seconds=max(limits.wall_seconds, 2.0 * limits.toolchain_seconds, wall_seconds),
        open_files=limits.toolchain_max_open_files,
        group_memory_mb=limits.compile_memory_mb, program_memory_mb=limits.run_memory_mb,
    )


def run_tests(task: Mapping[str, str], implementation: str, limits: SandboxLimits,
              record: Recording | None = None) -> SandboxResult:
    """`passed` only when the harness reported the token after the last test; `record` (a split
    run's) receives every call the tests made and the answer they got (the value verdict uses it)."""
    language = task["programming_language"]
    why = toolchain_missing(language) if language in TOOLS else f"unknown programming language {language!r}"
    if why:
        return SandboxResult("skipped", why, None, "", "", 0.0, "none")
    if task.get("entry_point"):
        from engine.sandbox.proxies import split_jobs

        try:
            jobs = split_jobs(task, implementation, python_for(limits), limits.isolation == "hook",
                              lambda main: java_command(main, limits))
        except (ValueError, KeyError) as exc:  # syntax.SyntaxProblem: a signature the proxy cannot have
            return SandboxResult("error", f"no split run for this task: {type(exc).__name__}: {exc}", None, "", "", 0.0,
                                 limits.isolation)
        if jobs is not None:
            return _run_split(*jobs, limits, record)
    try:
        job = build(task, implementation, limits)
    except ValueError as exc:
        return SandboxResult("failed", str(exc), None, "", "", 0.0, limits.isolation)
    if language == "python":
        return run_program(job.argv, job.files, limits, env=job.env)
    return run_toolchain(job.argv, job.files, limits, job.env)


def _run_split(server, tests, toolchain: bool, limits: SandboxLimits, record: Recording | None = None) -> SandboxResult:
    """The candidate as a server in one sandbox, the tests through a proxy in another (engine.sandbox.relay)."""
    from engine.errors import ConfigError
    from engine.sandbox.process import unavailable
    from engine.sandbox.relay import run_split

    why = unavailable(limits)
    if why:
        raise ConfigError(f"roundtrip.sandbox.isolation: {why}")

    run, startup = runner(toolchain, limits)
    wall = max(limits.wall_seconds, startup)
    return run_split(server, tests, run, wall, record=record)


def runner(toolchain: bool, limits: SandboxLimits):
    """(run(job, **run_program options), start-up seconds) of one side of a split run or a difftest server."""
    if toolchain:
        def run(job, **kwargs):
            return run_toolchain(job.argv, job.files, limits, job.env, **kwargs)

        return run, max(limits.wall_seconds, 2.0 * limits.toolchain_seconds)

    def run_plain(job, **kwargs):
        return run_program(job.argv, job.files, limits, env=job.env, **kwargs)

    # A Python server takes its first call 0.2-0.4 s after its run starts, under a load average of
    # 20 too; the wall-clock limit covers a machine far busier (or a host page cache gone). Calls
    # are timed from when the server takes them (engine.sandbox.caller), so the allowance costs
    # an honest call nothing and bounds only a server that never starts.
    return run_plain, limits.wall_seconds
