"""Phishing lures as they are sent today, generated: the credential and payment phish the
corpus holds too little of.

The corpus's phishing is one honeypot's (2019-2026): most of it surveys, prizes, casinos and
remedies, much of it in French, Portuguese or German, nearly all HTML. Written as plain text
the classic lures went through: of six hand-written ones (a customs fee, a suspended
membership, a password expiry, a document to sign, a tax refund, a wallet alert) five were
allowed, the transformer scoring them 0.02-0.14, while the generated ham of
``modern`` had taught it that account and delivery notices are legitimate.
This module writes the other side of that line: the same genres as a phisher writes them —
a look-alike or unrelated domain behind the link, a deadline, a threat, a request for a
password or a payment — so that what separates the two is what a person would look at.

The brands it imitates are deliberately none of those in ``benchmarks/studies/email/design_checks``
(no DHL, Netflix, Microsoft, DocuSign, IRS or Coinbase), so those hand-written messages test
the genre, not a memorised sender; they were read when these lures were written, so they are
design checks, not a blind test. Half are HTML with the links behind words, as
``common.set_body`` writes the generated ham, so that format carries no label. Seeded: the
same messages on every build. Over 400 lines for its word lists, one entry a line as the
formatter lays them out. Training rows only (group ``synthetic-lure/phish``, see
``data.table.TRAIN_ONLY_PREFIX``); ``--exclude-source synthetic-lure`` builds without them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from textgate.mail.containers import MailItem
from textgate.mail.synthetic import common

SOURCE = "synthetic-lure"
LABEL = "phish"
GROUP = f"{SOURCE}/{LABEL}"
COUNT = 400
SEED = 20261204

Lure = Callable[[random.Random], tuple[str, str, str]]  # brand, subject, body

_PARCEL = ["FedEx", "UPS", "USPS", "Royal Mail", "Canada Post", "PostNL", "Evri", "La Poste"]
_BILLING = [
    "PayPal",
    "Apple",
    "Spotify",
    "Disney+",
    "Amazon Prime",
    "Hulu",
    "Wells Fargo",
    "Bank of America",
    "HSBC",
    "Santander",
    "American Express",
    "Booking.com",
]
_MAILBOX = [
    "Webmail",
    "Mail Administrator",
    "IT Service Desk",
    "Email Support",
    "cPanel",
    "Zimbra",
    "Roundcube",
    "Help Desk",
]
_DOCS = [
    "Adobe Sign",
    "WeTransfer",
    "Box",
    "ShareFile",
    "Google Drive",
    "Secure Fax",
    "eFax",
    "Voice Message Center",
    "RingCentral",
    "QuickBooks",
    "Xero",
]
_STATE = [
    "HMRC",
    "Canada Revenue Agency",
    "Australian Taxation Office",
    "E-ZPass",
    "Social Security Administration",
    "DVLA",
    "Service Public",
    "SunPass",
]
_WALLETS = ["Binance", "MetaMask", "Kraken", "Trust Wallet", "Crypto.com", "Revolut"]
_WORDS = [
    "secure",
    "verify",
    "support",
    "account",
    "billing",
    "login",
    "track",
    "help",
    "portal",
    "service",
    "update",
    "center",
    "online",
    "auth",
    "id",
    "pay",
]
_TLDS = [
    "com",
    "net",
    "info",
    "online",
    "top",
    "xyz",
    "live",
    "site",
    "app",
    "co",
    "io",
    "click",
    "shop",
    "support",
    "cc",
    "icu",
    "us",
]
_HOSTS = ["wp-content/uploads", "images/.x", "cgi-bin", "sites/default/files", "m", "s"]
_FREE = ["gmail.com", "outlook.com", "yahoo.com", "aol.com", "mail.com", "proton.me"]
_GREETING = [
    "Dear Customer,",
    "Dear {address},",
    "Hello {first},",
    "Dear User,",
    "Dear Valued Member,",
    "Hi,",
    "Attention: {address}",
    "Dear Account Holder,",
]
_DEADLINE = [
    "within 24 hours",
    "within 48 hours",
    "today",
    "before midnight",
    "within 12 hours",
    "by the end of the day",
    "within 72 hours",
]
_CLOSING = [
    "Thank you for your prompt attention.",
    "We apologise for any inconvenience.",
    "Failure to do so may result in permanent closure.",
    "This is an automated message, please do not reply.",
    "Thank you for being a valued customer.",
    "Regards,\nCustomer Care",
]


def _slug(brand: str) -> str:
    return "".join(c for c in brand.lower() if c.isalnum())


def _url(rng: random.Random, brand: str) -> str:
    """A phisher's link: a look-alike domain, a hijacked site, a bare IP or a shortener."""
    kind, token = rng.randrange(5), f"{rng.getrandbits(40):x}"
    if kind == 0:
        host = f"{_slug(brand)}-{rng.choice(_WORDS)}.{rng.choice(_TLDS)}"
    elif kind == 1:
        host = f"{rng.choice(_WORDS)}-{_slug(brand)}{rng.randint(1, 99)}.{rng.choice(_TLDS)}"
    elif kind == 2:
        words = rng.sample(
            [
                "green",
                "valley",
                "studio",
                "bakery",
                "dental",
                "garden",
                "auto",
                "design",
                "travel",
                "clinic",
                "farm",
                "print",
            ],
            2,
        )
        return f"https://{''.join(words)}.{rng.choice(_TLDS)}/{rng.choice(_HOSTS)}/{token}"
    elif kind == 3:
        ip = ".".join(str(rng.randint(11, 223)) for _ in range(4))
        return f"http://{ip}/{_slug(brand)}/{rng.choice(['login', 'verify', 'index.php'])}"
    else:
        host = rng.choice(["bit.ly", "t.co", "tinyurl.com", "rb.gy", "is.gd", "cutt.ly"])
    return f"{rng.choice(['https', 'http'])}://{host}/{token}"


