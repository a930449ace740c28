"""Comment extraction: hand-written files per language, expected comments written out by hand."""
from __future__ import annotations

import pytest

from engine.data.extract import comment_body, extract_comments, language_of_path

JAVA = '''/**
 * Javadoc for class.
 */
public class A {
    String s = "// not a comment /* nor this */";
    char c = '"'; // quote char
    char d = '\\''; /* block after escaped char */
    String t = """
        text block with // no comment " and a quote
        """;
    /**/
    int x = 1; /* multi
       line */
    // first line
    // second line
    int y; // trailing
    String u = "escaped \\" // still string";
}
'''
JAVA_EXPECTED = [
    ("/**\n * Javadoc for class.\n */", "doc"),
    ("// quote char", "line"),
    ("/* block after escaped char */", "block"),
    ("/**/", "block"),
    ("/* multi\n       line */", "block"),
    ("// first line\n    // second line", "line"),
    ("// trailing", "line"),
]

PYTHON = '''#!/usr/bin/env python
"""Module docstring with # hash."""
import re

x = "# not a comment"  # real comment
y = \'\'\'
# not a comment either
\'\'\'
z = f"{x!r:>10} # still string {y + '#'}"  # after fstring
w = rf"\\d+#"  # raw
if"a"in x: pass  # odd spacing


def f(a):
    """Docstring of f."""
    s = (
        """not a docstring"""
    )
    # one
    # two
    return a  # done
'''
PYTHON_EXPECTED = [
    ("#!/usr/bin/env python", "line"),
    ('"""Module docstring with # hash."""', "doc"),
    ("# real comment", "line"),
    ("# after fstring", "line"),
    ("# raw", "line"),
    ("# odd spacing", "line"),
    ('"""Docstring of f."""', "doc"),
    ("# one\n    # two", "line"),
    ("# done", "line"),
]

C = '''#include <stdio.h>
/* header comment */
int main(void) {
    char *s = "/* not a comment */ // nor this";
    char c = '/'; // slash char
    int d = 'ab'; /* multichar */
    // continued \\
       line
    printf("%d\\n", 1); /* a
    b */
    return 0; // end
}
'''
C_EXPECTED = [
    ("/* header comment */", "block"),
    ("// slash char", "line"),
    ("/* multichar */", "block"),
    ("// continued \\\n       line", "line"),
    ("/* a\n    b */", "block"),
    ("// end", "line"),
]

CPP = '''auto r = R"x(raw " // not a comment )" still raw)x"; // after raw
int n = 1'000'000; // separators
char8_t q = u8'a'; // prefixed char
/// doxygen doc
'''
CPP_EXPECTED = [
    ("// after raw", "line"),
    ("// separators", "line"),
    ("// prefixed char", "line"),
    ("/// doxygen doc", "doc"),
]

JS = '''const re = /\\/\\/ not a comment/g; // after regex
const t = `template ${ "`" + x /* inner */ } // not a comment`;
const d = a / b / c; // division
const q = '/* not */'; /** jsdoc */
function f() { return /"/.test(s); } // quote in regex
'''
JS_EXPECTED = [
    ("// after regex", "line"),
    ("/* inner */", "block"),
    ("// division", "line"),
    ("/** jsdoc */", "doc"),
    ("// quote in regex", "line"),
]

TS = '''// leading comment
interface A { url: string; } // "quoted" in comment
const u: string = "http://example.com"; /* block */
let x = y as number / 2; // as-division
const m = new Map<string, number>(); // generics
'''
TS_EXPECTED = [
    ("// leading comment", "line"),
    ('// "quoted" in comment', "line"),
    ("/* block */", "block"),
    ("// as-division", "line"),
    ("// generics", "line"),
]

GO = '''package main

// Doc comment for main.
// Second line.
func main() {
\ts := `raw // not a comment
/* nor this */`
\tr := '"' // rune quote
\tt := "tab\\t// no" /* trailing block */
}
'''
GO_EXPECTED = [
    ("// Doc comment for main.\n// Second line.", "line"),
    ("// rune quote", "line"),
    ("/* trailing block */", "block"),
]

