"""What an element's inline ``style`` (and ``hidden`` attribute) does to the visibility of
its text, in the few properties mail uses to hide words from the reader but not the filter.

Only inline declarations: rules in ``<style>`` sheets need a CSS engine and selector
matching (see Known limits in docs/email-model.md). Each property resolves as CSS
inherits it, so a child can undo what can be undone:

- ``display:none``, ``opacity:0``, the ``hidden`` attribute and a zero-height box with
  ``overflow:hidden`` hide the element and everything in it; no descendant can show it.
- ``visibility:hidden`` is inherited, and a descendant's ``visibility:visible`` shows it.
- ``font-size:0`` is inherited; a descendant's non-zero absolute size (``13px``, ``small``)
  shows it again, a relative one (``150%``, ``2em``) is still zero. Layout mail sets
  ``font-size:0`` on table cells to remove gaps between blocks and resets it on the
  children, so this matters for ordinary newsletters. Sizes under 2px count as zero:
  nobody reads 1px text, and phish pad with it.
"""

from __future__ import annotations

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

    @property
    def text_shown(self) -> bool:
        return not self.gone and self.visible and not self.zero_font


SHOWN = Shown()


def declarations(style: str) -> dict[str, str]:
    """``prop: value`` pairs of an inline style, lower-cased; the last one of a name wins
    and ``!important`` is dropped (inline style has nothing to be more important than)."""
    out: dict[str, str] = {}
    for part in style.split(";"):
        name, sep, value = part.partition(":")
        if not sep:
            continue
        value = value.strip().lower().removesuffix("!important").strip()
        out[name.strip().lower()] = value
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
    if value in _KEYWORDS:
        return False
    parsed = _length(value)
    if parsed is None:
        return parent_zero  # inherit, larger, smaller, calc(): take the parent's
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


def _gone(decl: dict[str, str]) -> bool:
    if decl.get("display") == "none":
        return True
    opacity = _length(decl.get("opacity", "1"))
    if opacity is not None and opacity[0] == 0:
        return True
    clipped = decl.get("overflow") == "hidden" or decl.get("overflow-y") == "hidden"
    flat = any(_zero_length(decl.get(key, "")) for key in ("height", "max-height"))
    return clipped and flat


def shown(parent: Shown, style: str | None, hidden_attr: bool) -> Shown:
    """The state of an element whose parent is in ``parent``."""
    if parent.gone:
        return parent
    if hidden_attr:
        return Shown(gone=True)
    if not style:
        return parent
    decl = declarations(style)
    if _gone(decl):
        return Shown(gone=True)
    visible = parent.visible
    visibility = decl.get("visibility")
    if visibility in ("hidden", "collapse"):
        visible = False
    elif visibility == "visible":
        visible = True
    zero_font = parent.zero_font
    size = _size_of_font(decl.get("font", ""))
    size = decl.get("font-size", size)
    if size:
        zero_font = _font_size(size, parent.zero_font)
    if visible == parent.visible and zero_font == parent.zero_font:
        return parent
    return Shown(visible=visible, zero_font=zero_font)
