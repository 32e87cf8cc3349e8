from __future__ import annotations

from pathlib import Path

import pytest

from textgate.bench import workload
from textgate.errors import ConfigError

POOL = [f"message {i} " + "word " * (i % 30) for i in range(400)]


def test_mix_has_the_declared_proportions_exactly() -> None:
    texts = workload.make("mix", 1000, seed=3, pool=POOL).texts
    shares = workload.band_shares(texts)
    assert shares == {"1-99": 0.7, "100-500": 0.2, "501-2000": 0.1}
    assert all(1 <= len(t) <= 2000 for t in texts)


def test_same_seed_same_texts_other_seed_other_order() -> None:
    a = workload.make("mix", 300, seed=1, pool=POOL).texts
    assert a == workload.make("mix", 300, seed=1, pool=POOL).texts
    assert a != workload.make("mix", 300, seed=2, pool=POOL).texts


def test_long_items_are_real_messages_joined() -> None:
    texts = workload.make("long", 20, seed=0, pool=POOL).texts
    assert all(501 <= len(t) <= 2000 for t in texts)
    assert all(t.startswith("message ") for t in texts)


@pytest.mark.parametrize("n", [1, 7, 33])
def test_small_n_still_exact(n: int) -> None:
    assert len(workload.make("mix", n, seed=0, pool=POOL).texts) == n


def test_packaged_corpus_mix() -> None:
    w = workload.make("mix", 200, seed=0)
    assert w.describe()["share_by_band"]["1-99"] == 0.7


def test_user_file_lines_and_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "w.txt"
    f.write_text('plain line\n{"text": "from json"}\n\n')
    w = workload.make("file", 10, seed=0, file=f)
    assert sorted(set(w.texts)) == ["from json", "plain line"]
    assert len(w.texts) == 10


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workload"):
        workload.make("bursty", 10, pool=POOL)
    with pytest.raises(ConfigError, match="file"):
        workload.make("file", 10)
    with pytest.raises(ConfigError, match="n"):
        workload.make("mix", 0, pool=POOL)


def _fake_corpus(n: int) -> list[object]:
    from textgate.mail import MailItem

    raws = [
        f"From: a{i}@example.com\r\nSubject: offer {i}\r\n\r\nbody of message {i}\r\n".encode()
        for i in range(n)
    ]
    return [MailItem(f"m{i}.eml", raw, "ham", "g") for i, raw in enumerate(raws)]


def test_mail_is_a_seeded_sample_of_raw_messages_with_their_extracted_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textgate import mail
    from textgate.normalize import NormalizeSettings, normalize_email

    monkeypatch.setattr(mail, "iter_email_corpus", lambda: iter(_fake_corpus(300)))
    a = workload.make("mail", 40, seed=5)
    assert a.messages == workload.make("mail", 40, seed=5).messages  # same seed, same subset
    assert a.messages != workload.make("mail", 40, seed=6).messages
    assert len(a.messages) == len(a.texts) == 40 == len(set(a.messages))
    for raw, text in zip(a.messages, a.texts, strict=True):
        assert text == normalize_email(raw, NormalizeSettings()).text  # what peers get
    assert a.raw_by_text()[a.texts[0]] == a.messages[0]
    assert a.describe()["bytes_median"] > 0


@pytest.mark.slow
def test_mail_draws_from_the_real_e_mail_corpus() -> None:
    work = workload.make("mail", 25, seed=0)
    assert len(work.messages) == 25 and all(b"\n" in raw for raw in work.messages)
    assert all(len(raw) <= workload.MAIL_MAX_BYTES for raw in work.messages)


def test_the_gateway_gets_the_raw_message_as_rfc822() -> None:
    import asyncio

    import httpx

    from textgate.bench import target

    seen: list[tuple[str, bytes]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.headers["content-type"], request.content))
        return httpx.Response(200, json={})

    tgt = target.make(
        "gateway", "http://gw", model="spam", messages={"hi": b"Subject: hi\r\n\r\nx"}
    )
    assert isinstance(tgt, target.HttpMailTarget)

    async def go() -> None:
        tgt._client = httpx.AsyncClient(transport=httpx.MockTransport(handler))  # type: ignore[attr-defined]
        await tgt.classify("hi")
        await tgt.close()

    asyncio.run(go())
    assert seen == [("message/rfc822", b"Subject: hi\r\n\r\nx")]
