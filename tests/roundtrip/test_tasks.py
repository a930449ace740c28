"""Task tables: the built-in HumanEval set, a user's table, Java through the JDK."""
from __future__ import annotations

import json

import pytest

from engine.errors import InputError
from engine.roundtrip.tasks import load_tasks, split_python_function
from engine.sandbox import languages
from engine.sandbox.languages import run_tests
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits(cpu_seconds=5, wall_seconds=20.0)


def test_humaneval_builtin_set():
    table = load_tasks("humaneval")
    rows = {r["task_id"]: r for r in table.to_pylist()}
    assert len(rows) == 164 and table.num_rows == 164
    first = rows["HumanEval/0"]
    assert first["signature"] == "def has_close_elements(numbers: List[float], threshold: float) -> bool:"
    assert first["comment"].startswith("Check if in given list of numbers")
    assert "from typing import List" in first["context"] and '"""' not in first["code"]
    assert "def encode_cyclic" in rows["HumanEval/38"]["context"]
    assert all(r["comment"] for r in rows.values())
    # HumanEval/115 imports before its docstring: the comment is found, the import stays in the code.
    assert rows["HumanEval/115"]["comment"].startswith("You are given a rectangular grid of wells.")
    assert rows["HumanEval/115"]["code"].startswith("def max_fill(grid, capacity):\n    import math\n") and '"""' not in rows["HumanEval/115"]["code"]
    for task_id in ("HumanEval/0", "HumanEval/38", "HumanEval/115"):
        assert run_tests(rows[task_id], rows[task_id]["code"], LIMITS).status == "passed"
    wrong = rows["HumanEval/0"]["signature"] + "\n    return False\n"
    assert run_tests(rows["HumanEval/0"], wrong, LIMITS).status == "failed"


def test_split_keeps_helpers_and_drops_docstring():
    source = 'import math\n\ndef helper(x):\n    return x\n\n@staticmethod\ndef f(a: int) -> int:\n    """Double."""\n    return 2 * a\n'
    parts = split_python_function(source, "f")
    assert parts["signature"] == "@staticmethod\ndef f(a: int) -> int:"
    assert parts["comment"] == "Double."
    assert parts["function"] == "@staticmethod\ndef f(a: int) -> int:\n    return 2 * a\n"
    assert parts["context"] == "import math\n\ndef helper(x):\n    return x"


def test_user_table(tmp_path):
    path = tmp_path / "tasks.jsonl"
    row = {"task_id": "add", "code": 'def add(a: int, b: int) -> int:\n    """Sum of a and b."""\n    return a + b\n',
           "entry_point": "add", "tests": "assert add(1, 2) == 3\n"}
    path.write_text(json.dumps(row) + "\n")
    (task,) = load_tasks(str(path)).to_pylist()
    assert (task["programming_language"], task["signature"], task["comment"]) == ("python", "def add(a: int, b: int) -> int:", "Sum of a and b.")
    assert run_tests(task, task["code"], LIMITS).status == "passed"
    path.write_text(json.dumps({**row, "tests": ""}) + "\n")
    with pytest.raises(InputError, match=r"row 0: column\(s\) \['tests'\]"):
        load_tasks(str(path))
    path.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(InputError, match="duplicate task_id 'add'"):
        load_tasks(str(path))


JAVA_TASK = {
    "task_id": "java/add", "programming_language": "java", "entry_point": "Main", "context": "", "comment": "Sum of a and b.",
    "signature": "public static int add(int a, int b)",
    "code": "public class Solution {\n    public static int add(int a, int b) { return a + b; }\n}\n",
    "tests": "public class Main {\n    public static void main(String[] args) {\n"
             "        if (Solution.add(1, 2) != 3) throw new AssertionError(\"add(1, 2)\");\n    }\n}\n",
}


@pytest.mark.skipif(bool(languages.toolchain_missing("java")), reason=languages.toolchain_missing("java") or "JDK present")
def test_java_task_runs_through_the_jdk():
    assert run_tests(JAVA_TASK, JAVA_TASK["code"], LIMITS).status == "passed"
    wrong = JAVA_TASK["code"].replace("a + b", "a - b")
    result = run_tests(JAVA_TASK, wrong, LIMITS)
    assert result.status == "failed" and "AssertionError" in result.stderr


def test_java_is_skipped_with_a_reason_without_jdk(monkeypatch):
    monkeypatch.setattr(languages.shutil, "which", lambda name, path=None: None)
    result = run_tests(JAVA_TASK, JAVA_TASK["code"], LIMITS)
    assert result.status == "skipped" and "no java toolchain" in result.reason and "default-jdk-headless" in result.reason


def test_java_regeneration_keeps_the_method_only():
    from engine.roundtrip import generation

    completion = '\n        String s = "}"; // }\n        return a + b;\n    }\n\n    public static void main() {}\n}\n'
    code = generation.java_class_from_completion(JAVA_TASK, completion)
    assert code == ('public class Solution {\n    public static int add(int a, int b) {\n        String s = "}"; // }\n'
                    '        return a + b;\n    }\n}\n')
    prompt = generation.regenerate_java_prompt("{context}\n/**\n * {comment}\n */\n{signature} {{", JAVA_TASK, "Ends a */ comment.")
    assert prompt.endswith("public static int add(int a, int b) {") and "* /" in prompt
    if not languages.toolchain_missing("java"):
        assert run_tests(JAVA_TASK, code, LIMITS).status == "passed"


def test_documented_example_table_loads_and_passes(tmp_path):
    import re

    from tests.support.paths import REPO

    doc = (REPO / "docs" / "roundtrip_tasks.md").read_text(encoding="utf-8")
    block = re.search(r"```json\n(.*?)```", doc, re.S).group(1)
    (tmp_path / "tasks.jsonl").write_text(block)
    tasks = load_tasks(str(tmp_path / "tasks.jsonl")).to_pylist()
    assert [t["programming_language"] for t in tasks] == ["javascript", "rust", "python"]
    for task in tasks:
        if languages.toolchain_missing(task["programming_language"]):
            continue
        assert run_tests(task, task["code"], LIMITS).status == "passed", task["task_id"]
