"""The language a text is written in (issue 43 §3; docs/mail.md, "Languages").

py3langid (BSD-3-Clause): langid.py's naive Bayes over byte n-grams, 97 languages (80 kept,
see ``RARELY_MAILED``), its model shipped inside the package (0.7 MB), no network. It was
chosen against pycld2, langdetect and lingua on short mail texts labelled by reading
(``benchmarks/studies/archive/languages.py``; the numbers are in docs/mail.md). Pinned at
0.2.2: later releases declare numpy >= 2, which Triton's client package does not allow.

Spam hides its words from filters: mathematical letters (𝐅𝐫𝐞𝐞), Cyrillic look-alikes inside
Latin words (Vеrіfy), zero-width characters between letters. The model reads a skeleton:
NFKC, format characters dropped, and in a mostly Latin text the Cyrillic look-alikes read as
Latin. Links, addresses and numbers are taken out: they are in no language and tilt every
text towards English. A short text is a guess, so under ``MIN_LETTERS`` letters, or below
``MIN_CONFIDENCE``, the answer is ``und`` (undetermined), which no language policy acts on
(SpamAssassin's TextCat does the same). Codes are ISO 639-1, the model's variants folded in
(``same_language``).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

UND = "und"
MAX_CHARS = 1000  # the head of a text decides; more costs time and changes nothing
MIN_LETTERS = 20
MIN_CONFIDENCE = 0.6

# Latin-script languages the model names for English junk (tables, lists, lorem ipsum) far
# more often than anyone mails in them; the other 80 of its 97 languages stay.
RARELY_MAILED = frozenset(
    ("an", "br", "eo", "fo", "ht", "jv", "la", "lb", "mg",
     "oc", "qu", "rw", "se", "vo", "wa", "xh", "zu")
)  # fmt: skip
_NOISE = re.compile(r"://|@|\w\.\w")  # a word with one of these is a link, address or domain
_DIGITS = re.compile(r"[\d_]+")
_FORMAT = re.compile(r"[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[a-zA-Z]")
_LOOKALIKES = str.maketrans("аеорсухіјѕԁһԛԝАВЕКМНОРСТХІЈЅ", "aeopcyxijsdhqwABEKMHOPCTXIJS")
_FOLDS = re.compile(r"[^\u0400-\u04ff]*(?:[аеорсухіјѕԁһԛԝАВЕКМНОРСТХІЈЅ][^\u0400-\u04ff]*)+")
_VARIANTS = {"nb": "no", "nn": "no", "wuu": "zh", "yue": "zh", "cmn": "zh", "zh-cn": "zh"}


@dataclass(frozen=True)
class Language:
    code: str  # ISO 639-1, or "und"
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "confidence": self.confidence}


def same_language(code: str) -> str:
    """One code per language: the model's and other tools' variants folded (nb -> no)."""
    code = code.lower()
    return _VARIANTS.get(code, code.split("-")[0])


@functools.cache
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)
    identifier.set_languages([c for c in identifier.nb_classes if c not in RARELY_MAILED])
    return identifier


def detect(text: str, min_confidence: float = MIN_CONFIDENCE) -> Language:
    """The language of ``text``'s head, or ``und`` when too little of it is words or the
    model is less sure than ``min_confidence``."""
    # NFKC can expand a character eighteenfold (U+FDFA): cut again after it
    head = unicodedata.normalize("NFKC", text[:MAX_CHARS])[:MAX_CHARS]
    words = _skeleton(_FORMAT.sub("", head).split())
    sample = _DIGITS.sub(" ", " ".join(w for w in words if not _NOISE.search(w)))
    if sum(ch.isalpha() for ch in sample) < MIN_LETTERS:
        return Language(UND, 0.0)
    code, p = _identifier().classify(sample)
    confidence = float(p) if math.isfinite(float(p)) else 0.0
    if confidence < min_confidence:
        return Language(UND, round(confidence, 3))
    return Language(same_language(str(code)), round(confidence, 3))


def _skeleton(words: list[str]) -> list[str]:
    """In a text mostly of Latin letters, a word whose Cyrillic letters all look Latin is
    read as Latin (a Russian text, mostly Cyrillic, is left alone)."""
    cyrillic = sum(len(_CYRILLIC.findall(w)) for w in words)
    if not cyrillic or cyrillic >= sum(len(_LATIN.findall(w)) for w in words):
        return words
    return [w.translate(_LOOKALIKES) if _FOLDS.fullmatch(w) else w for w in words]


def wanted(found: Language, ok: tuple[str, ...]) -> bool:
    """Whether a tenant's ``ok_languages`` accept ``found`` (empty: all; ``und``: always)."""
    return not ok or found.code == UND or found.code in ok
