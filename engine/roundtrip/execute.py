"""Running a task's tests against an implementation, in the sandbox, for either language."""
from __future__ import annotations

from typing import Mapping

from engine.roundtrip.sandbox import SandboxLimits, SandboxResult, run_java, run_python
from engine.roundtrip.tasks import java_files, python_program


def run_tests(task: Mapping[str, str], implementation: str, limits: SandboxLimits) -> SandboxResult:
    """Status `passed` means every test passed (McEval's pass@1 counts exactly these)."""
    if task["programming_language"] == "java":
        return run_java(java_files(implementation, task["tests"], task["entry_point"]), task["entry_point"], limits)
    return run_python(python_program(task["context"], implementation, task["tests"], task["entry_point"]), limits)
