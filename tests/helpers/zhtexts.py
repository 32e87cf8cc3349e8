"""Generated Chinese reviews for tests: offline, seeded, with a learnable polarity."""

from __future__ import annotations

import random

_GOOD = ("很好", "满意", "不错", "喜欢", "推荐", "值得", "快速", "精美", "划算", "好评")
_BAD = ("很差", "失望", "退货", "难用", "垃圾", "太慢", "破损", "后悔", "差评", "糟糕")
_NEUTRAL = (
    "这个",
    "手机",
    "质量",
    "物流",
    "包装",
    "客服",
    "价格",
    "屏幕",
    "电池",
    "酒店",
    "房间",
    "书",
)
_ODD = ("ＯＫ", "１２３", "！！", "iPhone", "５星", "，", "。", "？")


def reviews(n: int, seed: int) -> list[tuple[str, str]]:
    """(text, label) pairs; the majority of polar words decides the label."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        good = rng.random() < 0.5
        words = [rng.choice(_NEUTRAL) for _ in range(rng.randint(1, 6))]
        words += [rng.choice(_GOOD if good else _BAD) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:
            words.append(rng.choice(_ODD))
        rng.shuffle(words)
        rows.append(("".join(words), "positive" if good else "negative"))
    return rows