def _sender(rng: random.Random, brand: str) -> str:
    slug = _slug(brand)
    address = rng.choice(
        [
            f"{rng.choice(['no-reply', 'service', 'alert', 'security', 'info'])}@{slug}-"
            f"{rng.choice(_WORDS)}.{rng.choice(_TLDS)}",
            f"{slug}{rng.randint(10, 9999)}@{rng.choice(_FREE)}",
            f"{rng.choice(['admin', 'mailer', 'office', 'sales'])}@"
            f"{rng.choice(['kwikprint', 'lakeside-dental', 'aurora-hvac', 'tradewinds-inn'])}."
            f"{rng.choice(_TLDS)}",
        ]
    )
    return f"{brand} <{address}>"


def _parcel(rng: random.Random) -> tuple[str, str, str]:
    brand = rng.choice(_PARCEL)
    url = _url(rng, brand)
    fee = f"{rng.choice(['$', '£', '€'])}{rng.randint(1, 4)}.{rng.randint(10, 99)}"
    ref = f"{rng.choice(['RX', 'LP', 'CN', 'US'])}{rng.randint(10**8, 10**9 - 1)}"
    why = rng.choice(
        [
            f"an unpaid shipping fee of {fee}",
            "an incomplete delivery address",
            f"outstanding import duties of {fee}",
            f"a redelivery charge of {fee}",
        ]
    )
    subject = rng.choice(
        [
            f"Delivery attempt failed: shipment {ref}",
            f"{brand}: your parcel {ref} is waiting",
            "Final notice: parcel held at our depot",
            f"Action needed for shipment {ref}",
        ]
    )
    body = (
        f"We tried to deliver your parcel {ref} but could not, because of {why}.\n"
        f"To schedule a new delivery, confirm your details and settle the amount "
        f"{rng.choice(_DEADLINE)}: {url}\n"
        f"Parcels not claimed within 5 days are returned to the sender or destroyed."
    )
    return brand, subject, body


def _billing(rng: random.Random) -> tuple[str, str, str]:
    brand = rng.choice(_BILLING)
    url = _url(rng, brand)
    what = rng.choice(
        [
            "your last payment was declined",
            "we could not verify your billing information",
            "unusual activity was detected on your account",
            "your card on file has expired",
            "someone tried to sign in from an unrecognised device",
        ]
    )
    subject = rng.choice(
        [
            f"Your {brand} account has been limited",
            "Action required: update your payment method",
            f"{brand} security notice: confirm your identity",
            "Your account will be suspended",
            f"Case #{rng.randint(10**5, 10**6)}: account on hold",
        ]
    )
    body = (
        f"We are writing to let you know that {what}. For your protection we have "
        f"temporarily restricted access to your {brand} account.\n"
        f"Please log in and confirm your card and billing details {rng.choice(_DEADLINE)} "
        f"to restore full access: {url}\n"
        f"If we do not hear from you, your account will be permanently suspended."
    )
    return brand, subject, body


def _mailbox(rng: random.Random) -> tuple[str, str, str]:
    brand = rng.choice(_MAILBOX)
    url = _url(rng, brand)
    used = rng.randint(95, 99)
    what = rng.choice(
        [
            f"Your mailbox has reached {used}% of its storage quota and incoming messages are "
            f"being held",
            "Your e-mail password is due to expire and your account will be deactivated",
            f"{rng.randint(3, 17)} incoming messages were blocked and are pending delivery",
            "We are upgrading all mailboxes and yours has not been validated",
        ]
    )
    subject = rng.choice(
        [
            "Mailbox storage full: action required",
            "Password expiration notice",
            f"You have {rng.randint(3, 17)} pending messages",
            "Email account validation",
            "Re-validate your mailbox now",
        ]
    )
    body = (
        f"{what}.\nTo keep your account active, sign in with your current e-mail password "
        f"{rng.choice(_DEADLINE)}: {url}\n"
        f"Accounts that are not validated will lose all messages."
    )
    return brand, subject, body


