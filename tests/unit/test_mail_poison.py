from __future__ import annotations

from email import message_from_bytes

from textgate import data
from textgate.mail import EMAIL_SOURCES, model_text, poison
from textgate.normalize import NormalizeSettings

# one phrase of each pitch: the spam must be visible in what the model reads
_PITCH_WORDS = ("day target:", "full version", "per dose", "% fixed", "replicas from")


def test_generated_padded_spam_is_seeded_distinct_and_real_rfc822() -> None:
    first, again = list(poison.items(60)), list(poison.items(60))
    assert [i.raw for i in first] == [i.raw for i in again]
    assert len({i.raw for i in first}) == 60
    assert {i.label for i in first} == {"spam"} and {i.group for i in first} == {poison.GROUP}
    for item in first:
        assert message_from_bytes(item.raw)["Subject"]


def test_the_pitch_is_inside_the_window_the_model_reads_and_padding_surrounds_it() -> None:
    texts = [model_text(i.raw, NormalizeSettings()) for i in poison.items(poison.COUNT)]
    for text in texts:
        assert any(w in text for w in _PITCH_WORDS), text
    # padding is what makes it poisoned: most of each text is not the pitch
    assert all(len(t.split()) >= 40 for t in texts)
    assert sum(any(t.find(w) > 60 for w in _PITCH_WORDS) for t in texts) >= poison.COUNT // 4


def test_generated_padded_spam_is_training_data_only() -> None:
    assert poison.GROUP.startswith(data.table.TRAIN_ONLY_PREFIX)
    assert poison.SOURCE in EMAIL_SOURCES
