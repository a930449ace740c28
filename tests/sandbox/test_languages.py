"""The six programming languages: each task of the shipped polyglot table passes with its own
solution and fails with a broken one, compiled and run inside the sandbox."""
from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor

import pytest

from engine.errors import InputError
from engine.roundtrip import generation
from engine.roundtrip.tasks import load_tasks
from engine.sandbox import process
from engine.sandbox.languages import LANGUAGES, build, run_tests, toolchain_missing
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits(cpu_seconds=5, wall_seconds=20.0)
BWRAP = process.unavailable(LIMITS)
TASKS = load_tasks("polyglot").to_pylist()


def _broken(task: dict) -> str:
    """The reference with its arithmetic or its loop bound changed: a compiling, wrong solution."""
    code = task["code"]
    for old, new in (("a + b", "a - b"), ('"aeiou"', '"aei"'), ("'aeiou'", "'aei'"), ("rev()", "rev().skip(1)"),
                     ("reversed(", "list(")):
        if old in code:
            return code.replace(old, new, 1)
    if "reverse" in task["task_id"]:
        return {"cpp": lambda c: c.replace("words.rbegin(); it != words.rend()", "words.rbegin(); it != words.rbegin()"),
                "go": lambda c: c.replace("i < j", "i > j"),
                "java": lambda c: c.replace("i >= 0", "i >= 1"),
                "javascript": lambda c: c.replace(".reverse()", "")}[task["programming_language"]](code)
    raise AssertionError(f"no breaking edit for {task['task_id']}")


def test_polyglot_table_has_three_tasks_per_language():
    counts = {lang: sum(t["programming_language"] == lang for t in TASKS) for lang in LANGUAGES}
    assert counts == {lang: 3 for lang in LANGUAGES}
    assert all(t["signature"] and t["comment"] for t in TASKS)
    assert [t["programming_language"] for t in load_tasks("polyglot", programming_languages=["go"]).to_pylist()] == ["go"] * 3
    with pytest.raises(InputError, match="no task in programming language"):
        load_tasks("humaneval", programming_languages=["rust"])


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.parametrize("language", LANGUAGES)
def test_each_task_passes_with_its_solution_and_fails_broken(language):
    why = toolchain_missing(language)
    if why:
        pytest.skip(why)
    tasks = [t for t in TASKS if t["programming_language"] == language]
    # One broken solution per language: each run is two sandboxes (two compiles), and
    # tests/roundtrip/test_verdict_forgeries.py fails a wrong answer of every language many times over.
    jobs = [(t, t["code"]) for t in tasks] + [(tasks[0], _broken(tasks[0]))]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda job: run_tests(job[0], job[1], LIMITS), jobs))
    statuses = [r.status for r in results]
    assert statuses == ["passed"] * 3 + ["failed"], [(r.status, r.reason) for r in results]


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
@pytest.mark.parametrize("language", ["cpp", "go", "rust", "java"])
def test_compile_error_is_its_own_status(language):
    why = toolchain_missing(language)
    if why:
        pytest.skip(why)
    task = next(t for t in TASKS if t["programming_language"] == language)
    result = run_tests(task, task["code"].replace("return", "retrun", 1).replace("a + b", "a + + ;", 1), LIMITS)
    assert result.status == "compile_error" and "compiler rejected the code" in result.reason, result


def test_missing_toolchain_skips_with_the_package_to_install(monkeypatch):
    from engine.sandbox import languages

    monkeypatch.setattr(languages.shutil, "which", lambda name, path=None: None)
    task = next(t for t in TASKS if t["programming_language"] == "rust")
    result = run_tests(task, task["code"], LIMITS)
    assert result.status == "skipped" and "install the Debian package rustc" in result.reason


def test_tests_without_a_main_are_reported():
    task = {**next(t for t in TASKS if t["programming_language"] == "go"), "tests": "var x = 1\n"}
    with pytest.raises(ValueError, match="go tests need a main function"):
        build(task, task["code"], LIMITS)


@pytest.mark.parametrize("language", ["javascript", "cpp", "go", "rust"])
def test_brace_language_regeneration_keeps_the_function_only(language):
    from engine.roundtrip.params import PROMPTS_DIR

    task = next(t for t in TASKS if t["programming_language"] == language)
    template = (PROMPTS_DIR / generation.regenerate_template_name(language)).read_text()
    prompt = generation.regenerate_code_prompt(template, task, task["comment"])
    assert prompt.rstrip().endswith(task["signature"] + " {") and "// " + task["comment"] in prompt
    body = task["code"][task["code"].index("{") + 1:]
    # What a model writes after the function (prose, a fence) is not code of the function.
    completion = body + '\n\n```\nThis returns "}" when done.\n'
    assert generation.code_from_completion(task, completion).strip() == task["code"].strip()


@pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
def test_java_correctness_by_differential_inputs():
    from engine.roundtrip import difftest, java_difftest

    why = toolchain_missing("java")
    if why:
        pytest.skip(why)
    task = next(t for t in TASKS if t["task_id"] == "polyglot/java/vowels")
    inputs = difftest.task_inputs(task, 6, seed=0)
    assert len(inputs) == 6 and all(isinstance(ast.literal_eval(text), tuple) for text in inputs)
    same, _ = difftest.outcome_matches(task, task["code"], inputs, LIMITS)
    assert same == [True] * 6
    fewer_vowels, _ = difftest.outcome_matches(task, task["code"].replace('"aeiou"', '"ae"'), inputs, LIMITS)
    assert fewer_vowels is not None and 0 < fewer_vowels.count(False) < 6
    # A regeneration that exits early or throws everywhere is not a match.
    thrower = task["code"].replace("int n = 0;", "if (true) throw new IllegalStateException();\n        int n = 0;")
    assert difftest.outcome_matches(task, thrower, inputs, LIMITS)[0] == [False] * 6
    assert java_difftest.parse_method_header("public static int f(java.util.Map<String, Integer> m)") is None
    assert difftest.task_inputs({**task, "signature": "public static int f(Object o)"}, 5, 0) is None
