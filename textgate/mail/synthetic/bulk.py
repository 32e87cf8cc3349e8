"""Subscribed bulk mail, generated: legitimate newsletters, alerts and promotions.

The corpus's ham is people writing to people (Enron), mailing lists and one university mailbox
(TREC 2007). The only legitimate *bulk* mail in it, the alerts and newsletters that mailbox
subscribed to, sits in one source group; held out, much of it scored as spam
(leave-one-source-out; docs/email-model.md, "Training", has the numbers): a model that has seen
no legitimate bulk mail learns "sent to many, with links and an unsubscribe footer" means spam,
and a user's inbox is full of such mail. ``modern`` covers what a person triggers (orders,
receipts, account notices); this module writes what a person subscribes to: news and topic
alerts, weather forecasts, market and portfolio notices, sports and forum digests, store and
brand promotions, and organisation newsletters, each a real RFC 822 message (plain or HTML with
the navigation bar and footer such mail carries), links on the sender's domain.

Senders are deliberately not the ones in the corpus (no CNN, CBS, AccuWeather or Netflix):
the point is the genre, not those senders. Seeded: the same messages on every build.
Training rows only (group ``synthetic-bulk/ham``, see ``data.table.TRAIN_ONLY_PREFIX``);
``--exclude-source synthetic-bulk`` builds without them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from textgate.mail.containers import MailItem
from textgate.mail.synthetic import common

SOURCE = "synthetic-bulk"
LABEL = "ham"
GROUP = f"{SOURCE}/{LABEL}"
COUNT = 600
SEED = 20261203

Kind = Callable[[random.Random], tuple[str, str, str, str]]  # sender, domain, subject, body

_OUTLETS = [
    ("Reuters", "reuters.com"),
    ("BBC News", "bbc.co.uk"),
    ("The Guardian", "theguardian.com"),
    ("NPR", "npr.org"),
    ("Deutsche Welle", "dw.com"),
    ("The Times of India", "timesofindia.com"),
    ("ABC News Australia", "abc.net.au"),
    ("The Irish Times", "irishtimes.com"),
    ("Toronto Star", "thestar.com"),
    ("The Seattle Times", "seattletimes.com"),
]
_SECTIONS = ["World", "Politics", "Business", "Science", "Health", "Sport", "Culture", "Opinion"]
_WHO = [
    "The prime minister",
    "The city council",
    "The central bank",
    "A federal judge",
    "Health officials",
    "The opposition leader",
    "Researchers at the university",
    "The transport minister",
    "Union leaders",
    "The European Commission",
]
_DID = [
    "announced a review of",
    "voted to delay",
    "warned about rising costs of",
    "approved new funding for",
    "rejected a proposal on",
    "published a report on",
    "opened an inquiry into",
    "agreed a compromise over",
]
_WHAT = [
    "the regional rail network",
    "school meal programmes",
    "interest rates",
    "wildfire prevention",
    "housing construction",
    "the water supply",
    "hospital waiting lists",
    "offshore wind farms",
    "the budget for next year",
    "data privacy rules",
]
_WHEN = ["on Tuesday", "late on Monday", "this morning", "after a long debate", "on Friday"]
_CITIES = ["Leeds", "Porto", "Graz", "Halifax", "Adelaide", "Utrecht", "Boulder", "Pune", "Cork"]
_SKY = ["Sunny", "Partly cloudy", "Light rain", "Showers", "Overcast", "Fog early", "Windy"]
_TICKERS = [
    ("Siemens AG", "SIE"),
    ("Unilever PLC", "ULVR"),
    ("Intel Corp.", "INTC"),
    ("Toyota Motor", "TM"),
    ("Nestle SA", "NESN"),
    ("Ford Motor Co.", "F"),
    ("Cisco Systems", "CSCO"),
    ("Vanguard Total Market ETF", "VTI"),
]
_BROKERS = [("Fidelity", "fidelity.com"), ("Morningstar", "morningstar.com")]
_TEAMS = ["Rovers", "United", "City", "Wanderers", "Athletic", "Falcons", "Tigers", "Rangers"]
_LEAGUES = ["Premier Division", "Western Conference", "Cup quarter-final", "League One"]
_STORES = [
    ("REI", "rei.com", ["rain shells", "hiking boots", "camping stoves"]),
    ("Crate & Barrel", "crateandbarrel.com", ["dinnerware", "linen bedding", "glassware"]),
    ("Lush", "lush.com", ["bath bombs", "shampoo bars", "face masks"]),
    ("Waterstones", "waterstones.com", ["new fiction", "signed editions", "cookbooks"]),
    ("Patagonia", "patagonia.com", ["fleece jackets", "base layers", "trail shorts"]),
    ("Muji", "muji.com", ["storage boxes", "notebooks", "aroma diffusers"]),
]
_ORGS = [
    ("Department of Physics", "physics.example.edu"),
    ("Riverside Community Garden", "riversidegarden.org"),
    ("City Library", "library.example.org"),
    ("Alumni Association", "alumni.example.edu"),
    ("Parent-Teacher Association", "pta.example.org"),
    ("Open Source Meetup", "meetup.com"),
]
_EVENTS = [
    "Seminar: quantum materials at low temperature",
    "Volunteer work day and potluck",
    "Book club: this month's title",
    "Spring reunion dinner",
    "Fundraising bake sale",
    "Talk: maintaining a Python package",
    "Plant swap in the main hall",
    "Career panel for graduating students",
]
_FORUMS = [
    ("Stack Exchange", "stackexchange.com"),
    ("Discourse digest", "discourse.example.org"),
    ("Hacker News Digest", "hndigest.example.com"),
]
_QUESTIONS = [
    "How do I undo the last commit without losing changes?",
    "Why does my sourdough collapse in the oven?",
    "Best way to parse dates with time zones in Python",
    "Is it safe to run fsck on a mounted filesystem?",
    "Recommendations for a beginner road bike",
    "What does this compiler warning actually mean?",
    "How to winter-proof a balcony garden",
    "Postgres query slow after upgrade",
]


def _footer(sender: str, domain: str, rng: random.Random) -> str:
    why = rng.choice(
        [
            f"You are receiving this e-mail because you signed up for {sender} alerts.",
            f"You subscribed to this newsletter at {domain}.",
            f"This message was sent to you as a registered user of {domain}.",
        ]
    )
    return (
        f"\n\n{why} Manage your subscriptions: https://www.{domain}/preferences | "
        f"Unsubscribe: https://www.{domain}/unsubscribe | Privacy policy: "
        f"https://www.{domain}/privacy\n(c) {sender}. All rights reserved."
    )


def _sentence(rng: random.Random) -> str:
    return f"{rng.choice(_WHO)} {rng.choice(_DID)} {rng.choice(_WHAT)} {rng.choice(_WHEN)}."


def _news(rng: random.Random) -> tuple[str, str, str, str]:
    sender, domain = rng.choice(_OUTLETS)
    head = _sentence(rng)
    nav = " | ".join(["Home", *rng.sample(_SECTIONS, 5), "Video", "Podcasts"])
    kind = rng.choice(["Breaking news", "News alert", "Your morning briefing", "Top stories"])
    more = " ".join(_sentence(rng) for _ in range(rng.randint(2, 4)))
    subject = rng.choice([f"{kind}: {head[:-1]}", f"{sender} {kind.lower()}", head[:-1]])
    body = (
        f"{sender} {kind}\n{nav}\n\n{head} {more}\n\nRead the full story at "
        f"https://www.{domain}/{rng.choice(_SECTIONS).lower()}/{rng.randint(10**6, 10**7)}"
    )
    return sender, domain, subject, body


def _weather(rng: random.Random) -> tuple[str, str, str, str]:
    sender, domain = rng.choice([("MetService", "metservice.example"), ("WeatherPro", "wpro.com")])
    city = rng.choice(_CITIES)
    days = ["Today", "Tonight", "Tomorrow", "Thursday", "Friday", "Saturday", "Sunday"]
    lows = [rng.randint(-9, 18) for _ in days]
    lines = "\n".join(
        f"{d}: {rng.choice(_SKY)}, high {low + rng.randint(2, 12)}°C, low {low}°C, "
        f"wind {rng.randint(5, 40)} km/h"
        for d, low in zip(days[: rng.randint(4, 7)], lows, strict=False)
    )
    subject = rng.choice([f"Your forecast for {city}", f"{city}: 7-day outlook", "Weather alert"])
    body = f"{sender} daily forecast for {city}\nHourly | 7-day | Radar | Maps\n\n{lines}"
    return sender, domain, subject, body


def _market(rng: random.Random) -> tuple[str, str, str, str]:
    sender, domain = rng.choice(_BROKERS)
    rows = rng.sample(_TICKERS, rng.randint(1, 4))
    lines = []
    for name, sym in rows:
        price, move = rng.uniform(8, 400), rng.uniform(-4, 4)
        lines.append(
            f"{name} ({sym}) last {price:.2f} change {move:+.2f}% open {price * 0.99:.2f} "
            f"volume {rng.randint(10**5, 10**8):,}"
        )
    subject = rng.choice(
        ["Your watchlist at the close", f"Price alert: {rows[0][1]}", "Your daily market summary"]
    )
    body = (
        f"{sender} market summary\nWatchlist | Portfolio | Research | Markets\n\nAt the close:\n"
        + "\n".join(lines)
        + f"\n\nYou set these alerts in your {sender} account. Quotes delayed 15 minutes. "
        "Past performance is no guarantee of future results."
    )
    return sender, domain, subject, body


def _sports(rng: random.Random) -> tuple[str, str, str, str]:
    sender, domain = rng.choice([("The Athletic", "theathletic.com"), ("SportsDesk", "sd.com")])
    games = []
    for _ in range(rng.randint(2, 4)):
        a, b = rng.sample(_TEAMS, 2)
        games.append(f"{a} {rng.randint(0, 5)}, {b} {rng.randint(0, 5)} ({rng.choice(_LEAGUES)})")
    subject = rng.choice(["Last night's results", "Your teams today", "The daily sports digest"])
    body = (
        f"{sender} daily digest\nScores | Schedules | Standings | Fantasy\n\n"
        + "\n".join(games)
        + f'\n\n{rng.choice(_TEAMS)} coach on the injury list: "We will see on Friday."'
    )
    return sender, domain, subject, body


def _promotion(rng: random.Random) -> tuple[str, str, str, str]:
    sender, domain, goods = rng.choice(_STORES)
    off, item = rng.choice([10, 15, 20, 25, 30]), rng.choice(goods)
    subject = rng.choice(
        [f"{off}% off {item} this weekend", f"New in: {item}", f"Members' sale: {item}"]
    )
    body = (
        f"View this e-mail in your browser\n{sender}\nNew arrivals | Sale | Stores | Members\n\n"
        f"Members save {off}% on {item} until Sunday. Shop online at https://www.{domain}/sale "
        f"or in your local store. Free returns within 30 days. Offer excludes gift cards."
    )
    return sender, domain, subject, body


def _organisation(rng: random.Random) -> tuple[str, str, str, str]:
    sender, domain = rng.choice(_ORGS)
    events = rng.sample(_EVENTS, 3)
    month = rng.choice(["March", "April", "May", "September", "October", "November"])
    lines = "\n".join(
        f"- {e}, {month} {rng.randint(1, 28)}, {rng.randint(9, 19)}:00" for e in events
    )
    subject = rng.choice([f"{sender} newsletter, {month}", f"Upcoming: {events[0]}", "This month"])
    body = (
        f"{sender} - {month} newsletter\n\nDear members,\n\nHere is what is coming up:\n{lines}"
        f"\n\nDetails and sign-up at https://{domain}/events. Thanks to everyone who helped "
        "last month."
    )
    return sender, domain, subject, body


def _digest(rng: random.Random) -> tuple[str, str, str, str]:
    sender, domain = rng.choice(_FORUMS)
    picks = rng.sample(_QUESTIONS, 4)
    lines = "\n".join(f"{q} ({rng.randint(1, 40)} answers)" for q in picks)
    subject = rng.choice(["Your weekly digest", f"Top questions this week: {picks[0]}"])
    body = f"{sender}: the top posts this week\n\n{lines}\n\nSee more at https://{domain}/top"
    return sender, domain, subject, body


KINDS: tuple[Kind, ...] = (
    _news,
    _weather,
    _market,
    _sports,
    _promotion,
    _organisation,
    _digest,
)


def _message(rng: random.Random, i: int) -> bytes:
    sender, domain, subject, body = KINDS[i % len(KINDS)](rng)
    body += _footer(sender, domain, rng)
    headers = {
        "From": f"{sender} <{rng.choice(['news', 'alerts', 'newsletter', 'info'])}@{domain}>",
        "To": f"subscriber{rng.randint(1, 9999)}@example.net",
        "Subject": subject,
        "Date": common.date(rng, 2001, 13_000_000),
        "Message-ID": common.message_id(rng, domain),
        "List-Unsubscribe": f"<https://www.{domain}/unsubscribe>",
    }
    # newsletters are often HTML only
    return common.rfc822(headers, body, html=rng.random() < 0.5, rng=rng)


def items(count: int = COUNT, seed: int = SEED) -> Iterator[MailItem]:
    return common.generate(GROUP, LABEL, _message, count, seed)


GENERATOR = common.Generator(GROUP, LABEL, COUNT, items)
