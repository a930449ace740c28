"""Per language, the two programs of a split run (engine.sandbox.relay): the candidate's server
and the tests with a proxy of the function's signature. Each module keeps its language's codec
of the plain-value stream (engine.sandbox.plain) on both sides."""
from __future__ import annotations

import importlib

from engine.sandbox.relay import SandboxProgram

SPLIT_LANGUAGES = ("python", "javascript", "go", "cpp", "rust", "java")


def split_jobs(task: dict, code: str, python: str, hook: bool, command=None) -> tuple[SandboxProgram, SandboxProgram, bool] | None:
    """(server, tests, uses a toolchain) of `code` against the task's tests; None when the language has no split run."""
    language = task["programming_language"]
    if language == "python":
        from engine.sandbox.proxies import python as side

        server_files, server_argv, tests_files, tests_argv = side.jobs(task, code, python, hook)
        return SandboxProgram(server_files, server_argv), SandboxProgram(tests_files, tests_argv), False
    if language == "javascript":
        from engine.sandbox.proxies import javascript as side

        server, tests = side.jobs(task, code)
        return server, tests, True
    if language in ("go", "cpp", "rust"):
        from engine.sandbox.programs import shell_script
        side = importlib.import_module(f"engine.sandbox.proxies.{language}")

        server, tests = side.jobs(task, code, shell_script)
        return server, tests, True
    if language == "java":
        from engine.sandbox.proxies import java as side

        server, tests = side.jobs(task, code, command)
        return server, tests, True
    return None
