"""The contract every generator of ``textgate.mail.synthetic.REGISTRY`` keeps; what one
generator writes beyond it is tested in its own file (test_modern.py, ...)."""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from email.utils import parsedate_to_datetime
from types import ModuleType

import pytest

from textgate import data
from textgate.mail import EMAIL_SOURCES, iter_email_corpus, model_text
from textgate.mail.synthetic import REGISTRY, Generator, bulk, lists, lures, modern
from textgate.normalize import NormalizeSettings

REAL_SOURCES = ("enron-raw", "enron-spam-pre", "trec07p", "phishing-pot")


@pytest.mark.parametrize("generator", REGISTRY, ids=lambda g: g.name)
def test_generator_is_seeded_counted_and_writes_real_rfc822(generator: Generator) -> None:
    first, again = list(generator.items()), list(generator.items())
    assert [i.raw for i in first] == [i.raw for i in again]  # same messages on every build
    assert len(first) == generator.count
    assert len({i.raw for i in first}) == generator.count
    assert len({i.name for i in first}) == generator.count
    assert {i.label for i in first} == {generator.label}
    assert {i.group for i in first} == {generator.name}
    assert generator.name == f"{generator.source}/{generator.label}"
    for item in first:
        assert item.name.startswith(f"{generator.source}/") and item.name.endswith(".eml")
        msg = message_from_bytes(item.raw, policy=policy.default)
        assert msg["From"] and msg["To"] and msg["Subject"], item.name
        assert parsedate_to_datetime(str(msg["Date"])).tzinfo is not None, item.name
        assert re.fullmatch(r"<[0-9a-f]+@[\w.-]+>", str(msg["Message-ID"])), item.name
        assert msg.get_body() is not None, item.name


@pytest.mark.parametrize("generator", REGISTRY, ids=lambda g: g.name)
def test_generated_mail_is_training_data_only(generator: Generator) -> None:
    # data.split keeps every group with this prefix out of validation and test
    # (tests/unit/data/test_data.py::test_generated_groups_only_ever_train)
    assert generator.name.startswith("synthetic-")
    assert generator.name.startswith(data.table.TRAIN_ONLY_PREFIX)
    assert generator.source in EMAIL_SOURCES


def test_generators_have_distinct_sources() -> None:
    sources = [g.source for g in REGISTRY]
    assert len(set(sources)) == len(sources)  # else --exclude-source would drop two


@pytest.mark.parametrize("half", [0, 1], ids=["even-left-out", "odd-left-out"])
def test_the_corpus_yields_the_registry_in_order_and_each_source_can_be_left_out(
    half: int,
) -> None:
    left_out = {g.source for g in REGISTRY[half::2]}
    kept = [g for g in REGISTRY if g.source not in left_out]
    items = iter_email_corpus(exclude_sources=(*REAL_SOURCES, *sorted(left_out)))
    groups = [item.group for item in items]
    assert groups == [g.name for g in kept for _ in range(g.count)]


# Each of the first ``count`` messages keeps at least ``words`` words after the reader and the
# normalizer, HTML or plain. Poison's own file holds its stricter form (the pitch inside the
# window the model reads, padding around it).
REACHES_THE_MODEL = [
    pytest.param(modern, 40, 8, "ham", id="modern"),
    pytest.param(bulk, 70, 20, "ham", id="bulk"),
    pytest.param(lists, 80, 15, "ham", id="lists"),
    pytest.param(lures, 70, 20, "phish", id="lures"),
]


@pytest.mark.parametrize(("generator", "count", "words", "label"), REACHES_THE_MODEL)
def test_generated_mail_reaches_the_model(
    generator: ModuleType, count: int, words: int, label: str
) -> None:
    for item in generator.items(count):
        assert item.label == label
        text = model_text(item.raw, NormalizeSettings())
        assert len(text.split()) >= words, text  # a body reaches the model, HTML or plain