RUST = '''//! Crate docs.
/// Item docs.
//// not a doc comment
fn f<'a>(x: &'a str) -> char {
    let s = r#"raw " // not a comment"#; // after raw
    /* outer /* nested */ still outer */
    let c = '\\''; // char quote
    let l = 'x'; /** block doc */
    'outer: loop { break 'outer; } // label
}
'''
RUST_EXPECTED = [
    ("//! Crate docs.", "doc"),
    ("/// Item docs.", "doc"),
    ("//// not a doc comment", "line"),
    ("// after raw", "line"),
    ("/* outer /* nested */ still outer */", "block"),
    ("// char quote", "line"),
    ("/** block doc */", "doc"),
    ("// label", "line"),
]

KOTLIN = '''/* outer /* nested */ */
val s = "price: ${ if (a) "x" else "y" } // no"
val r = """raw ${ "}" } // no"""  // after raw
/** KDoc */
'''
KOTLIN_EXPECTED = [
    ("/* outer /* nested */ */", "block"),
    ("// after raw", "line"),
    ("/** KDoc */", "doc"),
]

CASES = {
    "java": (JAVA, JAVA_EXPECTED),
    "python": (PYTHON, PYTHON_EXPECTED),
    "c": (C, C_EXPECTED),
    "cpp": (CPP, CPP_EXPECTED),
    "javascript": (JS, JS_EXPECTED),
    "typescript": (TS, TS_EXPECTED),
    "go": (GO, GO_EXPECTED),
    "rust": (RUST, RUST_EXPECTED),
    "kotlin": (KOTLIN, KOTLIN_EXPECTED),
}


@pytest.mark.parametrize("language", sorted(CASES))
def test_expected_comments_and_offsets(language: str) -> None:
    source, expected = CASES[language]
    comments = extract_comments(source, language)
    assert [(c.text, c.kind) for c in comments] == expected
    for c in comments:
        assert source[c.start : c.end] == c.text
        assert c.start == source.index(c.text)  # every expected text occurs once


@pytest.mark.parametrize("language", ["java", "python"])
def test_crlf_offsets_exclude_line_breaks(language: str) -> None:
    source, expected = CASES[language]
    crlf = source.replace("\n", "\r\n")
    comments = extract_comments(crlf, language)
    assert [c.text for c in comments] == [text.replace("\n", "\r\n") for text, _kind in expected]
    for c in comments:
        assert crlf[c.start : c.end] == c.text
        assert not c.text.endswith(("\r", "\n"))


def test_comment_at_start_and_end_of_file_without_newline() -> None:
    source = "// first\nint x; // last"
    comments = extract_comments(source, "java")
    assert [(c.start, c.end) for c in comments] == [(0, 8), (16, 23)]


def test_unmerged_line_comments_and_blank_line_breaks_merging() -> None:
    source = "// a\n// b\n\n// c\n"
    assert [c.text for c in extract_comments(source, "go", merge_line_comments=False)] == ["// a", "// b", "// c"]
    assert [c.text for c in extract_comments(source, "go")] == ["// a\n// b", "// c"]


def test_cjk_and_emoji_offsets_are_characters() -> None:
    source = 's = "😀 // no"  # 返回图中节点的数量 😀\nt = "中"'
    (comment,) = extract_comments(source, "python")
    assert comment.text == "# 返回图中节点的数量 😀"
    assert comment.start == 15  # s, space, =, space, quote, emoji (one character), ... two spaces


def test_language_of_path() -> None:
    assert language_of_path("src/A.java") == "java"
    assert language_of_path("x/y.TSX") == "typescript"
    assert language_of_path("lib.h") == "c"
    assert language_of_path("README.md") is None


def test_comment_body_strips_markers() -> None:
    assert comment_body("/**\n * Returns the {@code name}.\n * @param x the x\n */") == "Returns the name . x the x"
    assert comment_body("// first line\n    // second line") == "first line second line"
    assert comment_body('"""Docstring of f."""') == "Docstring of f."
    assert comment_body("# 返回图中节点的数量") == "返回图中节点的数量"
