"""Round-trip scores: differential testing, abstraction, conciseness, fluency."""
from __future__ import annotations

import math

import pytest

from engine.roundtrip import difftest
from engine.roundtrip.inputs import generate_inputs
from engine.roundtrip.scores import abstraction, ast_edges, conciseness, correctness, fluency, implementation_tokens, similarity
from engine.sandbox.limits import SandboxLimits

LIMITS = SandboxLimits(cpu_seconds=5, wall_seconds=20.0)
TASK = {
    "task_id": "t/abs", "programming_language": "python", "entry_point": "absdiff", "context": "from typing import List",
    "signature": "def absdiff(a: int, b: int) -> int:",
    "code": "def absdiff(a: int, b: int) -> int:\n    return abs(a - b)\n",
    "tests": "def check(candidate):\n    assert candidate(3, 5) == 2\n    assert candidate(-4, 4) == 8\n",
}
# Agrees with abs(a - b) exactly when a >= b.
MUTANT = "def absdiff(a: int, b: int) -> int:\n    return a - b\n"


def test_identical_function_has_correctness_one():
    inputs = generate_inputs(TASK["signature"], TASK["tests"], "absdiff", 30, seed=1)
    agree, result = difftest.outcome_matches(TASK, TASK["code"], inputs, LIMITS)
    assert len(inputs) == 30 and correctness(agree) == 1.0, result


def test_mutant_matches_hand_counted_share():
    inputs = ["(3, 5)", "(-4, 4)", "(5, 3)", "(0, 0)", "(7, -1)", "(1, 2)", "(-3, -9)", "(2, 10)"]
    # a >= b on (5, 3), (0, 0), (7, -1), (-3, -9): 4 of 8.
    agree, _ = difftest.outcome_matches(TASK, MUTANT, inputs, LIMITS)
    assert agree == [False, False, True, True, True, False, True, False]
    assert correctness(agree) == 0.5


def test_exceptions_and_broken_code():
    inputs = ["(1, 0)", "(0, 1)"]
    raising = "def absdiff(a, b):\n    if a > b:\n        raise ValueError('x')\n    return abs(a - b)\n"
    agree, _ = difftest.outcome_matches(TASK, raising, inputs, LIMITS)
    assert agree == [False, True]
    agree, _ = difftest.outcome_matches(TASK, "def absdiff(a, b) return", inputs, LIMITS)
    assert agree == [False, False]
    # Module-level code that never ends: stopped at load, then it disagrees on every input.
    agree, result = difftest.outcome_matches(TASK, "while True:\n    pass\n", inputs, SandboxLimits(cpu_seconds=1, wall_seconds=5.0), 0.2)
    assert agree == [False, False] and correctness(agree) == 0.0
    # Code that blocks signals (a C-level loop) at load: no reply in time, every input disagrees.
    agree, result = difftest.outcome_matches(TASK, "sum(range(10 ** 12))\n", inputs, SandboxLimits(cpu_seconds=1, wall_seconds=5.0), 0.2)
    assert agree == [False, False] and correctness(agree) == 0.0
    # An input the original does not finish is left out; the others still count.
    slow = {**TASK, "code": "def absdiff(a, b):\n    while a > b:\n        pass\n    return abs(a - b)\n"}
    agree, _ = difftest.outcome_matches(slow, "def absdiff(a, b):\n    return b - a\n", ["(1, 0)", "(0, 1)", "(0, 0)"], LIMITS, 0.2)
    assert agree == [None, True, True] and correctness(agree) == 1.0
    assert math.isnan(correctness([None, None]))


def test_inputs_seeded_and_typed():
    signature = "def f(xs: List[int], s: str, k: Optional[float] = None) -> Dict[str, int]:"
    tests = "def check(candidate):\n    assert candidate([1, 2], 'ab', 0.5) == {}\n    assert candidate([], '', None) == {}\n"
    first = generate_inputs(signature, tests, "f", 40, seed=7)
    assert first == generate_inputs(signature, tests, "f", 40, seed=7)
    assert first != generate_inputs(signature, tests, "f", 40, seed=8)
    assert first[:2] == [repr(([1, 2], "ab", 0.5)), repr(([], "", None))]
    for text in first:
        xs, s, k = eval(text)  # noqa: S307 - literals written by the generator under test
        assert isinstance(xs, list) and all(isinstance(x, int) for x in xs)
        assert isinstance(s, str) and (k is None or isinstance(k, (int, float)))
    assert len(set(first)) == 40