def _document(rng: random.Random) -> tuple[str, str, str]:
    brand = rng.choice(_DOCS)
    url = _url(rng, brand)
    name = rng.choice(
        [
            "Invoice_",
            "Remittance_Advice_",
            "Contract_",
            "Payment_Copy_",
            "Voicemail_",
            "Purchase_Order_",
            "Statement_",
            "Bonus_Schedule_",
        ]
    )
    name += f"{rng.randint(1000, 99999)}.{rng.choice(['pdf', 'docx', 'xlsx', 'wav', 'html'])}"
    subject = rng.choice(
        [
            f"You have received a secure document: {name}",
            f"{brand}: new file shared with you",
            f"Please review and complete: {name}",
            "New voice message received",
            f"Fwd: overdue invoice {name}",
        ]
    )
    body = (
        f"A document has been shared with you via {brand}.\n\nFile: {name}\n"
        f"To view the document, verify your e-mail account by signing in with your e-mail "
        f"address and password: {url}\n"
        f"The link will expire {rng.choice(_DEADLINE)}."
    )
    return brand, subject, body


def _state(rng: random.Random) -> tuple[str, str, str]:
    brand = rng.choice(_STATE)
    url = _url(rng, brand)
    amount = f"{rng.choice(['$', '£', '€'])}{rng.randint(2, 990)}.{rng.randint(10, 99)}"
    what = rng.choice(
        [
            f"you are eligible for a tax refund of {amount}",
            f"you have an unpaid toll balance of {amount}",
            "your benefit payments have been suspended pending verification",
            f"a penalty of {amount} will be applied to your record",
        ]
    )
    subject = rng.choice(
        [
            "Refund notification",
            "Final notice: outstanding balance",
            "Important: verify your identity",
            f"Your {brand} case {rng.randint(10**6, 10**7)}",
            "Payment overdue",
        ]
    )
    body = (
        f"Our records show that {what}.\nTo process this, complete the secure form with your "
        f"personal and bank details {rng.choice(_DEADLINE)}: {url}\n"
        f"Failure to respond may result in additional fees or legal action.\n{brand}"
    )
    return brand, subject, body


def _wallet(rng: random.Random) -> tuple[str, str, str]:
    brand = rng.choice(_WALLETS)
    url = _url(rng, brand)
    what = rng.choice(
        [
            f"a withdrawal of {rng.randint(1, 9)}.{rng.randint(10, 99)} ETH was requested",
            "your wallet must be re-synchronised after our security upgrade",
            "your account has been flagged for compliance review",
            "a login from a new IP address was detected",
        ]
    )
    subject = rng.choice(
        [
            f"{brand}: withdrawal request pending",
            "Security alert: verify your wallet",
            "Urgent: account compliance verification",
            f"{brand} wallet suspension notice",
        ]
    )
    body = (
        f"We have detected that {what}. If this was not you, confirm your wallet by "
        f"entering your recovery phrase {rng.choice(_DEADLINE)}: {url}\n"
        f"Unverified wallets will be frozen and the funds held."
    )
    return brand, subject, body


def _boss(rng: random.Random) -> tuple[str, str, str]:
    """Gift-card and wire fraud from "the boss": no link needed, only a reply."""
    first, last = rng.choice(common.FIRST), rng.choice(common.LAST)
    ask = rng.choice(
        [
            f"I need you to purchase {rng.randint(4, 10)} gift cards of $100 each for a client. "
            "Scratch the back and send me pictures of the codes",
            "I need you to process an urgent wire transfer to a new supplier today. I will send "
            "the bank details",
            "I need a quick favour. Are you available? I am in a meeting and can only text",
            "Please update my direct deposit to my new bank account before this payroll runs",
        ]
    )
    subject = rng.choice(
        ["Quick request", "Urgent", "Are you at your desk?", "Confidential", "Task for you"]
    )
    body = f"{ask}. Keep this between us for now.\n\nSent from my iPhone\n{first} {last}, CEO"
    return f"{first} {last}", subject, body


LURES: tuple[Lure, ...] = (_parcel, _billing, _mailbox, _document, _state, _wallet, _boss)


def _message(rng: random.Random, i: int) -> bytes:
    name, address = common.person(rng)
    lure = LURES[i % len(LURES)]
    brand, subject, body = lure(rng)
    boss = lure is _boss
    greetings = ["Hi {first},", "{first},", "Hello {first},"] if boss else _GREETING
    greeting = rng.choice(greetings).format(first=name.split()[0], address=address)
    body = f"{greeting}\n\n{body}" if boss else f"{greeting}\n\n{body}\n\n{rng.choice(_CLOSING)}"
    if not boss and rng.random() < 0.5:
        body += f"\n(c) {brand}. All rights reserved."
    headers = {
        "From": (
            _sender(rng, brand)
            if not boss
            else (f"{brand} <{_slug(brand)}.{rng.randint(1, 99)}@{rng.choice(_FREE)}>")
        ),
        "To": f"{name} <{address}>",
        "Subject": subject,
        "Date": common.date(rng, 2019, 4_000_000),
        "Message-ID": common.message_id(rng, _FREE),  # a free-mail host, drawn after the id
    }
    return common.rfc822(headers, body, html=rng.random() < 0.5, rng=rng)


def items(count: int = COUNT, seed: int = SEED) -> Iterator[MailItem]:
    return common.generate(GROUP, LABEL, _message, count, seed)


GENERATOR = common.Generator(GROUP, LABEL, COUNT, items)
