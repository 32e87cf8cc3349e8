"""Language identification (textgate.signals.language): clear texts, the spam tricks that
hide words from it, too little text, hostile strings."""

from __future__ import annotations

import pytest

from textgate.signals import language
from textgate.signals.language import UND, Language

CLEAR = {
    "en": "Thank you for your order. Your parcel will be delivered on Monday morning.",
    "de": "Vielen Dank für Ihre Bestellung. Ihr Paket wird am Montag früh geliefert.",
    "fr": "Merci pour votre commande. Votre colis sera livré lundi matin sans faute.",
    "es": "Gracias por su pedido. Su paquete será entregado el lunes por la mañana.",
    "pt": "Obrigado pela sua encomenda. O seu pacote será entregue na segunda-feira.",
    "nl": "Bedankt voor uw bestelling. Uw pakket wordt maandagochtend bezorgd.",
    "it": "Grazie per il suo ordine. Il pacco sarà consegnato lunedì mattina presto.",
    "ru": "Спасибо за ваш заказ. Ваша посылка будет доставлена в понедельник утром.",
    "zh": "感谢您的订购。您的包裹将于星期一上午送达，请注意查收并保持电话畅通。",
    "ja": "ご注文ありがとうございます。お荷物は月曜日の午前中にお届けいたします。",
}


@pytest.mark.parametrize("code", sorted(CLEAR))
def test_clear_texts_are_named(code: str) -> None:
    found = language.detect(CLEAR[code])
    assert found.code == code and found.confidence >= language.MIN_CONFIDENCE


@pytest.mark.parametrize(
    "text",
    [
        # mathematical bold letters (NFKC reads them as ASCII)
        "𝐘𝐨𝐮𝐫 𝐦𝐞𝐦𝐛𝐞𝐫𝐬𝐡𝐢𝐩 𝐡𝐚𝐬 𝐞𝐱𝐩𝐢𝐫𝐞𝐝, 𝐩𝐥𝐞𝐚𝐬𝐞 𝐮𝐩𝐝𝐚𝐭𝐞 𝐲𝐨𝐮𝐫 𝐩𝐚𝐲𝐦𝐞𝐧𝐭 𝐝𝐞𝐭𝐚𝐢𝐥𝐬 𝐭𝐨𝐝𝐚𝐲",
        # Cyrillic look-alikes inside and as whole English words
        "Nоtice: a nеw rесоrd is аvаіlаblе fоr you. Dear Сustomer, wе аrе рlеаѕеd tо іnfоrm уоu",
        # zero-width joiners between the letters
        "H\u200cel\u200clo, t\u200chis i\u200cs the s\u200ctudent office writing about your fees",
    ],
)
def test_obfuscated_english_is_read_as_english(text: str) -> None:
    assert language.detect(text).code == "en"


def test_a_cyrillic_text_keeps_its_letters() -> None:
    # "а", "о", "сор" are written only with letters that have Latin look-alikes: folded in a
    # mostly Latin text, left alone in a Cyrillic one
    assert language._skeleton(["а", "о", "сор", "Спасибо"]) == ["а", "о", "сор", "Спасибо"]
    assert language._skeleton(["Nеw", "rесоrd", "Dear", "friend"]) == [
        "New", "record", "Dear", "friend",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "text",
    ["", "   ", "ok", "http://x.example/a?b=c https://y.example www.z.example a@b.example",
     "12345 67890 2024-05-06 +1 (555) 010-9999", "Re: hi"],
)  # fmt: skip
def test_too_little_text_is_undetermined(text: str) -> None:
    assert language.detect(text) == Language(UND, 0.0)


@pytest.mark.parametrize(
    "text",
    ["\ud800 lone surrogate " * 20, "\x00\x01\x1b[31m" * 300, "é" * 200_000, "a." * 100_000],
)
def test_hostile_strings_are_answered(text: str) -> None:
    found = language.detect(text)
    assert isinstance(found.code, str) and 0.0 <= found.confidence <= 1.0


def test_only_the_head_is_read() -> None:
    head = CLEAR["de"] * 20  # over MAX_CHARS of German
    assert language.detect(head + CLEAR["en"] * 200).code == "de"


def test_wanted_follows_ok_languages() -> None:
    de, und = Language("de", 1.0), Language(UND, 0.0)
    assert language.wanted(de, ())  # no list: every language is fine
    assert language.wanted(de, ("en", "de")) and not language.wanted(de, ("en",))
    assert language.wanted(und, ("en",))  # undetermined is never acted on


def test_variants_fold_to_one_code() -> None:
    assert [language.same_language(c) for c in ("nb", "nn", "zh-cn", "yue", "EN")] == [
        "no", "no", "zh", "zh", "en",
    ]  # fmt: skip
