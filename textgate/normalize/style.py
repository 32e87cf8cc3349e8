"""What an element's inline ``style`` (and ``hidden`` attribute) does to the visibility of
its text, in the few properties mail uses to hide words from the reader but not the filter.

Only inline declarations: rules in ``<style>`` sheets need a CSS engine and selector
matching (see Known limits in docs/email-model.md). Each property resolves as CSS
inherits it, so a child can undo what can be undone:

- ``display:none``, ``opacity:0`` and the ``hidden`` attribute (unless an inline
  ``display`` overrides it) hide the element and everything in it; no descendant can show
  it. A zero-height box with ``overflow:hidden`` hides what is in it, except a descendant
  with ``position:absolute``/``fixed``, which escapes the clip.
- ``visibility:hidden`` is inherited, and a descendant's ``visibility:visible`` shows it.
- ``font-size:0`` is inherited; a descendant's non-zero absolute size (``13px``, ``small``)
  shows it again, a relative one (``150%``, ``2em``) is still zero. Layout mail sets
  ``font-size:0`` on table cells to remove gaps between blocks and resets it on the
  children, so this matters for ordinary newsletters. Sizes under 2px count as zero:
  nobody reads 1px text, and phish pad with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ABSOLUTE_UNITS = ("px", "pt", "pc", "cm", "mm", "in", "q")
# rem is relative to the root element, whose size a mail cannot make zero here.
_ROOT_RELATIVE = ("rem",)
_KEYWORDS = frozenset(
    {"xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large", "xxx-large"}
)
_PT_PER_PX = 0.75


@dataclass(frozen=True, slots=True)
class Shown:
    """The inherited state that decides whether an element's own text is shown."""

    gone: bool = False  # display:none or alike, on it or an ancestor
    visible: bool = True  # the computed ``visibility``
    zero_font: bool = False  # the computed font size is (nearly) zero
    clipped: bool = False  # inside a zero-height overflow:hidden box

    @property
    def text_shown(self) -> bool:
        return not self.gone and self.visible and not self.zero_font and not self.clipped


SHOWN = Shown()


_IMPORTANT = re.compile(r"!\s*important\s*$")


def declarations(style: str) -> dict[str, str]:
    """``prop: value`` pairs of an inline style, lower-cased, as the cascade settles them:
    the last one of a name wins, unless an earlier one is ``!important`` and it is not."""
    out: dict[str, str] = {}
    important: set[str] = set()
    for part in style.split(";"):
        name, sep, value = part.partition(":")
        if not sep:
            continue
        name, value = name.strip().lower(), value.strip().lower()
        bang = _IMPORTANT.search(value)
        if bang:
            value = value[: bang.start()].strip()
            important.add(name)
        elif name in important:
            continue
        out[name] = value
    return out


def _length(value: str) -> tuple[float, str] | None:
    """A CSS length as (number, unit), or None when it is not one."""
    number = value.rstrip("abcdefghijklmnopqrstuvwxyz%")
    unit = value[len(number) :]
    try:
        return float(number), unit
    except ValueError:
        return None


def _zero_length(value: str) -> bool:
    parsed = _length(value)
    return parsed is not None and parsed[0] == 0


def _font_size(value: str, parent_zero: bool) -> bool:
    """Whether a ``font-size`` value leaves the text (nearly) zero-sized."""
    if value in _KEYWORDS or value in ("initial", "revert", "revert-layer"):
        return False  # initial is medium
    parsed = _length(value)
    if parsed is None:
        # inherit, unset, larger, smaller scale the parent's size; calc(), var() and
        # anything unread: shown, since a filter that hides what the reader sees is worse
        return parent_zero and value in ("inherit", "unset", "larger", "smaller")
    number, unit = parsed
    if number <= 0:
        return True
    if unit in _ABSOLUTE_UNITS:
        px = number / _PT_PER_PX if unit == "pt" else number
        return unit in ("px", "pt") and px < 2
    if unit in _ROOT_RELATIVE:
        return False
    return parent_zero  # %, em, ex, ch: a share of the parent's size


def _size_of_font(shorthand: str) -> str:
    """The size in a ``font`` shorthand ("bold 12px/1.4 Arial", "0/0 a"): the first token
    with a unit or a slash; a bare number there is a weight."""
    for token in shorthand.split():
        size = token.split("/")[0]
        if size in _KEYWORDS or "/" in token or (_length(size) and size.rstrip("0123456789.")):
            return size
    return ""


def _gone(decl: dict[str, str], hidden_attr: bool) -> bool:
    display = decl.get("display")
    # ``hidden`` is display:none from the browser's own sheet: an inline display wins
    if display == "none" or (hidden_attr and display is None):
        return True
    opacity = _length(decl.get("opacity", "1"))
    return opacity is not None and opacity[0] == 0


def _clips(decl: dict[str, str]) -> bool:
    """A zero-height box that clips what overflows it (the preheader pattern)."""
    clipped = decl.get("overflow") == "hidden" or decl.get("overflow-y") == "hidden"
    return clipped and any(_zero_length(decl.get(key, "")) for key in ("height", "max-height"))


def _visible(value: str | None, parent: bool) -> bool:
    if value in ("hidden", "collapse"):
        return False
    if value in ("visible", "initial", "revert", "revert-layer"):
        return True
    return parent  # inherit, unset, nothing, or not a value


def shown(parent: Shown, style: str | None, hidden_attr: bool) -> Shown:
    """The state of an element whose parent is in ``parent``."""
    if parent.gone:
        return parent
    decl = declarations(style) if style else {}
    if _gone(decl, hidden_attr):
        return Shown(gone=True)
    if not decl:
        return parent
    # An absolutely positioned box escapes the clip of a static ancestor; a positioned
    # clipper would still clip it, but the reader errs towards showing.
    escapes = decl.get("position") in ("absolute", "fixed")
    clipped = _clips(decl) or (parent.clipped and not escapes)
    visible = _visible(decl.get("visibility"), parent.visible)
    zero_font = parent.zero_font
    size = decl.get("font-size", _size_of_font(decl.get("font", "")))
    if size:
        zero_font = _font_size(size, parent.zero_font)
    if (visible, zero_font, clipped) == (parent.visible, parent.zero_font, parent.clipped):
        return parent
    return Shown(visible=visible, zero_font=zero_font, clipped=clipped)
