"""A SentencePiece ``precompiled_charsmap`` built from a per-code-point map, so that the
``tokenizers`` library applies the package's normalization itself (its ``Precompiled``
normalizer) and ``tokenizer.json`` alone tokenizes as the package's engine does.

The charsmap is a darts-clone double-array trie over the UTF-8 keys, whose leaf values are
offsets into a blob of NUL-terminated replacements, prefixed by the trie's size in bytes —
the layout ``spm_precompiled`` reads. Keys here are single code points (UTF-8 is
prefix-free), so a lookup is an exact match.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

_LEAF = 1 << 8
_VALUE = 1 << 31
_MAX_OFFSET = 1 << 21


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    value: int | None = None


def build(mapping: Mapping[int, str]) -> bytes:
    """The charsmap for ``mapping`` (code point -> replacement; "" removes it)."""
    blob = bytearray()
    root = _Node()
    for cp in sorted(mapping):
        node = root
        for byte in chr(cp).encode("utf-8"):
            node = node.children.setdefault(byte, _Node())
        node.value = len(blob)
        blob += mapping[cp].encode("utf-8") + b"\0"
    units = _double_array(root)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


def _double_array(root: _Node) -> list[int]:
    units: dict[int, int] = {0: 0}
    bases: set[int] = set()
    queue = [(root, 0)]
    next_free = 1
    while queue:
        node, pos = queue.pop(0)
        labels = sorted(node.children) + ([0] if node.value is not None else [])
        base = next_free
        while base in bases or any((base ^ c) in units for c in labels):
            base += 1
        bases.add(base)
        offset = pos ^ base
        if offset >= _MAX_OFFSET:
            raise ValueError("normalization map too large for a darts-clone offset")
        units[pos] = (units[pos] & 0xFF) | (offset << 10) | (_LEAF if node.value is not None else 0)
        if node.value is not None:
            units[base] = node.value | _VALUE
        for c, child in sorted(node.children.items()):
            units[base ^ c] = c
            queue.append((child, base ^ c))
        while next_free in units:
            next_free += 1
    size = max(units) + 1
    return [units.get(i, 0) for i in range(size)]
