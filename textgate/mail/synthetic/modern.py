"""Modern legitimate mail, generated: the part of an inbox the packaged corpus lacks.

The corpus's ham is 1999-2007 (Enron, TREC) and its only mail from 2019 on is phishing, much
of it disguised as order, delivery, receipt and account notices. A model trained on it
learns "a modern transactional message is phishing": "Your Amazon order #123-456 has
shipped" scored 0.95. Real modern ham under a free licence was not to be had offline, so
this module writes it: order confirmations, delivery notices, receipts, account notices the
user triggered, newsletters, developer and calendar notifications, travel bookings — each a
real RFC 822 message (plain or HTML) that goes through the same reader and normalizer as
the corpus, links on the sender's own domain. Seeded: the same messages on every build.

They are training data only (group ``synthetic-modern/ham``; ``data.split`` never puts them
in validation or test, so every reported number is on real mail), and
``--exclude-source synthetic-modern`` builds without them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from textgate.mail.containers import MailItem
from textgate.mail.synthetic import common

SOURCE = "synthetic-modern"
LABEL = "ham"
GROUP = f"{SOURCE}/{LABEL}"
COUNT = 600
SEED = 20261202

_SHOPS = [
    ("Amazon", "amazon.com"),
    ("Target", "target.com"),
    ("Best Buy", "bestbuy.com"),
    ("IKEA", "ikea.com"),
    ("Etsy", "etsy.com"),
    ("eBay", "ebay.com"),
    ("Zalando", "zalando.de"),
    ("Walmart", "walmart.com"),
    ("Decathlon", "decathlon.com"),
    ("Apple", "apple.com"),
    ("Uniqlo", "uniqlo.com"),
    ("Bol.com", "bol.com"),
    ("Otto", "otto.de"),
]
_ITEMS = [
    "USB-C charging cable (2 m)",
    "paperback: The Overstory",
    "stainless steel water bottle",
    "wireless mouse",
    "running shoes, size 42",
    "desk lamp",
    "HDMI adapter",
    "yoga mat",
    "coffee beans, 1 kg",
    "kids' rain jacket",
    "LED bulbs (4 pack)",
    "phone case",
    "backpack",
    "noise-cancelling headphones",
    "board game",
    "frying pan, 28 cm",
    "printer paper",
]
_CARRIERS = ["UPS", "FedEx", "DHL", "USPS", "DPD", "GLS", "Royal Mail", "PostNL"]
_SERVICES = [
    ("Uber", "uber.com", "trip"),
    ("Spotify", "spotify.com", "Premium subscription"),
    ("Netflix", "netflix.com", "membership"),
    ("Google Play", "google.com", "app purchase"),
    ("DoorDash", "doordash.com", "order"),
    ("Airbnb", "airbnb.com", "reservation"),
    ("Dropbox", "dropbox.com", "Plus plan"),
    ("Deutsche Bahn", "bahn.de", "ticket"),
]
_ACCOUNTS = [
    ("GitHub", "github.com"),
    ("Google", "google.com"),
    ("Microsoft", "microsoft.com"),
    ("Slack", "slack.com"),
    ("Zoom", "zoom.us"),
    ("Atlassian", "atlassian.com"),
    ("LinkedIn", "linkedin.com"),
    ("Dropbox", "dropbox.com"),
]
_NEWS = [
    ("The Morning Brief", "substack.com"),
    ("Medium Daily Digest", "medium.com"),
    ("Python Weekly", "pythonweekly.com"),
    ("The Verge", "theverge.com"),
    ("Local Library News", "library.example.org"),
    ("Strava", "strava.com"),
    ("Duolingo", "duolingo.com"),
    ("Product Updates", "notion.so"),
]
_TOPICS = [
    "a new way to plan your week",
    "what we learned shipping version 3",
    "five books for autumn",
    "the city council's budget vote",
    "how to keep houseplants alive",
    "this month's releases",
    "a guide to better sleep",
    "the best trails near you",
    "interview: building a small shop",
]
_REPOS = ["acme/api", "team/website", "data/pipeline", "mobile/app", "infra/terraform"]
_REVIEW_NOTES = [
    "Looks good to me, one nit below.",
    "Rebased on main, tests pass now.",
    "Can we split this into two commits?",
]
_CITIES = ["Berlin", "Lisbon", "Chicago", "Osaka", "Toronto", "Madrid", "Oslo", "Denver"]


def _money(rng: random.Random) -> str:
    return f"{rng.choice(['$', '€', '£'])}{rng.randint(3, 240)}.{rng.randint(0, 99):02d}"


def _order(rng: random.Random, name: str) -> tuple[str, str, str]:
    shop, domain = rng.choice(_SHOPS)
    number = f"{rng.randint(100, 999)}-{rng.randint(1000000, 9999999)}"
    items = rng.sample(_ITEMS, rng.randint(1, 3))
    lines = "\n".join(f"  {i}  {_money(rng)}" for i in items)
    when = rng.choice(["Tuesday", "Thursday", "tomorrow", "within 3-5 business days", "Friday"])
    subject = rng.choice(
        [
            f"Your {shop} order #{number}",
            f"Order confirmation #{number}",
            f"Thanks for your order, {name.split()[0]}",
            f"Your {shop} order has shipped",
        ]
    )
    body = (
        f"Hello {name.split()[0]},\n\nThank you for shopping with {shop}. We've received your "
        f"order #{number}.\n\n{lines}\n\nEstimated delivery: {when}.\n"
        f"You can view or change your order at https://www.{domain}/orders/{number}\n\n"
        f"{shop} Customer Service"
    )
    return subject, body, domain


def _delivery(rng: random.Random, name: str) -> tuple[str, str, str]:
    shop, domain = rng.choice(_SHOPS)
    carrier = rng.choice(_CARRIERS)
    track = "".join(rng.choice("0123456789ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(14))
    state = rng.choice(["has shipped", "is out for delivery", "was delivered", "is on its way"])
    subject = rng.choice(
        [
            f"Your package {state}",
            f"Shipped: {rng.choice(_ITEMS)}",
            f"Delivered: your {shop} package",
        ]
    )
    body = (
        f"Hi {name.split()[0]},\n\nGood news: your package {state}. Carrier: {carrier}, "
        f"tracking number {track}.\nTrack it at https://www.{domain}/track/{track}\n\n"
        f"{rng.choice(['It was left at your front door.', 'A signature is not required.', ''])}"
        f"\nThanks for shopping with {shop}."
    )
    return subject, body, domain


def _receipt(rng: random.Random, name: str) -> tuple[str, str, str]:
    service, domain, what = rng.choice(_SERVICES)
    total, card = _money(rng), rng.randint(1000, 9999)
    subject = rng.choice(
        [
            f"Your receipt from {service}",
            f"{service}: payment received",
            f"Your {service} {what} receipt",
        ]
    )
    body = (
        f"Thanks, {name.split()[0]}.\n\nHere is your receipt for your {what}.\n"
        f"Total: {total}\nCharged to Visa ending in {card}.\n\n"
        f"See your history at https://{domain}/account/receipts\n"
        f"Questions? Visit https://help.{domain}"
    )
    return subject, body, domain


def _account(rng: random.Random, name: str) -> tuple[str, str, str]:
    service, domain = rng.choice(_ACCOUNTS)
    kind = rng.randrange(3)
    if kind == 0:
        city, device = rng.choice(_CITIES), rng.choice(["Firefox on Windows", "Safari on iPhone"])
        subject = f"New sign-in to your {service} account"
        body = (
            f"Hi {name.split()[0]},\n\nWe noticed a new sign-in to your account from "
            f"{device} near {city}. If this was you, there's nothing you need to do.\n"
            f"You can review your devices in your {service} security settings."
        )
    elif kind == 1:
        subject = f"Your {service} password was changed"
        body = (
            f"Hello {name.split()[0]},\n\nThe password for your {service} account was "
            "changed just now. If you made this change, you can ignore this email.\n"
            f"More about account security: https://{domain}/security"
        )
    else:
        code = rng.randint(100000, 999999)
        subject = f"{code} is your {service} verification code"
        body = (
            f"Use {code} to finish signing in to {service}. The code expires in 10 "
            "minutes. Never share it with anyone."
        )
    return subject, body, domain


def _newsletter(rng: random.Random, name: str) -> tuple[str, str, str]:
    title, domain = rng.choice(_NEWS)
    topics = rng.sample(_TOPICS, 3)
    subject = rng.choice([f"{title}: {topics[0]}", f"This week: {topics[0]}", title])
    body = (
        f"{title}\n\nIn this issue:\n- {topics[0].capitalize()}\n- {topics[1].capitalize()}\n"
        f"- {topics[2].capitalize()}\n\nRead online at https://{domain}/p/{rng.randint(100, 999)}"
        f"\n\nYou are receiving this because you subscribed at {domain}. "
        f"Unsubscribe or change your preferences: https://{domain}/settings"
    )
    return subject, body, domain


def _dev(rng: random.Random, name: str) -> tuple[str, str, str]:
    repo, n = rng.choice(_REPOS), rng.randint(10, 4000)
    who = rng.choice(common.FIRST).lower()
    subject = rng.choice(
        [
            f"Re: [{repo}] Fix flaky test in CI (#{n})",
            f"[{repo}] Run failed: build on main",
            f"[{repo}] {who} requested your review on #{n}",
        ]
    )
    body = (
        f"{who} commented on this pull request.\n\n"
        f"{rng.choice(_REVIEW_NOTES)}\n\n"
        f"Reply to this email directly or view it on GitHub:\n"
        f"https://github.com/{repo}/pull/{n}\nYou are receiving this because you were mentioned."
    )
    return subject, body, "github.com"


def _calendar(rng: random.Random, name: str) -> tuple[str, str, str]:
    who = " ".join(common.person(rng)[0].split()[:1])
    topic = rng.choice(["Sprint planning", "1:1", "Quarterly review", "Design sync", "Lunch"])
    day = rng.choice(["Mon", "Tue", "Wed", "Thu", "Fri"])
    subject = rng.choice(
        [
            f"Invitation: {topic} @ {day} 10:00",
            f"Updated invitation: {topic}",
            f"Accepted: {topic} @ {day} 14:30",
        ]
    )
    body = (
        f"{who} has invited you to: {topic}\nWhen: {day} {rng.randint(9, 16)}:00 - "
        f"{rng.randint(9, 17)}:30\nJoining info: https://meet.google.com/"
        f"{rng.choice('abcdefghij')}{rng.randint(100, 999)}\nGoing? Yes - Maybe - No\n"
        "Invitation from Google Calendar"
    )
    return subject, body, "google.com"


def _travel(rng: random.Random, name: str) -> tuple[str, str, str]:
    a, b = rng.sample(_CITIES, 2)
    ref = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(6))
    company, domain = rng.choice(
        [
            ("Lufthansa", "lufthansa.com"),
            ("Booking.com", "booking.com"),
            ("KLM", "klm.com"),
            ("Expedia", "expedia.com"),
        ]
    )
    subject = rng.choice(
        [
            f"Your trip to {b}: booking {ref}",
            f"Booking confirmed - {b}",
            f"Check in now for your flight to {b}",
        ]
    )
    body = (
        f"Dear {name},\n\nYour booking {ref} from {a} to {b} is confirmed. "
        f"Manage your booking at https://www.{domain}/manage/{ref}\nHave a good trip,\n{company}"
    )
    return subject, body, domain


KINDS: tuple[Callable[[random.Random, str], tuple[str, str, str]], ...] = (
    _order,
    _delivery,
    _receipt,
    _account,
    _newsletter,
    _dev,
    _calendar,
    _travel,
)


def _message(rng: random.Random, i: int) -> bytes:
    name, address = common.person(rng)
    subject, body, domain = KINDS[i % len(KINDS)](rng, name)
    headers = {
        "From": f"{domain.split('.')[0].capitalize()} <no-reply@{domain}>",
        "To": f"{name} <{address}>",
        "Subject": subject,
        "Date": common.date(rng, 2019, 4_000_000),
        "Message-ID": common.message_id(rng, domain),
    }
    # much modern mail is HTML only
    return common.rfc822(headers, body, html=rng.random() < 0.4, rng=rng)


def items(count: int = COUNT, seed: int = SEED) -> Iterator[MailItem]:
    return common.generate(GROUP, LABEL, _message, count, seed)


GENERATOR = common.Generator(GROUP, LABEL, COUNT, items)
