"""Honest completions holding characters that `str.splitlines` takes for line ends (U+0085,
U+2028, U+2029, form feed) in their strings and comments: legal code in each of the six
languages, so each runs and passes. The completion is taken apart where each language's own
tokenizer ends a line (engine.roundtrip.completion_function.python_lines for Python; the brace languages are
read whole by their tree-sitter parser), never by `str.splitlines`, which cut these Python
completions inside a string literal or comment and rejected them as unparseable.
"""
from __future__ import annotations

import pytest

from engine.roundtrip import generation
from engine.roundtrip.completion_function import python_lines
from engine.roundtrip.tasks import load_tasks, split_python_function
from engine.sandbox import process
from engine.sandbox.limits import SandboxLimits
from tests.support.stage_rows import completion_row

LIMITS = SandboxLimits()
BWRAP = process.unavailable(LIMITS)
needs_bwrap = pytest.mark.skipif(bool(BWRAP), reason=BWRAP or "bwrap runs")
ADD = {t["programming_language"]: t for t in load_tasks("polyglot").to_pylist() if t["task_id"].endswith("/add")}

HONEST = {
    ("python", "U+0085 in a string literal"): "    s = '\x85'\n    return a + b\n",
    ("python", "U+2028 in a string literal"): "    s = 'a\u2028b'\n    return a + b + len(s) - 3\n",
    ("python", "U+2029 in a comment"): "    # note \u2029 end\n    return a + b\n",
    ("python", "a form feed line and CRLF line ends"): "    x = a\r\n\x0c\r\n    return x + b\r\n",
    # JavaScript ends a `//` comment at U+2028 and U+2029 (line terminators), and takes both in a string.
    ("javascript", "in a string literal and a block comment"):
        "\n  const s = 'a\u2028b\u2029c\x85';  /* \u2028 \u2029 */\n  return a + b + s.length - 6;\n}\n",
    # Java ends a line only at CR and LF: U+2028 in a `//` comment is part of the comment.
    ("java", "in a string literal and a line comment"):
        "\n        String s = \"a\u2028b\u2029\x85\";  // \u2028 return 0; \u2029\n        return a + b + s.length() - 5;\n    }\n}\n",
    ("cpp", "in a string literal and a line comment"):
        "\n    const char* s = \"\u2028\u2029\x85\";  // \u2028 \u2029 \x85\n    (void)s;\n    return a + b;\n}\n",
    ("go", "in a string literal and a line comment"):
        "\n\ts := \"\u2028\u2029\x85\" // \u2028 \u2029 \x85\n\treturn a + b + len(s) - 8\n}\n",
    ("rust", "in a string literal and a line comment"):
        "\n    let s = \"\u2028\u2029\x85\"; // \u2028 \u2029 \x85\n    a + b + s.len() as i64 - 8\n}\n",
}


@needs_bwrap
@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_completions_with_unicode_line_separators_pass(case):
    row = completion_row(ADD[case[0]], HONEST[case], LIMITS)
    assert (row["status"], row["tests_verdict"], row["value_verdict"], row["pass_at_1"]) == ("passed", "passed", "passed", 1.0), row


def test_python_lines_split_where_the_tokenizer_does():
    text = "a = 'x\u2028y\x85z'\r\n# c \u2029 d\x0c\rb = 1\n"
    assert python_lines(text) == ["a = 'x\u2028y\x85z'", "# c \u2029 d\x0c", "b = 1"]
    assert "".join(python_lines(text, keepends=True)) == text and len(python_lines(text, keepends=True)) == 3
    assert python_lines("") == [] and python_lines("\n") == [""] and python_lines("a") == ["a"]
    # The function ends at the first unindented line, whatever `str.splitlines` would cut.
    function = generation.function_from_completion("def f(a):", "    s = '\u2028'\n    return s\nprint(1)\n")
    assert function == "def f(a):\n    s = '\u2028'\n    return s\n"


def test_a_task_source_with_a_line_separator_in_a_string_splits_by_its_real_lines():
    source = "def f(x):\n    \"\"\"Doc.\"\"\"\n    s = '\u2028\x85'\n    return x + len(s)\n"
    parts = split_python_function(source, "f")
    assert parts["comment"] == "Doc." and parts["function"] == "def f(x):\n    s = '\u2028\x85'\n    return x + len(s)\n"