F1 = "def f(x):\n    return x\n"
F2 = "def f(x):\n    return x + 1\n"
F3 = "def f(x):\n    return x * 2\n"
GIVEN = "def f(x):"


def test_abstraction_identical_and_hand_computed():
    assert abstraction([F2, F2, F2], GIVEN) == 0.0
    # Edges: F1 has 5 (Module-FunctionDef, FunctionDef-arguments, arguments-arg, FunctionDef-Return,
    # Return-Name); F2 and F3 share 7 of their 8 (BinOp-Add vs BinOp-Mult), F1 shares 4 with each.
    assert len(ast_edges(F1)) == 5 and len(ast_edges(F2)) == 8
    # Tokens outside the given header: F1 {}, F2 {'+', '1'}, F3 {'*', '2'}: pairwise Jaccard 0.
    assert implementation_tokens(F1, GIVEN) == set() and implementation_tokens(F2, GIVEN) == {"+", "1"}
    assert similarity(F1, F2, GIVEN) == pytest.approx((4 / 9 + 0) / 2)
    assert similarity(F2, F3, GIVEN) == pytest.approx((7 / 9 + 0) / 2)
    assert abstraction([F1, F2, F3], GIVEN) == pytest.approx(1 - (2 / 9 + 2 / 9 + 7 / 18) / 3)  # 13/18
    assert math.isnan(abstraction([F1], GIVEN))
    # A docstring does not make two implementations different.
    assert similarity(F2, 'def f(x):\n    """Add one."""\n    return x + 1\n', GIVEN) == 1.0


def test_conciseness():
    comment = "Return the absolute difference of a and b."  # 42 characters
    assert conciseness(comment, [("abs diff", False), ("Difference", False)]) == 0.0
    assert conciseness(comment, []) == 0.0
    kept = [("Absolute difference of a and b.", True), ("|a - b|.", False), ("Return |a - b|.", True)]
    assert conciseness(comment, kept) == pytest.approx(1 - (1 - 15 / 42))


def test_fluency_is_inverse_perplexity(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from engine.testing.tiny_lm import build_tiny_causal_lm

    path = build_tiny_causal_lm(tmp_path / "lm")
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)
    texts = ["return the sum of two numbers", "sum"]
    values = fluency(texts, model, tokenizer, batch_size=2)
    ids = torch.tensor([[tokenizer.bos_token_id] + tokenizer(texts[0], add_special_tokens=False)["input_ids"]])
    with torch.inference_mode():
        loss = model(input_ids=ids, labels=ids).loss  # mean NLL of tokens after the first
    assert values[0] == pytest.approx(math.exp(-float(loss)), rel=1e-5)
    assert values == pytest.approx(fluency(texts[::-1], model, tokenizer, batch_size=1)[::-1], rel=1e-5)
    assert all(0 < v <= 1 for v in values)


JAVA_GIVEN = "public static int add(int a, int b)\n\npublic class Solution { }"
J1 = "public class Solution {\n    public static int add(int a, int b) {\n        return a + b;\n    }\n}\n"
J2 = "public class Solution {\n    public static int add(int a, int b) {\n        int total = a;\n        total += b;\n        return total;\n    }\n}\n"


def test_java_abstraction_through_javalang():
    from engine.roundtrip import java_ast

    assert ("MethodDeclaration", "ReturnStatement") in java_ast.ast_edges(J1)
    # Keywords, primitive types and what the model was given (names, braces, parentheses) are left out.
    assert java_ast.implementation_tokens(J1, JAVA_GIVEN) == {"+", ";"}
    assert java_ast.implementation_tokens(J2, JAVA_GIVEN) == {"total", "=", "+=", ";"}
    assert abstraction([J1, J1], JAVA_GIVEN, "java") == 0.0
    edges = java_ast.ast_edges(J1), java_ast.ast_edges(J2)
    expected = 1 - (len(edges[0] & edges[1]) / len(edges[0] | edges[1]) + 1 / 5) / 2
    assert abstraction([J1, J2], JAVA_GIVEN, "java") == pytest.approx(expected)
    assert 0.0 < abstraction([J1, J2], JAVA_GIVEN, "java") < 1.0
    assert java_ast.ast_edges("public class {") == set()
    assert math.isnan(abstraction([J1, J2], JAVA_GIVEN, "rust"))
