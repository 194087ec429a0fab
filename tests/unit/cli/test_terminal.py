"""``safe`` and ``json_safe`` (ADR 0195): every control and format character shown, by category."""

from __future__ import annotations

import json
import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from lcg.cli._terminal import json_safe, safe

UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in UNSAFE and ch not in "\u200c\u200d"


def test_each_kind_of_control_is_a_visible_escape() -> None:
    assert safe("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert safe("\x1b]52;c;SGk=\x07") == "\\x1b]52;c;SGk=\\x07"
    assert safe("over\rwrite") == "over\\x0dwrite"
    assert safe("c1 \x9b6n del \x7f") == "c1 \\x9b6n del \\x7f"
    assert safe("bidi \u202egnp\u202c \u2066x\u2069") == "bidi \\u202egnp\\u202c \\u2066x\\u2069"
    assert safe("tag \U000e0041 sep \u2028") == "tag \\U000e0041 sep \\u2028"
    assert safe("lone \ud800") == "lone \\ud800"


def test_text_that_writes_no_control_is_unchanged() -> None:
    for text in ("Apollo 11", "Zoë", "中文", "नमस्ते", "👩\u200d🚀", "a\u00a0b", "\ue000"):
        assert safe(text) == text
    assert safe(42) == "42"


def test_newlines_only_where_lines_are_meant_and_tabs_as_spaces() -> None:
    assert safe("one\ntwo") == "one\\x0atwo"
    assert safe("one\r\ntwo\nthree", lines=True) == "one\ntwo\nthree"
    assert safe("a\tb") == "a b"


@given(st.text(st.characters(codec=None), max_size=60))
def test_no_unsafe_character_survives(text: str) -> None:
    shown = safe(text)
    assert not any(_unsafe(ch) for ch in shown)
    assert "\t" not in shown and "\n" not in shown
    out = safe(text, lines=True)
    assert not any(_unsafe(ch) for ch in out if ch != "\n")


@given(st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=60))
def test_json_safe_is_the_same_json_value_with_no_unsafe_character(text: str) -> None:
    encoded = json.dumps({"k": [text]}, ensure_ascii=False)
    shown = json_safe(encoded)
    assert json.loads(shown) == {"k": [text]}
    assert not any(_unsafe(ch) for ch in shown)


def test_json_safe_escapes_c1_bidi_and_astral_format_characters() -> None:
    encoded = json.dumps("\u009b \u202e \U000e0001 é", ensure_ascii=False)
    assert json_safe(encoded) == '"\\u009b \\u202e \\udb40\\udc01 é"'
    assert sys.maxunicode == 0x10FFFF
