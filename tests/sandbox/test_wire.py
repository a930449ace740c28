"""What crosses a sandbox's boundary is read with limits: the plain-value stream, and program text."""
from __future__ import annotations

import sys

import pytest

from engine.sandbox import plain, wire


@pytest.mark.parametrize("text", [b"i3", b"l3 i1 s2:ab l0", b"m2 s1:a i1 s1:b l2 t f", b"u2 dnan d1.5", b"l1 e1 n", b"s3:a b"])
def test_plain_values_round_trip(text):
    value, end = plain.parse(text)
    assert end == len(text) and plain.write(value) == text


@pytest.mark.parametrize("text", [b"l999999999", b"l2 i1", b"l1 " * 40 + b"n", b"s5:ab", b"i1x", b"x", b"l2 i1  i2",
                                  b"s2:\xff\xfe", b"d1e", b""])
def test_malformed_or_deep_plain_values_are_refused(text):
    with pytest.raises(plain.PlainError):
        plain.parse(text)


def test_a_reply_must_be_one_value_of_a_known_kind():
    assert plain.reply(b"o l2 i1 i2") == ("o", ("l", [("i", 1), ("i", 2)]))
    assert plain.reply(b"x s9:TypeError") == ("x", ("s", "TypeError"))
    for bad in (b"o i1 i2", b"x i1", b"q i1", b"o " + b"l1 " * 200000 + b"n"):
        with pytest.raises(plain.PlainError):
            plain.reply(bad)


def test_program_text_is_cut_and_marked():
    text = wire.program_text("x" * 1000, 50)
    assert text.startswith("[program output] ") and "950 more characters cut" in text and len(text) < 120


def test_an_exception_name_is_capped_and_kept_to_a_type_names_alphabet():
    # The name is the candidate's free text: it reaches the tests' process and a row's reason.
    kind, value = plain.reply(b"x " + plain.write(("s", "E' <b>" + "ab" * 3000)))
    assert kind == "x" and value[0] == "s" and len(value[1]) == plain.MAX_EXCEPTION_NAME
    assert value[1].startswith("E___b_abab") and set(value[1]) <= set("Eab_")
    for name in ("ZeroDivisionError", "java.lang.ArithmeticException", "Outer$Inner", "*errors.errorString", "[]int",
                 "std::out_of_range"):
        assert plain.reply(b"x " + plain.write(("s", name))) == ("x", ("s", name))


def test_the_tests_comparison_takes_two_values_as_deep_as_a_reply():
    """`c l2 <actual> <expected>` wraps two replies in one more level: values at the deepest a reply
    may nest are still compared, not answered `o f` by the depth limit."""
    from engine.sandbox import relay

    deepest = b"l1 " * plain.MAX_DEPTH + b"n"
    plain.parse(deepest)  # a reply may nest this deep
    assert relay.compared(b"c l2 " + deepest + b" " + deepest) == b"o t"
    other = b"l1 " * plain.MAX_DEPTH + b"t"
    assert relay.compared(b"c l2 " + deepest + b" " + other) == b"o f"


def test_integers_past_the_interpreters_digit_limit_cross_up_to_max_digits():
    numbers = (7 ** 6000, -(10 ** (plain.MAX_DIGITS - 1)), 10 ** 4000, -(10 ** 3999) - 1)
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # Python's own decimal text, the anchor
    try:
        expected = [b"i%d" % number for number in numbers]
    finally:
        sys.set_int_max_str_digits(limit)
    for number, text in zip(numbers, expected):
        assert plain.write(("i", number)) == text and plain.parse(text)[0] == ("i", number)
    with pytest.raises(plain.PlainError, match="digits"):
        plain.parse(b"i" + b"9" * (plain.MAX_DIGITS + 1))


@pytest.mark.parametrize("text", [b"g s7:Integer i5", b"l2 g s3:Map m1 s1:a i1 g s4:Hole v", b"g s8:Optional g s7:Integer i4",
                                  b"e2 g s7:Integer i1 i1", b"g s5:[]int l2 i1 i2", b"g s16:map[string][]any m1 s1:a l1 g s4:int8 i1",
                                  b"g s4:*int n", b"g s5:error s4:zero"])
def test_typed_values_round_trip(text):
    value, end = plain.parse(text)
    assert end == len(text) and plain.write(value) == text
    assert plain.reply(b"o " + text)[0] == "o"


@pytest.mark.parametrize("text", [b"g i5 i5", b"g s0: i1", b"g s7:Integer", b"g s3:a b i1", b"g s33:" + b"x" * 33 + b" i1",
                                  b"g s14:interface {} i1", b"g2 s1:a i1", b"g " * 40 + b"s1:a i1"])
def test_a_typed_value_needs_a_type_name_and_one_value_within_the_depth(text):
    with pytest.raises(plain.PlainError):
        plain.reply(b"o " + text)


def test_a_typed_value_agrees_only_with_one_of_the_same_name_and_value():
    from engine.sandbox import compare

    def same(a: bytes, b: bytes) -> bool:
        return compare.same(plain.parse(a)[0], plain.parse(b)[0])

    assert same(b"g s7:Integer i5", b"g s7:Integer i5") and same(b"g s3:Map m1 s1:a d1.5", b"g s3:Map m1 s1:a d1.5")
    assert not same(b"g s7:Integer i5", b"i5") and not same(b"i5", b"g s7:Integer i5")
    assert not same(b"g s7:Integer i5", b"g s5:Short i5") and not same(b"g s7:Integer i5", b"g s7:Integer i6")
    assert not same(b"g s12:NegativeZero i0", b"i0") and not same(b"g s8:Optional n", b"n")
    assert not same(b"e1 g s7:Integer i1", b"e1 i1")
