"""Inline style → whether an element's text is shown (``textgate.normalize.style``)."""

from __future__ import annotations

import pytest

from textgate.normalize.style import SHOWN, Shown, declarations, shown


def test_declarations_last_wins_lowercased_without_important() -> None:
    decl = declarations("Display: BLOCK; color:red;display:None !important;;junk")
    assert decl == {"display": "none", "color": "red"}


@pytest.mark.parametrize(
    ("style", "hidden_attr", "text_shown"),
    [
        (None, False, True),
        ("", True, False),
        ("display:none", False, False),
        ("display:inline-block", False, True),
        ("opacity:0", False, False),
        ("opacity:0.0", False, False),
        ("opacity:.5", False, True),
        ("height:0;overflow:hidden", False, False),
        ("max-height:0px;overflow-y:hidden", False, False),
        ("height:0", False, True),  # overflow shows
        ("visibility:hidden", False, False),
        ("visibility:collapse", False, False),
        ("font-size:0", False, False),
        ("font-size:0.0em", False, False),
        ("font-size:1.5px", False, False),
        ("font-size:2px", False, True),
        ("font-size:10pt", False, True),
        ("font-size:x-small", False, True),
        ("font-size:80%", False, True),
        ("font-size:garbage", False, True),
        ("font:0/0 a", False, False),
        ("font:bold 12px Arial", False, True),
        ("font:700 Arial", False, True),  # a bare number is a weight, not a size
        ("display:block", True, True),  # an inline display beats the hidden attribute
        ("display:none", True, False),
    ],
)
def test_one_element(style: str | None, hidden_attr: bool, text_shown: bool) -> None:
    assert shown(SHOWN, style, hidden_attr).text_shown is text_shown


def test_what_a_child_can_and_cannot_undo() -> None:
    gone = shown(SHOWN, "display:none", False)
    assert shown(gone, "display:block;visibility:visible;font-size:14px", False) == gone
    invisible = shown(SHOWN, "visibility:hidden", False)
    assert shown(invisible, "visibility:visible", False).text_shown
    tiny = shown(SHOWN, "font-size:0", False)
    assert shown(tiny, "font-size:13px", False).text_shown
    assert not shown(tiny, "font-size:200%", False).text_shown  # 200 % of zero
    assert shown(tiny, "font-size:1rem", False).text_shown  # the root's size is not zero
    assert shown(tiny, "font-size:initial", False).text_shown  # medium
    assert not shown(tiny, "font-size:inherit", False).text_shown
    assert shown(tiny, "font-size:calc(1px + 1em)", False).text_shown  # unread: shown
    assert shown(invisible, "visibility:initial", False).text_shown
    clip = shown(SHOWN, "max-height:0;overflow:hidden", False)
    assert not shown(clip, "color:red", False).text_shown
    assert shown(clip, "position:absolute", False).text_shown  # escapes a static clip
    assert shown(tiny, "color:red", False) is tiny  # unchanged state is shared, not copied


def test_unstyled_state_is_shared() -> None:
    assert shown(SHOWN, "color:red", False) is SHOWN
    assert Shown(visible=False).text_shown is False
