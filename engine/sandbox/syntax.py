"""Real parsers of the six round-trip languages (tree-sitter grammars from PyPI), and what the
round trip reads with them: a function's parameters and, for a completion, where the function
ends (engine.roundtrip.completion_function).

A function header (a task's `signature` field) is parsed inside a minimal program of its
language (`package main` for Go, a class for Java, an empty body) and must parse without an
error node; its parameters are returned as (name, type text) pairs in order, with its result's
type text ('' when none).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache

GRAMMARS = {"python": "tree_sitter_python", "javascript": "tree_sitter_javascript", "cpp": "tree_sitter_cpp",
            "go": "tree_sitter_go", "rust": "tree_sitter_rust", "java": "tree_sitter_java"}


class SyntaxProblem(ValueError):
    """The code cannot be placed by its language's parser (the run is `rejected`, never executed)."""


@lru_cache(maxsize=None)
def parser(language: str):
    from tree_sitter import Language, Parser

    module = importlib.import_module(GRAMMARS[language])
    return Parser(Language(module.language()))


def parse(language: str, source: str):
    return parser(language).parse(source.encode("utf-8"))


@dataclass(frozen=True)
class FunctionHeader:
    name: str
    params: tuple[tuple[str, str], ...]  # (name, type text)
    result: str  # type text; '' when the function returns nothing
    static: bool = True  # Java: a static method


def _text(node) -> str:
    return node.text.decode("utf-8")


def _first(node, kinds: tuple[str, ...]):
    """The first descendant (pre-order) of one of `kinds`."""
    todo = [node]
    while todo:
        current = todo.pop(0)
        if current.type in kinds:
            return current
        todo[:0] = list(current.children)
    return None


def _function(language: str, header: str):
    wrapped = {"go": f"package main\n{header} {{}}\n", "java": f"class Babelscore {{ {header} {{}} }}\n"}.get(
        language, f"{header} {{}}\n")
    tree = parse(language, wrapped)
    kind = {"go": ("function_declaration",), "cpp": ("function_definition",), "rust": ("function_item",),
            "java": ("method_declaration",), "javascript": ("function_declaration",)}[language]
    node = _first(tree.root_node, kind)
    if tree.root_node.has_error or node is None:
        raise SyntaxProblem(f"the {language} signature {header!r} does not parse as a function header")
    return node


def function_header(language: str, text: str) -> FunctionHeader:
    """Name, parameters and result of a Go, C++, Rust, Java or JavaScript function header."""
    node = _function(language, text)
    if language == "go":
        params = []
        for decl in node.child_by_field_name("parameters").named_children:
            if decl.type != "parameter_declaration":
                raise SyntaxProblem(f"Go parameter {_text(decl)!r} is not supported (variadic?)")
            kind = _text(decl.child_by_field_name("type"))
            params += [(_text(n), kind) for n in decl.children_by_field_name("name")]
        result = node.child_by_field_name("result")
        return FunctionHeader(_text(node.child_by_field_name("name")), tuple(params), _text(result) if result else "")
    if language == "cpp":
        declarator = _first(node, ("function_declarator",))
        params = []
        for decl in declarator.child_by_field_name("parameters").named_children:
            name = _first(decl.child_by_field_name("declarator") or decl, ("identifier",))
            if decl.type != "parameter_declaration" or name is None:
                raise SyntaxProblem(f"C++ parameter {_text(decl)!r} needs a name")
            params.append((_text(name), _text(decl)))
        return FunctionHeader(_text(declarator.child_by_field_name("declarator")), tuple(params),
                         _text(node.child_by_field_name("type")))
    if language == "rust":
        params = []
        for decl in node.child_by_field_name("parameters").named_children:
            if decl.type != "parameter":
                raise SyntaxProblem(f"Rust parameter {_text(decl)!r} is not supported (self?)")
            params.append((_text(decl.child_by_field_name("pattern")), _text(decl.child_by_field_name("type"))))
        result = node.child_by_field_name("return_type")
        return FunctionHeader(_text(node.child_by_field_name("name")), tuple(params), _text(result) if result else "")
    if language == "java":
        params = []
        for decl in node.child_by_field_name("parameters").named_children:
            if decl.type != "formal_parameter":
                raise SyntaxProblem(f"Java parameter {_text(decl)!r} is not supported (varargs?)")
            params.append((_text(decl.child_by_field_name("name")), _text(decl.child_by_field_name("type"))))
        modifiers = [c for c in node.children if c.type == "modifiers"]
        static = bool(modifiers) and "static" in _text(modifiers[0]).split()
        return FunctionHeader(_text(node.child_by_field_name("name")), tuple(params), _text(node.child_by_field_name("type")),
                         static)
    if language == "javascript":
        params = tuple((_text(p), "") for p in node.child_by_field_name("parameters").named_children)
        return FunctionHeader(_text(node.child_by_field_name("name")), params, "")
    raise SyntaxProblem(f"no signature reader for {language}")
