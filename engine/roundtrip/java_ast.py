"""Java's side of abstraction: AST edges and implementation tokens through `javalang`.

The same two views as for Python (engine.roundtrip.scores): the set of (parent node type,
child node type) edges of the parse tree, and the set of identifier, literal, operator and
separator tokens, comments dropped (the tokenizer skips them), keywords, modifiers, primitive
type names, `true`/`false`/`null` left out, and the tokens of what the model was given (the
signature, the context and the class header) excluded. Code that does not parse has no edges.
"""
from __future__ import annotations

import javalang

_KEPT = (javalang.tokenizer.Identifier, javalang.tokenizer.Literal, javalang.tokenizer.Operator,
         javalang.tokenizer.Separator)


def _children(node: javalang.ast.Node):
    for child in node.children:
        items = child if isinstance(child, (list, tuple, set)) else [child]
        for item in items:
            if isinstance(item, javalang.ast.Node):
                yield item


def ast_edges(code: str) -> set[tuple[str, str]]:
    try:
        tree = javalang.parse.parse(code)
    except (javalang.parser.JavaSyntaxError, javalang.tokenizer.LexerError, TypeError, IndexError, StopIteration,
            RecursionError):
        return set()
    edges = set()
    for _path, node in tree:
        for child in _children(node):
            edges.add((type(node).__name__, type(child).__name__))
    return edges


def code_tokens(code: str) -> list[str]:
    try:
        return [t.value for t in javalang.tokenizer.tokenize(code) if isinstance(t, _KEPT)]
    except (javalang.tokenizer.LexerError, TypeError, IndexError):
        return code.split()


def implementation_tokens(code: str, given: str) -> set[str]:
    excluded = set(code_tokens(given))
    return {t for t in code_tokens(code) if t not in excluded}
