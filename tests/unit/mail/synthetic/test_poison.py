from __future__ import annotations

from textgate.mail import model_text
from textgate.mail.synthetic import poison
from textgate.normalize import NormalizeSettings

# one phrase of each pitch: the spam must be visible in what the model reads
_PITCH_WORDS = ("day target:", "full version", "per dose", "% fixed", "replicas from")


# seeded, counted, real RFC 822, training only: tests/unit/mail/synthetic/test_registry.py
def test_the_pitch_is_inside_the_window_the_model_reads_and_padding_surrounds_it() -> None:
    texts = [model_text(i.raw, NormalizeSettings()) for i in poison.items(poison.COUNT)]
    for text in texts:
        assert any(w in text for w in _PITCH_WORDS), text
    # padding is what makes it poisoned: most of each text is not the pitch
    assert all(len(t.split()) >= 40 for t in texts)
    assert sum(any(t.find(w) > 60 for w in _PITCH_WORDS) for t in texts) >= poison.COUNT // 4
