from __future__ import annotations

import asyncio

import pytest

from textgate.bench import stream, workload
from textgate.bench.load import closed_loop
from textgate.bench.target import FakeTarget
from textgate.normalize import NormalizeSettings, normalize_email


def _item(i: int, label: str, group: str = "g", sender: str = "") -> object:
    from textgate.mail import MailItem

    raw = (
        f"From: {sender or f's{i}@example.com'}\r\n"
        "To: first@example.net,\r\n second@example.net\r\n"
        f"Message-ID: <m{i}@example.com>\r\nSubject: note {i}\r\n\r\n"
        f"body of message {i} for the {label} pile\r\n"
    ).encode()
    return MailItem(f"m{i}.eml", raw, label, group)


def _corpus(n: int = 400) -> list[object]:
    items = [_item(i, ("ham", "spam", "phish")[i % 3]) for i in range(n)]
    items.append(_item(9001, "ham", group="synthetic-lures"))  # generated: never traffic
    items.append(_item(4, "spam", sender="other@example.com"))  # the corpus repeats m4
    return items


@pytest.fixture
def corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    from textgate import mail

    monkeypatch.setattr(mail, "iter_email_corpus", lambda: iter(_corpus()))


def test_the_stream_is_seeded_and_holds_each_distinct_message_once(corpus: None) -> None:
    a = stream.campaign_stream(300, seed=3)
    assert a.name == "stream" and len(a.texts) == len(a.messages) == 300
    assert a.messages == stream.campaign_stream(300, seed=3).messages
    assert a.texts != stream.campaign_stream(300, seed=4).texts
    originals = [raw for raw in a.messages if b"resend." not in raw]
    assert len(originals) == len(set(originals))  # no distinct message arrives twice
    assert not any(b"s9001@" in raw for raw in a.messages)  # generated mail left out
    # the corpus's own repeat of m4 is one distinct message, not two
    assert sum(b"other@example.com" in raw or b"From: s4@" in raw for raw in originals) <= 1


def test_re_sends_repeat_a_recent_message_of_their_label_at_the_stated_share(
    corpus: None,
) -> None:
    work = stream.campaign_stream(2000, seed=0, scale=4.0)  # 30 % of spam, 0.7 % of ham
    settings = NormalizeSettings()
    first: dict[str, int] = {}
    resent = {"ham": 0, "spam": 0}
    arrivals = {"ham": 0, "spam": 0}
    for k, (text, raw) in enumerate(zip(work.texts, work.messages, strict=True)):
        label = "ham" if "ham pile" in text else "spam"
        arrivals[label] += 1
        if b"resend." not in raw:
            first.setdefault(text, k)
            continue
        resent[label] += 1
        assert text in first and first[text] < k  # an earlier arrival's body
        assert normalize_email(raw, settings).text == text  # the scored text is the same
        assert b"To: recipient%d@example.org" % k in raw and b"second@" not in raw
    assert resent["spam"] / arrivals["spam"] == pytest.approx(0.30, abs=0.06)
    assert resent["ham"] <= 0.03 * arrivals["ham"]
    assert work.describe()["repeat_share"] > 0.1


def test_resend_rewrites_the_recipient_and_id_only() -> None:
    raw = b"To: a@x\n b@x\nSubject: s\nMessage-ID: <1@x>\nX-To: kept\n\nTo: in the body\n"
    out = stream.resend(raw, 7)
    head, body = out.split(b"\n\n", 1)
    assert body == b"To: in the body\n"
    assert head.split(b"\n") == [
        b"Subject: s", b"X-To: kept", b"To: recipient7@example.org",
        b"Message-ID: <resend.7@example.org>",
    ]  # fmt: skip
    assert stream.resend(b"Subject: only", 1) == (
        b"Subject: only\nTo: recipient1@example.org\nMessage-ID: <resend.1@example.org>"
    )


def test_a_cursor_reads_the_stream_onward_across_loops() -> None:
    sent: list[str] = []

    def delay(text: str) -> float:
        sent.append(text)
        return 0.0

    cursor = stream.Cursor([f"t{i}" for i in range(10)])

    async def two_steps() -> None:
        for _ in range(2):
            await closed_loop(FakeTarget(delay), cursor, concurrency=2, duration_s=5,
                              max_requests=4)  # fmt: skip

    asyncio.run(two_steps())
    assert sent == [f"t{i}" for i in range(8)]  # the second step did not start over
    assert cursor.wraps == 0
    assert [cursor[0] for _ in range(3)] == ["t8", "t9", "t0"] and cursor.wraps == 1
    with pytest.raises(TypeError, match="one arrival"):
        cursor[1:3]
    with pytest.raises(ValueError):
        stream.Cursor([])


def test_a_text_sent_as_several_messages_posts_each_in_turn() -> None:
    import httpx

    from textgate.bench import target

    work = workload.Workload("stream", ("a", "b", "a", "a"), 0, "t", (b"A1", b"B", b"A2", b"A1"))
    raws = work.raw_by_text()
    assert raws == {"a": (b"A1", b"A2"), "b": b"B"}
    assert workload.Workload("mix", ("a",), 0, "t").raw_by_text() == {}  # no mail: no map
    posted: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        posted.append(request.content)
        return httpx.Response(200, json={})

    tgt = target.make("gateway", "http://gw", messages=raws)

    async def go() -> None:
        tgt._client = httpx.AsyncClient(transport=httpx.MockTransport(handler))  # type: ignore[attr-defined]
        for text in ("a", "b", "a", "a"):
            await tgt.classify(text)
        await tgt.close()

    asyncio.run(go())
    assert posted == [b"A1", b"B", b"A2", b"A1"]


@pytest.mark.slow
def test_the_real_stream_carries_the_corpus_repeat_share() -> None:
    work = stream.campaign_stream(6000, seed=0)
    share = work.describe()["repeat_share"]
    # 7.5 % of spam and phish, 0.17 % of ham; the corpus is about half each
    assert 0.02 < share < 0.06
    resent = [i for i, raw in enumerate(work.messages) if b"resend." in raw]
    assert len(resent) == round(share * len(work.texts))
    for i in resent[:50]:
        assert normalize_email(work.messages[i], NormalizeSettings()).text == work.texts[i]
