"""The regenerated function, taken from a model's completion with its language's real parser.

The prompt ends inside the function, so the function is the prompt's header plus the
completion up to where the parser (tree-sitter; `ast` for Python, `function_from_completion`)
says it ends, Java's Unicode escapes translated first as javac does; docs/roundtrip.md
("Taking the function from a completion") gives the rule per language. C++ preprocessor directives inside the function are
refused. What the parser cannot place raises `Rejected`; the row gets status `rejected` and is
never run.
"""
from __future__ import annotations

import ast
import re
import tokenize
from typing import Mapping

from engine.sandbox import syntax

FUNCTION_NODES = {"javascript": ("function_declaration",), "cpp": ("function_definition",),
                  "go": ("function_declaration",), "rust": ("function_item",)}


class Rejected(ValueError):
    """A completion whose function the parser cannot place: never run."""


# Python's tokenizer ends a line only at these; str.splitlines also splits at U+000B, U+000C,
# U+001C-U+001E, U+0085, U+2028 and U+2029, which Python code holds inside strings and comments.
_PYTHON_LINE_END = re.compile(r"\r\n|\r|\n")


def python_lines(source: str, keepends: bool = False) -> list[str]:
    """`source` split into lines where Python's tokenizer (and `ast`'s line numbers) splits it."""
    if keepends:
        ends = [m.end() for m in _PYTHON_LINE_END.finditer(source)]
        starts = [0, *ends]
        return [source[a:b] for a, b in zip(starts, [*ends, len(source)]) if a < b]
    lines = _PYTHON_LINE_END.split(source)
    return lines[:-1] if lines and lines[-1] == "" else lines


# Tokens that neither start nor end a logical line's code.
_LAYOUT = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)


def _at_column_zero(prefix: str) -> bool:
    """Whether a logical line whose first token follows `prefix` (its line's leading whitespace)
    is at indentation 0 as the tokenizer counts it: a form feed resets the column."""
    return prefix.split("\f")[-1] == ""


def python_body(completion: str) -> str:
    """The completion up to the first logical line that Python's tokenizer starts at indentation 0
    with code: brackets, strings (triple-quoted too) and backslash continuations run on past
    column 0, and comment-only or blank lines never end the body (those just before the ending
    line go with it). Line ends are written `\n`, as Python reads any of them; nothing inside a
    line is changed. A completion the tokenizer cannot read before its end is returned whole, for
    `python_function` to reject."""
    lines = python_lines(completion)
    feed = iter([line + "\n" for line in lines])
    end, last_newline, at_start = len(lines), 0, True
    try:
        for token in tokenize.generate_tokens(lambda: next(feed, "")):
            if token.type in _LAYOUT:
                continue
            if token.type == tokenize.ENDMARKER:
                break
            row, col = token.start
            if at_start and _at_column_zero(lines[row - 1][:col]):
                end = last_newline
                break
            at_start = token.type == tokenize.NEWLINE
            if at_start:
                last_newline = row
    except tokenize.TokenError as exc:
        # A string the tokenizer reports only at its (missing) end: it ends the body when it
        # opens a logical line at column 0 (prose after the function), otherwise nothing parses.
        row, col = exc.args[1] if len(exc.args) > 1 else (0, 0)
        if at_start and 0 < row <= len(lines) and _at_column_zero(lines[row - 1][:col]):
            end = last_newline
    except SyntaxError:  # an IndentationError: an unindent to no outer level
        pass
    return "\n".join(lines[:end]).rstrip(" \t\f\n")


def java_unicode_escapes(text: str) -> str:
    """`\\uXXXX` translated as JLS 3.3 does (a backslash escaped by another backslash is not one);
    surrogate escapes are kept as written (javac translates them in the source it reads)."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            run = 1
            while i + run < n and text[i + run] == "\\":
                run += 1
            # In a run of backslashes only an odd-numbered one can start an escape: the last, when the run is odd.
            out.append("\\" * (run - 1))
            i += run - 1
            j = i + 1
            if run % 2 == 1 and j < n and text[j] == "u":
                while j < n and text[j] == "u":
                    j += 1
                digits = text[j:j + 4]
                if len(digits) == 4 and re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                    code = int(digits, 16)
                    # A surrogate (half of an escaped emoji, or a lone one) is no character a UTF-8
                    # file can hold, and never a brace or quote: it stays an escape, for javac.
                    out.append(text[i:j + 4] if 0xD800 <= code <= 0xDFFF else chr(code))
                    i = j + 4
                    continue
            out.append("\\")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _node_name(node) -> str:
    name = node.child_by_field_name("name") or node.child_by_field_name("declarator")
    while name is not None and name.child_by_field_name("declarator") is not None:
        name = name.child_by_field_name("declarator")
    return name.text.decode("utf-8") if name is not None else ""


def _refuse_preprocessor(node) -> None:
    todo = [node]
    while todo:
        current = todo.pop()
        if current.type.startswith("preproc_"):
            raise Rejected("a preprocessor directive inside the function (the compiler could see another structure)")
        todo.extend(current.children)


def brace_function(language: str, signature: str, completion: str) -> str:
    """The function (and following helper functions) of a JavaScript, C++, Go or Rust completion."""
    prefix = "package main\n" if language == "go" else ""
    source = f"{prefix}{signature} {{{completion}"
    data = source.encode("utf-8")
    tree = syntax.parse(language, source)
    nodes = [n for n in tree.root_node.named_children if n.type not in ("package_clause", "comment")]
    if not nodes or nodes[0].type not in FUNCTION_NODES[language] or nodes[0].start_byte != len(prefix.encode()):
        raise Rejected(f"the completion does not continue the {language} function as one definition")
    kept = []
    for index, node in enumerate(nodes):
        if node.type not in FUNCTION_NODES[language] or node.has_error or (index and _node_name(node) == "main"):
            if index == 0:
                raise Rejected(f"the {language} parser cannot place the end of the function (a syntax error inside it)")
            break
        if language == "cpp":
            _refuse_preprocessor(node)
        kept.append(data[node.start_byte:node.end_byte].decode("utf-8"))
    return "\n\n".join(kept) + "\n"


def java_method(signature: str, completion: str) -> str:
    """The method body of a Java completion: signature + the body the parser ends."""
    text = java_unicode_escapes(completion)
    head = f"class Babelscore {{\n    {signature} {{"
    source = head + text
    tree = syntax.parse("java", source)
    body = tree.root_node.named_children[0].child_by_field_name("body") if tree.root_node.named_children else None
    methods = [n for n in (body.named_children if body is not None else []) if n.type != "comment"]
    if not methods or methods[0].type != "method_declaration" or methods[0].has_error:
        raise Rejected("the java parser cannot place the end of the method (a syntax error inside it)")
    method = methods[0]
    data = source.encode("utf-8")
    # Up to and with the method's closing brace (java_class_from_completion closes the class).
    return data[len(head.encode("utf-8")):method.end_byte].decode("utf-8")


def python_function(task: Mapping[str, str], function: str) -> str:
    """Refuse a Python function that does not parse as one definition of the entry point."""
    try:
        tree = ast.parse(function)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise Rejected(f"the Python function does not parse: {type(exc).__name__}: {str(exc)[:120]}") from None
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(tree.body) != 1 or not defs or defs[0].name != task["entry_point"]:
        raise Rejected(f"the completion is not one definition of {task['entry_point']!r}")
    return function
