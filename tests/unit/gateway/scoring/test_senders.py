"""Sender lists: which entry matches, and that a forged From never buys an allow."""

from __future__ import annotations

import math

import pytest

from textgate.config import Config, TenantConfig
from textgate.errors import ConfigError
from textgate.gateway.scoring import senders
from textgate.gateway.scoring.policy import NON_FINITE_OUTPUT, Verdict
from textgate.signals import auth

MX = "mx.acme.example"
TENANT = TenantConfig(
    name="acme",
    allow=("boss@partner.example", "friends.example", "dkim:bank.example"),
    block=("spam.example", "eve@friends.example"),
)


def results(*lines: str) -> auth.Results:
    return auth.read([f"{MX}; {line}" for line in lines])


def raw(sender: str, *auth_lines: str) -> bytes:
    head = "".join(f"Authentication-Results: {MX}; {a}\r\n" for a in auth_lines)
    return f"{head}From: {sender}\r\nSubject: hi\r\n\r\nbody\r\n".encode()


@pytest.mark.parametrize(
    ("sender", "lines", "want"),
    [
        ("boss@partner.example", ["dkim=pass header.d=partner.example"], ("allow", "dkim")),
        ("x@friends.example", ["dmarc=pass header.from=friends.example"], ("allow", "dmarc")),
        ("x@mail.friends.example", ["spf=pass smtp.mailfrom=bounce@friends.example"],
         ("allow", "spf")),
        ("anyone@else.example", ["dkim=pass header.d=bank.example"], ("allow", "DKIM")),
        ("anyone@else.example", ["dkim=pass header.d=mail.bank.example"], ("allow", "DKIM")),
        ("x@spam.example", ["dkim=pass header.d=spam.example"], ("block", "blocked")),
        ("x@sub.spam.example", [], ("block", "blocked")),
        ("eve@friends.example", ["dmarc=pass header.from=friends.example"], ("block", "blocked")),
    ],
)  # fmt: skip
def test_entries_match(sender: str, lines: list[str], want: tuple[str, str]) -> None:
    found = senders.match(TENANT, sender, results(*lines))
    assert found is not None and found.list == want[0] and want[1] in found.why


@pytest.mark.parametrize(
    ("sender", "lines"),
    [
        ("boss@partner.example", []),  # no authentication at all
        ("boss@partner.example", ["dkim=pass header.d=attacker.example"]),  # not aligned
        ("boss@partner.example", ["spf=pass smtp.mailfrom=x@attacker.example"]),
        ("boss@partner.example", ["dkim=fail header.d=partner.example"]),
        ("x@friends.example.attacker.example", ["dkim=pass header.d=attacker.example"]),
        ("anyone@else.example", ["dkim=pass header.d=notbank.example"]),
        ("anyone@else.example", ["dkim=fail header.d=bank.example"]),
    ],
)
def test_a_forged_or_unauthenticated_sender_is_not_allowed(sender: str, lines: list[str]) -> None:
    assert senders.match(TENANT, sender, results(*lines)) is None


def test_only_the_receiving_mtas_own_results_count() -> None:
    forged_below = auth.read(
        ["mx.acme.example; spf=none", "evil.example; dkim=pass header.d=partner.example"]
    )
    assert senders.match(TENANT, "boss@partner.example", forged_below) is None
    message = raw("boss@partner.example", "dkim=pass (good) header.d=partner.example")
    assert senders.results_of(message).passed == {"dkim": {"partner.example"}}


def test_allow_unauthenticated_is_the_operators_choice() -> None:
    loose = TenantConfig(name="t", allow=("partner.example",), allow_unauthenticated=True)
    found = senders.match(loose, "boss@partner.example", auth.Results())
    assert found is not None and "not authenticated" in found.why


def test_a_list_sets_the_action_and_only_for_mail_on_threshold_tasks() -> None:
    rule = Config().policy.for_task("spam")
    items = senders.for_items(
        TENANT, rule, [raw("x@spam.example"), "a text from x@spam.example"],
        ["x@spam.example", None],
    )  # fmt: skip
    assert items[0] is not None and items[0].list == "block" and items[1] is None
    label_rule = Config().policy.for_task("sentiment")
    assert senders.for_items(TENANT, label_rule, [raw("x@spam.example")], ["x@spam.example"]) == [
        None
    ]
    assert senders.verdict(Verdict("allow", 0.1), items[0]).action == "quarantine"
    allow = senders.Listed("allow", "friends.example", "why")
    assert senders.verdict(Verdict("quarantine", 0.99), allow).action == "allow"
    broken = Verdict("review", math.nan, (NON_FINITE_OUTPUT,))
    assert senders.verdict(broken, allow).action == "review"


@pytest.mark.parametrize("entry", ["", "not a domain", "@example.com", "dkim:", "x@", "com"])
def test_a_bad_entry_is_a_config_error(entry: str) -> None:
    with pytest.raises(ConfigError, match=r"allow\[0\]"):
        TenantConfig(name="t", allow=(entry,))


def test_the_tenant_of_mail_is_the_user_else_a_recipient_domain() -> None:
    from textgate.config import PolicyConfig
    from textgate.gateway.mailproto.front import delivered_to, tenant_of_mail

    policy = PolicyConfig(
        tenants=(
            TenantConfig(name="acme", domains=("acme.example",)),
            TenantConfig(name="acme-eu", domains=("eu.acme.example",)),
            TenantConfig(name="globex"),
        )
    )
    plain = b"To: boss@globex.example\r\nSubject: x\r\n\r\nbody\r\n"
    assert tenant_of_mail(policy, "globex", ["a@acme.example"], plain) == "globex"  # AUTH user
    assert tenant_of_mail(policy, "root", ["a@acme.example"], plain) == "acme"  # not a tenant
    assert tenant_of_mail(policy, None, ["x@other.example", "b@mx.eu.acme.example"], plain) == (
        "acme-eu"  # the longest owned domain wins
    )
    assert tenant_of_mail(policy, None, [], plain) is None  # To is the sender's to write
    delivered = b"Delivered-To: a@acme.example\r\nDelivered-To: b@globex.example\r\n\r\nx"
    assert delivered_to(delivered) == "a@acme.example"  # the topmost: the receiving MTA's
    assert tenant_of_mail(policy, None, [], delivered) == "acme"
    assert delivered_to(b"Subject: none\r\n\r\nDelivered-To: a@acme.example\r\n") == ""
    with pytest.raises(ConfigError, match="belongs to two tenants"):
        PolicyConfig(tenants=(TenantConfig(name="a", domains=("x.example",)),
                              TenantConfig(name="b", domains=("X.example",))))  # fmt: skip
    with pytest.raises(ConfigError, match=r"domains\[0\]"):
        TenantConfig(name="a", domains=("not a domain",))
